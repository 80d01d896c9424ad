"""The plugin entry point: contributes the breadth-depth-navigator strategy."""

from __future__ import annotations

from collections.abc import Sequence

from contextfuse.plugin import hookimpl
from contextfuse_breadth_depth_navigator.strategy import BreadthDepthNavigator


@hookimpl
def contextfuse_strategies() -> Sequence[BreadthDepthNavigator]:
    return [BreadthDepthNavigator()]
