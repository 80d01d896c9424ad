"""The semantic-embedding strategy and the index contributor that computes its vectors."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from contextfuse.plugin import (
    BackendSet,
    ContextRequest,
    NodeScoringStrategy,
    StrategyCapabilities,
)
from contextfuse_semantic_embedding.embedders import Embedder, StaticEmbedder, load_embedder

__all__ = ["SemanticEmbeddingStrategy", "SemanticIndexContributor", "shared_embedder"]

#: Which embedder to use: "static" (default), "minilm" or "openai:<base_url>#<model>".
EMBEDDER_ENV = "CONTEXTFUSE_EMBEDDER"
#: Node kinds that get a vector: code symbols (values bound to names and blocks of a large
#: file's top-level code included), document sections and files.
EMBEDDED_KINDS = (
    "function",
    "method",
    "class",
    "section",
    "file",
    "module",
    "variable",
    "block",
    "macro",
)
BATCH = 512
NEIGHBOURS = 200

_embedders: dict[str, Embedder] = {}
_embedders_lock = threading.Lock()


def shared_embedder(spec: str | None = None) -> Embedder:
    """One embedder per spec per process: loading a model is the slow part."""
    key = spec if spec is not None else os.environ.get(EMBEDDER_ENV, "static")
    with _embedders_lock:
        if key not in _embedders:
            _embedders[key] = load_embedder(key)
        return _embedders[key]


def _embedding_text(uri: str, text: str) -> str:
    # The path and symbol name carry meaning the body may not repeat.
    where = uri.split("://", 1)[-1].split("/", 1)[-1].replace("#", " ")
    return f"{where}\n{text}"


class _Vectorizer:
    """The contributor's embedder as the indexer's worker processes run it, file by file
    as they parse (``contextfuse.kb.vectorizers``)."""

    kinds = EMBEDDED_KINDS
    batch = BATCH  # a content's vector is the one ``contribute`` would store

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.model = embedder.name

    def vectors(self, nodes: Sequence[tuple[str, str]]) -> np.ndarray:
        return self.embedder.embed([_embedding_text(uri, text) for uri, text in nodes])


class SemanticIndexContributor:
    """Embeds every node whose content has no cached vector (cache key: content hash)."""

    name = "semantic-embedding"

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = shared_embedder()
        return self._embedder

    def vectorizer(self) -> _Vectorizer | None:
        """The static embedder runs in the indexer's workers as they parse: it loads in
        milliseconds (a mapped table) and embeds each text on its own. The others embed
        after the parse (a transformer in every worker would cost its memory twice)."""
        if not isinstance(self.embedder, StaticEmbedder):
            return None
        return _Vectorizer(self.embedder)

    def contribute(self, session: Any) -> dict[str, int]:
        """Compute and store the missing vectors; returns how many were stored in this run
        (with those the indexer stored while it parsed the files, ``session.vectorized``).

        Node texts are read a batch at a time, so memory holds one batch, not the index.
        """
        vector = session.backends.vector
        model = self.embedder.name
        stored = int(getattr(session, "vectorized", {}).get(model, 0))
        # A store's session may offer the one-query check; without it, every text is read.
        count = getattr(session, "count_without_vectors", None)
        expected = count(model, EMBEDDED_KINDS) if count is not None else None
        if expected == 0:
            return {"embedded": stored}
        done = {"embedded": stored, "nodes": 0}  # vectors stored, nodes without one seen
        batch: dict[str, tuple[str, str]] = {}

        def flush() -> None:
            missing = vector.missing(model, {uri: digest for uri, (digest, _) in batch.items()})
            if missing:
                # Nodes of one content share a vector: the batch's last one is stored.
                texts = [_embedding_text(u, batch[u][1]) for u in missing]
                vector.upsert(
                    model, missing, [batch[u][0] for u in missing], self.embedder.embed(texts)
                )
            done["embedded"] += len({batch[u][0] for u in missing})
            done["nodes"] += len(missing)
            total = expected if expected is not None else done["nodes"]
            session.progress("embedding", done["nodes"], max(total, done["nodes"]))
            batch.clear()

        for uri, digest, text in session.iter_node_texts(depth=9, kinds=EMBEDDED_KINDS):
            batch[uri] = (digest, text)
            if len(batch) == BATCH:
                flush()
        if batch:
            flush()
        return {"embedded": done["embedded"]}


class SemanticEmbeddingStrategy(NodeScoringStrategy):
    """Nearest nodes to the request by cosine similarity of static embeddings."""

    name = "semantic-embedding"
    capabilities = StrategyCapabilities(
        uses_vector=True,
        resource_types=("code", "docs", "text"),
        uko_levels=(0, 2, 4, 9),
        quality_score=0.6,
    )

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = shared_embedder()
        return self._embedder

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        if backends.vector is None or backends.nodes is None or not request.query.strip():
            return 0.0
        return 0.6 if self.embedder.name in backends.vector.models() else 0.0

    def scores(self, request: ContextRequest, backends: BackendSet) -> dict[str, float]:
        """Node URI -> cosine similarity to the query (only positive similarities)."""
        query = self.embedder.embed([request.query])[0]
        hits = backends.vector.search(self.embedder.name, query, limit=NEIGHBOURS)
        return {hit.uri: hit.score for hit in hits if hit.score > 0}

    def explain(self) -> str:
        return (
            f"Cosine similarity between the request and every node's embedding "
            f"({self.embedder.name})."
        )
