"""Refill: budget that several strategies left unspent goes to the best one's next picks.

When several strategies run, each fills only its share of the budget, and deduplication
removes what they agree on; the fused payload can then hold less than the best strategy
alone would have shown. Refill asks the best strategy that succeeded for its payload at the
whole budget and adds, in its order, the fragments that are not shown yet (by node, and by
lines of the same file already shown at full source) and still fit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from contextfuse.components.protocols import ScoredFragment
from contextfuse.models import ContextFragment, DetailDepth

__all__ = ["refill"]

_LOCATION = re.compile(r"^L(\d+)-L(\d+)$")


def _span(fragment: ContextFragment) -> tuple[int, int] | None:
    match = _LOCATION.match(fragment.provenance.location or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _shown_spans(fragments: Iterable[ContextFragment]) -> dict[str, list[tuple[int, int]]]:
    spans: dict[str, list[tuple[int, int]]] = {}
    for fragment in fragments:
        span = _span(fragment)
        if span is not None and fragment.detail_depth == DetailDepth.FULL_SOURCE:
            spans.setdefault(fragment.provenance.resource_uri, []).append(span)
    return spans


def refill(
    chosen: Sequence[ScoredFragment],
    candidates: Sequence[ContextFragment],
    room: int,
    strategy: str,
) -> list[ScoredFragment]:
    """Candidates (in their strategy's order) that add something new and fit in ``room``.

    Each comes scored just below the weakest fragment already chosen, so the fused order
    stays ahead of it, with ``components = {"refill": 1.0}``.
    """
    shown = {s.fragment.uko_node for s in chosen}
    spans = _shown_spans(s.fragment for s in chosen)
    floor = min((s.score for s in chosen), default=1.0)
    added: list[ScoredFragment] = []
    for fragment in candidates:
        if room <= 0:
            break
        if fragment.uko_node in shown or fragment.token_count > room:
            continue
        span = _span(fragment)
        resource = fragment.provenance.resource_uri
        if span is not None and any(
            not (span[1] < a or b < span[0]) for a, b in spans.get(resource, ())
        ):
            continue
        score = floor * (1.0 - 1e-3 * (len(added) + 1))
        added.append(ScoredFragment(fragment, score, {"refill": 1.0}, (strategy,)))
        shown.add(fragment.uko_node)
        if span is not None and fragment.detail_depth == DetailDepth.FULL_SOURCE:
            spans.setdefault(resource, []).append(span)
        room -= fragment.token_count
    return added
