"""Every strategy's relevance of a node found by several, recorded on its fragments.

Deduplication keeps one fragment of a node (the one of highest relevance, as the
specification asks); the scorer fuses the strategies' views of it. Coordination records each
finder's relevance under ``STRATEGY_RELEVANCE`` so the kept fragment carries them all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from contextfuse.models import ContextFragment

#: Metadata key: ``"<strategy>=<relevance>;..."`` for a node several strategies returned.
STRATEGY_RELEVANCE: Final = "strategy_relevance"


def record_strategy_relevance(fragments: Sequence[ContextFragment]) -> list[ContextFragment]:
    """``fragments`` with each multi-strategy node's relevances recorded on its fragments."""
    by_node: dict[str, dict[str, float]] = {}
    for f in fragments:
        name = f.metadata.get("strategy")
        if name is None:
            continue
        seen = by_node.setdefault(f.uko_node, {})
        seen[name] = max(f.relevance_score, seen.get(name, 0.0))
    shared = {
        node: ";".join(f"{name}={value!r}" for name, value in sorted(seen.items()))
        for node, seen in by_node.items()
        if len(seen) > 1
    }
    if not shared:
        return list(fragments)
    return [
        f.model_copy(update={"metadata": {**f.metadata, STRATEGY_RELEVANCE: shared[f.uko_node]}})
        if f.uko_node in shared
        else f
        for f in fragments
    ]


def parse_strategy_relevance(recorded: str) -> Mapping[str, float]:
    """strategy -> relevance, from a ``STRATEGY_RELEVANCE`` value (bad parts are skipped)."""
    out: dict[str, float] = {}
    for part in recorded.split(";"):
        name, _, value = part.rpartition("=")
        try:
            out[name] = float(value)
        except ValueError:
            continue
    return out
