"""The three v1 ranking strategies over pre-fetched fragments: relevance, recency, tiered.

They are the only strategies in the core: they rank what the caller already fetched and
retrieve nothing themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contextfuse.backends import BackendSet
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextRequest,
    PlanContext,
    StrategyCapabilities,
)
from contextfuse.strategy import ALL_RESOURCE_TYPES, greedy_fill

__all__ = ["RecencyStrategy", "RelevanceStrategy", "TieredStrategy", "builtin_rankers"]

_TIER_RANK = {"hot": 0, "warm": 1, "cold": 2}


class _RankingStrategy:
    """Sorts the pre-fetched fragments by a key and fills the budget greedily."""

    _name: str
    _description: str

    @staticmethod
    def _key(fragment: ContextFragment) -> Any:
        raise NotImplementedError

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> StrategyCapabilities:
        return StrategyCapabilities(
            uses_fragments=True, resource_types=ALL_RESOURCE_TYPES, quality_score=0.5
        )

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        return 1.0 if backends.fragments is not None and len(backends.fragments) else 0.0

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[ContextFragment]:
        if backends.fragments is None:
            return []
        ranked = sorted(backends.fragments.fragments, key=self._key)
        return greedy_fill(ranked, budget.available_tokens)

    def explain(self) -> str:
        return self._description


class RelevanceStrategy(_RankingStrategy):
    """Highest ``relevance_score`` first (the default)."""

    _name = "relevance"
    _description = "Sorts fragments by relevance_score, highest first, until the budget is full."

    @staticmethod
    def _key(fragment: ContextFragment) -> Any:
        return (-fragment.relevance_score, fragment.uko_node)


class RecencyStrategy(_RankingStrategy):
    """Most recent ``created_at`` first (datetime comparison)."""

    _name = "recency"
    _description = "Sorts fragments by created_at, most recent first, until the budget is full."

    @staticmethod
    def _key(fragment: ContextFragment) -> Any:
        return (-fragment.created_at.timestamp(), fragment.uko_node)


class TieredStrategy(_RankingStrategy):
    """hot before warm before cold; within a tier, highest relevance first."""

    _name = "tiered"
    _description = (
        "Groups fragments by tier (hot > warm > cold), then by relevance_score, highest first."
    )

    @staticmethod
    def _key(fragment: ContextFragment) -> Any:
        return (_TIER_RANK[fragment.tier], -fragment.relevance_score, fragment.uko_node)


def builtin_rankers() -> dict[str, Callable[[], _RankingStrategy]]:
    """Factories of the core's three ranking strategies, by name."""
    return {"relevance": RelevanceStrategy, "recency": RecencyStrategy, "tiered": TieredStrategy}
