"""contextfuse-arce: text, vector and graph retrieval fused by rank."""

from contextfuse_arce.strategy import ArceStrategy

__all__ = ["ArceStrategy"]
