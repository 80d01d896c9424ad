"""contextfuse-semantic-embedding: vector similarity with an offline static embedding model."""

from contextfuse_semantic_embedding.embedders import (
    MiniLMEmbedder,
    OpenAICompatibleEmbedder,
    StaticEmbedder,
    load_embedder,
)
from contextfuse_semantic_embedding.strategy import (
    SemanticEmbeddingStrategy,
    SemanticIndexContributor,
)

__all__ = [
    "MiniLMEmbedder",
    "OpenAICompatibleEmbedder",
    "SemanticEmbeddingStrategy",
    "SemanticIndexContributor",
    "StaticEmbedder",
    "load_embedder",
]
