"""``BudgetOverageGuard``: the post-packing safety net that keeps fusion within budget."""

from __future__ import annotations

import logging

from contextfuse.components.fusion.packer import pack_order_key
from contextfuse.components.protocols import PackResult

# The name predates the package split: handlers configured for it keep working.
logger = logging.getLogger("contextfuse.fusion")


class BudgetOverageGuard:
    """Post-packing safety net: drops fragments until the packed total fits the budget.

    Drop order: lowest ``relevance_score`` first; ties: lowest score, then uko_node desc.
    Zero-token fragments are never dropped (dropping them cannot reduce the total). Each drop
    logs a structured WARNING on ``contextfuse.fusion`` with ``extra`` fields ``uko_node``,
    ``token_count``, ``relevance_score``, ``over_by`` (tokens over before the drop) and
    ``budget``. Dropped fragments join ``omitted`` (best first) and their fallback records
    are removed. Disabled, it returns the result unchanged.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled

    def enforce(self, result: PackResult, budget: int) -> PackResult:
        """``result`` trimmed to ``budget`` tokens, ``dropped_by_overage_guard`` counted."""
        budget = max(0, int(budget))
        total = result.total_tokens
        if not self.enabled or total <= budget:
            return result
        packed = list(result.packed)
        victims = sorted(range(len(packed)), key=lambda i: packed[i].uko_node, reverse=True)
        victims.sort(key=lambda i: (packed[i].fragment.relevance_score, packed[i].score))
        dropped: set[int] = set()
        for i in victims:
            if total <= budget:
                break
            item = packed[i]
            fragment = item.fragment
            if fragment.token_count == 0:
                continue
            over_by = total - budget
            logger.warning(
                "budget overage guard dropped %s (%d tokens, relevance %.3f): packed "
                "fragments were %d tokens over the %d-token budget",
                fragment.uko_node,
                fragment.token_count,
                fragment.relevance_score,
                over_by,
                budget,
                extra={
                    "uko_node": fragment.uko_node,
                    "token_count": fragment.token_count,
                    "relevance_score": fragment.relevance_score,
                    "over_by": over_by,
                    "budget": budget,
                },
            )
            total -= fragment.token_count
            dropped.add(i)
        kept = tuple(s for i, s in enumerate(packed) if i not in dropped)
        gone = [packed[i] for i in sorted(dropped)]
        gone_nodes = {s.uko_node for s in gone} - {s.uko_node for s in kept}
        omitted = sorted((*result.omitted, *gone), key=pack_order_key)
        return PackResult(
            packed=kept,
            omitted=tuple(omitted),
            fallbacks={k: v for k, v in result.fallbacks.items() if k not in gone_nodes},
            dropped_by_overage_guard=result.dropped_by_overage_guard + len(gone),
        )
