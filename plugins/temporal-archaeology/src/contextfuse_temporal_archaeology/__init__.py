"""contextfuse-temporal-archaeology: commits that match a request and the code they touched."""

from contextfuse_temporal_archaeology.strategy import TemporalArchaeologyStrategy

__all__ = ["TemporalArchaeologyStrategy"]
