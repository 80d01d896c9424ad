"""The strategy protocol (spec signatures) and the adapter for strategies written for v1.

A v1 strategy has ``can_handle(request: dict)`` and ``assemble(fragments, budget)``; it is
wrapped so that it receives the pre-fetched fragments from the ``fragments`` backend.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from contextfuse.backends import BackendSet
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextRequest,
    PlanContext,
    StrategyCapabilities,
)

__all__ = [
    "ALL_RESOURCE_TYPES",
    "ContextStrategy",
    "RenamedStrategy",
    "V1StrategyAdapter",
    "as_strategy",
    "greedy_fill",
    "is_v1_strategy",
]

#: ``resource_types`` value of a strategy that handles every resource type.
ALL_RESOURCE_TYPES: tuple[str, ...] = ("*",)


@runtime_checkable
class ContextStrategy(Protocol):
    """A retrieval strategy (spec/strategy-registry.md)."""

    @property
    def name(self) -> str:
        """Unique strategy name."""
        ...

    @property
    def capabilities(self) -> StrategyCapabilities:
        """Backend requirements and quality score."""
        ...

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        """Confidence 0.0-1.0 that this strategy serves ``request`` well."""
        ...

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[ContextFragment]:
        """Fragments for the request, best first, within ``budget.available_tokens``."""
        ...

    def explain(self) -> str:
        """A human-readable description."""
        ...


def _positional_names(func: Any) -> list[str]:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"
    ]


def is_v1_strategy(obj: Any) -> bool:
    """True for a strategy with the v1 signatures ``assemble(fragments, budget)``."""
    return len(_positional_names(getattr(obj, "assemble", None))) == 2


def greedy_fill(fragments: Sequence[ContextFragment], available: int) -> list[ContextFragment]:
    """Take fragments in order; skip one that would overflow; stop once the budget is full."""
    chosen: list[ContextFragment] = []
    remaining = available
    for fragment in fragments:
        if remaining <= 0:
            break
        if fragment.token_count <= remaining:
            chosen.append(fragment)
            remaining -= fragment.token_count
    return chosen


class V1StrategyAdapter:
    """Presents a v1 strategy through the spec protocol."""

    def __init__(self, strategy: Any, name: str | None = None) -> None:
        self._inner = strategy
        self._name = name or str(strategy.name)

    @property
    def inner(self) -> Any:
        """The wrapped v1 strategy."""
        return self._inner

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> StrategyCapabilities:
        caps = getattr(self._inner, "capabilities", None)
        if isinstance(caps, StrategyCapabilities) and caps.required_backends:
            return caps
        quality = caps.quality_score if isinstance(caps, StrategyCapabilities) else 0.5
        # A v1 strategy ranks pre-fetched fragments: that is the backend it uses.
        return StrategyCapabilities(
            uses_fragments=True, resource_types=ALL_RESOURCE_TYPES, quality_score=quality
        )

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        return float(self._inner.can_handle(request.model_dump(mode="json")))

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[ContextFragment]:
        fragments = backends.fragments.fragments if backends.fragments is not None else ()
        return list(self._inner.assemble(fragments, budget))

    def explain(self) -> str:
        return str(self._inner.explain())


class RenamedStrategy:
    """A strategy registered under another name than its own."""

    def __init__(self, strategy: ContextStrategy, name: str) -> None:
        self._inner = strategy
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> StrategyCapabilities:
        return self._inner.capabilities

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        return self._inner.can_handle(request, backends)

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[ContextFragment]:
        return self._inner.assemble(request, backends, budget, plan_context)

    def explain(self) -> str:
        return self._inner.explain()


def as_strategy(obj: Any, name: str | None = None) -> ContextStrategy:
    """Return ``obj`` as a spec-protocol strategy, adapting a v1 strategy if needed."""
    if is_v1_strategy(obj):
        return V1StrategyAdapter(obj, name)
    if not isinstance(obj, ContextStrategy):
        missing = [
            m
            for m in ("name", "capabilities", "can_handle", "assemble", "explain")
            if not hasattr(obj, m)
        ]
        raise TypeError(
            f"{type(obj).__qualname__} is not a context strategy"
            + (f": missing {', '.join(missing)}" if missing else "")
        )
    return obj
