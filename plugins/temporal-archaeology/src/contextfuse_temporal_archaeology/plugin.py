"""The plugin entry point: contributes the temporal-archaeology strategy."""

from __future__ import annotations

from collections.abc import Sequence

from contextfuse.plugin import hookimpl
from contextfuse_temporal_archaeology.strategy import TemporalArchaeologyStrategy


@hookimpl
def contextfuse_strategies() -> Sequence[TemporalArchaeologyStrategy]:
    return [TemporalArchaeologyStrategy()]
