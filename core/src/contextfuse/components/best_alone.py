"""Fusion that never loses to its best part: the best strategy's own payload as the floor.

When several strategies run, each fills only its share of the budget, and deduplication
removes what they agree on; the fused payload could then hold less than the best strategy
alone would have shown. So the best strategy that ran is asked for its payload at the whole
budget, less what the fused payload holds of kinds only the other strategies serve (a plan's
decisions, commits), and every fragment of it is kept. A fused fragment of the same node
takes its place with its fused score, so agreement between strategies still counts; the
budget left goes to the other fused fragments, best first, that add something new (another
node, or lines of a file not shown at full source yet) and fit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from contextfuse.components.protocols import ScoredFragment
from contextfuse.models import ContextFragment, DetailDepth

__all__ = ["complementary", "keep_best"]

_LOCATION = re.compile(r"^L(\d+)-L(\d+)$")


def _span(fragment: ContextFragment) -> tuple[int, int] | None:
    match = _LOCATION.match(fragment.provenance.location or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


class _Shown:
    """The nodes and full-source lines a payload shows already."""

    def __init__(self, fragments: Iterable[ContextFragment]) -> None:
        self.nodes: set[str] = set()
        self.spans: dict[str, list[tuple[int, int]]] = {}
        for fragment in fragments:
            self.add(fragment)

    def add(self, fragment: ContextFragment) -> None:
        self.nodes.add(fragment.uko_node)
        span = _span(fragment)
        if span is not None and fragment.detail_depth == DetailDepth.FULL_SOURCE:
            self.spans.setdefault(fragment.provenance.resource_uri, []).append(span)

    def adds_nothing(self, fragment: ContextFragment) -> bool:
        if fragment.uko_node in self.nodes:
            return True
        span = _span(fragment)
        return span is not None and any(
            not (span[1] < a or b < span[0])
            for a, b in self.spans.get(fragment.provenance.resource_uri, ())
        )


def complementary(fused: Sequence[ScoredFragment], kinds: Iterable[str]) -> list[ScoredFragment]:
    """The fused fragments whose resource type is one of ``kinds`` (served by others only)."""
    wanted = frozenset(kinds)
    return [s for s in fused if s.fragment.provenance.resource_type in wanted]


def keep_best(
    fused: Sequence[ScoredFragment],
    alone: Sequence[ContextFragment],
    kept: Sequence[ScoredFragment],
    available: int,
    strategy: str,
) -> list[ScoredFragment]:
    """The fused payload rebuilt on ``alone``, the best strategy's payload, within budget.

    ``kept`` (complementary fragments) stay first and ``alone`` was assembled for the budget
    they leave. Each fragment of ``alone`` is kept: as the fused fragment of the same node
    and depth when there is one (its score and components), otherwise scored as the fused
    fragment at the same rank with ``components = {"best_alone": 1.0}``. The rest of
    ``fused`` then fills what is left, best first. Never more than ``available`` tokens.
    """
    result = list(kept)
    shown = _Shown(s.fragment for s in result)
    used = sum(s.token_count for s in result)
    by_node = {s.fragment.uko_node: s for s in fused}
    scores = sorted((s.score for s in fused), reverse=True) or [1.0]
    for rank, fragment in enumerate(alone):
        if shown.adds_nothing(fragment):
            continue
        match = by_node.get(fragment.uko_node)
        if match is not None and match.fragment.detail_depth == fragment.detail_depth:
            chosen = match
        else:
            score = scores[min(rank, len(scores) - 1)]
            chosen = ScoredFragment(fragment, score, {"best_alone": 1.0}, (strategy,))
        if used + chosen.token_count > available:
            continue
        result.append(chosen)
        shown.add(chosen.fragment)
        used += chosen.token_count
    for scored in sorted(fused, key=lambda s: (-s.score, s.fragment.uko_node)):
        if used + scored.token_count > available or shown.adds_nothing(scored.fragment):
            continue
        result.append(scored)
        shown.add(scored.fragment)
        used += scored.token_count
    return result
