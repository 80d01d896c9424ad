"""``NodeScoringStrategy``: the base of ranking strategies that score knowledge-base nodes.

A subclass gives each node a score (``scores``), or fuses several ranked lists into scores
and keeps the lists (``scored_signals``); ``rank`` turns them into the strategy's ranking,
each candidate saying which lists found it and at what rank. The pipeline does the rest:
rendering, depths, packing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from contextfuse.backends import BackendSet
from contextfuse.models import ContextRequest, PlanContext
from contextfuse.ranked import Ranked

__all__ = ["NodeScoringStrategy", "ranking_of"]


def ranking_of(
    scores: Mapping[str, float], lists: Mapping[str, Sequence[str]] | None = None
) -> list[Ranked]:
    """Candidates best first (score desc, then URI), each with its rank in every list."""
    # Each URI's first rank in each list, the lists in their order: one pass over the lists
    # rather than a look-up in every list for every candidate.
    found: dict[str, dict[str, int]] = {}
    for name, ranking in (lists or {}).items():
        first = dict(zip(reversed(ranking), range(len(ranking), 0, -1), strict=True))
        for uri, rank in first.items():
            if uri in found:
                found[uri][name] = rank
            else:
                found[uri] = {name: rank}
    ordered = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return [Ranked(uri, score, found.get(uri)) for uri, score in ordered]


class NodeScoringStrategy:
    """Base of strategies that score knowledge-base nodes (a ``RankingStrategy``).

    Subclasses set ``name`` and ``capabilities`` and implement ``can_handle``, ``scores``
    (node URI -> score, higher is better) and ``explain``. A strategy that fuses several
    ranked lists overrides ``scored_signals`` instead, so each candidate says which list
    found it (``--explain`` shows ``text #3, vector #12``).
    """

    name: str

    def scores(self, request: ContextRequest, backends: BackendSet) -> dict[str, float]:
        """Node URI -> score (higher is better) for ``request``."""
        raise NotImplementedError

    def scored_signals(
        self, request: ContextRequest, backends: BackendSet
    ) -> tuple[dict[str, float], dict[str, list[str]]]:
        """The scores and the ranked lists (best first) they came from; default: no lists."""
        return self.scores(request, backends), {}

    def rank(
        self, request: ContextRequest, backends: BackendSet, plan_context: PlanContext
    ) -> list[Ranked]:
        """The scored nodes, best first."""
        scores, lists = self.scored_signals(request, backends)
        return ranking_of(scores, lists)
