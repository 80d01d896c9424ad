"""The plugin entry point: contributes the arce strategy."""

from __future__ import annotations

from collections.abc import Sequence

from contextfuse.plugin import hookimpl
from contextfuse_arce.strategy import ArceStrategy


@hookimpl
def contextfuse_strategies() -> Sequence[ArceStrategy]:
    return [ArceStrategy()]
