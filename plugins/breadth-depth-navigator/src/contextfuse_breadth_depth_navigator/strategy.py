"""The breadth-depth-navigator: personalized PageRank over the code graph from the request.

Seeds come from what the request names, its best full-text hits and (when the index holds
embeddings) its nearest nodes. A personalized PageRank from the seeds ranks the graph's nodes
by how closely they are tied to them; the graph backend weighs each edge down by the degree
of the node it leads to, so the walk follows rare, specific names. The best-ranked nodes are
the focus; the many related nodes behind them are the breadth, which the pipeline shows as a
map of their files.
"""

from __future__ import annotations

from typing import Any

import attrs

from contextfuse.plugin import (
    BackendSet,
    ContextRequest,
    NodeScoringStrategy,
    StrategyCapabilities,
    reciprocal_rank_fusion,
    weigh_by_prior,
)
from contextfuse_semantic_embedding.strategy import shared_embedder
from contextfuse_simple_keyword.query import specific_mentions

__all__ = ["BreadthDepthNavigator", "NavigatorSettings"]

_GRAPH_KINDS = ("calls", "references", "inherits", "imports", "contains")


@attrs.frozen
class NavigatorSettings:
    """How the seeds are chosen and how far the walk goes.

    :param seeds: how many seed nodes start the walk.
    :param walk: how many nodes the walk ranks.
    :param seed_share: how much a node's seed rank counts beside its walk rank.
    :param damping: the walk's damping factor (lower stays closer to the seeds).
    """

    seeds: int = 25
    walk: int = 400
    seed_share: float = 0.5
    damping: float = 0.7


class BreadthDepthNavigator(NodeScoringStrategy):
    """Graph-aware navigation: focus nodes at full source, related nodes as a map."""

    name = "breadth-depth-navigator"
    capabilities = StrategyCapabilities(
        uses_text=True,
        uses_graph=True,
        resource_types=("code", "docs", "text"),
        uko_levels=(0, 2, 4, 9),
        quality_score=0.85,
        supports_depth_breadth=True,
    )

    def __init__(self, settings: NavigatorSettings | None = None, embedder: Any = None) -> None:
        self.settings = settings or NavigatorSettings()
        self._embedder = embedder

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        if not backends.has("nodes", "text", "graph"):
            return 0.0
        return 0.85 if request.query.strip() or request.focus_nodes else 0.0

    def seeds(self, request: ContextRequest, backends: BackendSet) -> dict[str, list[str]]:
        """Ranked seed lists: mentions, text hits, nearest nodes, focus nodes."""
        n = self.settings.seeds
        lists: dict[str, list[str]] = {}
        query = request.query
        if query.strip():
            mentioned = specific_mentions(query, backends.nodes)
            lists["mentions"] = sorted(mentioned, key=lambda u: (-mentioned[u], u))[:n]
            lists["text"] = [h.uri for h in backends.text.search(query, limit=n)]
            lists["vector"] = self._nearest(query, backends)
        if request.focus_nodes:
            lists["focus"] = list(request.focus_nodes)
        return {name: ranking for name, ranking in lists.items() if ranking}

    def _nearest(self, query: str, backends: BackendSet) -> list[str]:
        if backends.vector is None:
            return []
        if self._embedder is None:
            self._embedder = shared_embedder()
        if self._embedder.name not in backends.vector.models():
            return []
        vector = self._embedder.embed([query])[0]
        hits = backends.vector.search(self._embedder.name, vector, limit=self.settings.seeds)
        return [h.uri for h in hits if h.score > 0]

    def navigate(
        self, request: ContextRequest, backends: BackendSet
    ) -> tuple[dict[str, float], dict[str, list[str]]]:
        """Node URI -> score from the seeds and the walk, and the ranked lists behind it."""
        settings = self.settings
        lists = self.seeds(request, backends)
        seeded = reciprocal_rank_fusion(lists, {"mentions": 2.0, "focus": 3.0})
        if not seeded:
            return {}, lists
        walk = backends.graph.personalized_pagerank(
            seeded, limit=settings.walk, kinds=_GRAPH_KINDS, damping=settings.damping
        )
        lists["walk"] = [h.uri for h in walk]
        seed_ranking = sorted(seeded, key=lambda u: (-seeded[u], u))
        scores = reciprocal_rank_fusion(
            {"seeds": seed_ranking, "walk": lists["walk"]},
            {"seeds": settings.seed_share, "walk": 1.0 - settings.seed_share},
        )
        return weigh_by_prior(scores, request.query, backends.nodes), lists

    def scores(self, request: ContextRequest, backends: BackendSet) -> dict[str, float]:
        """Node URI -> score: seed rank and walk rank fused, weighed by kind of node."""
        return self.navigate(request, backends)[0]

    def scored_signals(
        self, request: ContextRequest, backends: BackendSet
    ) -> tuple[dict[str, float], dict[str, list[str]]]:
        """The navigation's scores and its seed and walk lists."""
        return self.navigate(request, backends)

    def explain(self) -> str:
        return (
            "Seeds from the request (named files and symbols, full-text hits, nearest "
            "embeddings), personalized PageRank over imports, calls, references, inheritance "
            "and containment favouring specific names."
        )
