"""The plugin entry point: the strategy and the index contributor computing its vectors."""

from __future__ import annotations

from collections.abc import Sequence

from contextfuse.plugin import hookimpl
from contextfuse_semantic_embedding.strategy import (
    SemanticEmbeddingStrategy,
    SemanticIndexContributor,
)


@hookimpl
def contextfuse_strategies() -> Sequence[SemanticEmbeddingStrategy]:
    return [SemanticEmbeddingStrategy()]


@hookimpl
def contextfuse_index_contributors() -> Sequence[SemanticIndexContributor]:
    return [SemanticIndexContributor()]
