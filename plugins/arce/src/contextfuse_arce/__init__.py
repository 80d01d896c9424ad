"""contextfuse-arce: text, vector and graph retrieval fused by rank."""

from contextfuse_arce.strategy import ArceStrategy, ArceWeights

__all__ = ["ArceStrategy", "ArceWeights"]
