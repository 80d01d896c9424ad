"""The simple-keyword strategy: BM25 plus exact matches of what the request names."""

from __future__ import annotations

from contextfuse.plugin import (
    BackendSet,
    ContextRequest,
    NodeScoringStrategy,
    StrategyCapabilities,
)
from contextfuse_simple_keyword.query import PATH_WEIGHT, mention_scores, pattern_scores

__all__ = ["SimpleKeywordStrategy"]

TEXT_HITS = 300


class SimpleKeywordStrategy(NodeScoringStrategy):
    """BM25 full-text search plus exact identifiers, paths and ``/regex/`` patterns; the
    universal fallback."""

    name = "simple-keyword"
    capabilities = StrategyCapabilities(
        uses_text=True,
        resource_types=("code", "docs", "text"),
        uko_levels=(0, 2, 4, 9),
        quality_score=0.3,
    )

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        if backends.text is None or backends.nodes is None:
            return 0.0
        return 0.5 if request.query.strip() or request.focus_nodes else 0.0

    def scores(self, request: ContextRequest, backends: BackendSet) -> dict[str, float]:
        """Node URI -> score: normalised BM25 plus bonuses for exact mentions."""
        words, scores = pattern_scores(request.query, backends.text)
        hits = backends.text.search(words, limit=TEXT_HITS) if words else []
        if hits:
            best = max(h.score for h in hits) or 1.0
            for hit in hits:
                scores[hit.uri] = scores.get(hit.uri, 0.0) + hit.score / best
        for uri, bonus in mention_scores(words, backends.nodes).items():
            scores[uri] = scores.get(uri, 0.0) + bonus
        for focus in request.focus_nodes:
            scores[focus] = scores.get(focus, 0.0) + PATH_WEIGHT
        return scores

    def explain(self) -> str:
        return (
            "BM25 over code-aware terms plus exact matches of the file paths, dotted names and "
            "identifiers the request mentions, and a regular-expression search for each "
            "/pattern/ it holds."
        )
