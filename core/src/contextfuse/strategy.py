"""The strategy protocols and the adapter for strategies written for v1.

Two kinds of strategy run in the pipeline:

* a **ranking strategy** (``RankingStrategy``) returns its candidates best first from
  ``rank(request, backends, plan_context)``; the pipeline renders them and its components
  choose depths and spend the budget, so every ranking strategy gets the same packing;
* a **fragment strategy** (the specification's ``ContextStrategy``) returns ready fragments
  within its allocation from ``assemble(request, backends, budget, plan_context)``.

A v1 strategy (``can_handle(request: dict)``, ``assemble(fragments, budget)``) is recognised by
what it declares: capabilities that name no backend (a v1 strategy reads only the fragments
it is handed) and an ``assemble`` made for those two arguments. It is wrapped so that it
receives the pre-fetched fragments from the ``fragments`` backend.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Generic, Protocol, TypeAlias, TypeVar, runtime_checkable

from contextfuse.backends import BackendSet
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextRequest,
    PlanContext,
    StrategyCapabilities,
)
from contextfuse.ranked import Ranked

__all__ = [
    "ALL_RESOURCE_TYPES",
    "AnyStrategy",
    "ContextStrategy",
    "RankingStrategy",
    "RenamedRanker",
    "RenamedStrategy",
    "V1StrategyAdapter",
    "as_strategy",
    "greedy_fill",
    "is_ranking_strategy",
    "is_v1_strategy",
    "renamed",
]

#: ``resource_types`` value of a strategy that handles every resource type.
ALL_RESOURCE_TYPES: tuple[str, ...] = ("*",)


class _StrategyBase(Protocol):
    """What every strategy declares, whatever it returns."""

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

    def explain(self) -> str:
        """A human-readable description."""
        ...


@runtime_checkable
class ContextStrategy(_StrategyBase, Protocol):
    """A fragment strategy (spec/strategy-registry.md): fragments within its allocation."""

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[ContextFragment]:
        """Fragments for the request, best first, within ``budget.available_tokens``."""
        ...


@runtime_checkable
class RankingStrategy(_StrategyBase, Protocol):
    """A strategy that ranks: its candidates, best first; the pipeline spends the budget."""

    def rank(
        self, request: ContextRequest, backends: BackendSet, plan_context: PlanContext
    ) -> Sequence[Ranked]:
        """The candidates for ``request``, best first (no budget: the pipeline spends it)."""
        ...


#: Either kind of strategy, as the registry and the pipeline hold them.
AnyStrategy: TypeAlias = ContextStrategy | RankingStrategy


def is_ranking_strategy(obj: Any) -> bool:
    """True for a strategy that ranks (it has a ``rank`` method)."""
    return callable(getattr(obj, "rank", None))


def is_v1_strategy(obj: Any) -> bool:
    """True for a strategy written for v1: it declares no backend, and its ``assemble`` does
    not accept the specification's ``(request, backends, budget, plan_context)``.

    A v1 strategy only ranks the fragments it is handed (``assemble(fragments, budget)``):
    capabilities that name no backend (v1's ``supports_semantic_search``... or a
    ``StrategyCapabilities`` without a ``uses_*`` flag) and a signature made for two
    arguments declare exactly that.
    """
    if is_ranking_strategy(obj):
        return False
    caps = getattr(obj, "capabilities", None)
    if isinstance(caps, StrategyCapabilities) and caps.required_backends:
        return False
    return not _accepts_spec_arguments(getattr(obj, "assemble", None))


def _accepts_spec_arguments(method: Any) -> bool:
    try:
        inspect.signature(method).bind(None, None, None, None)
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): assume the spec's
        return True
    return True


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


_Inner = TypeVar("_Inner", bound=_StrategyBase)


class _Renamed(Generic[_Inner]):
    """A strategy registered under another name than its own."""

    def __init__(self, strategy: _Inner, name: str) -> None:
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

    def explain(self) -> str:
        return self._inner.explain()


class RenamedStrategy(_Renamed[ContextStrategy]):
    """A fragment strategy registered under another name than its own."""

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[ContextFragment]:
        return self._inner.assemble(request, backends, budget, plan_context)


class RenamedRanker(_Renamed[RankingStrategy]):
    """A ranking strategy registered under another name than its own."""

    def rank(
        self, request: ContextRequest, backends: BackendSet, plan_context: PlanContext
    ) -> Sequence[Ranked]:
        return self._inner.rank(request, backends, plan_context)


def renamed(strategy: AnyStrategy, name: str) -> AnyStrategy:
    """``strategy`` under ``name`` (itself when the names agree)."""
    if strategy.name == name:
        return strategy
    if isinstance(strategy, RankingStrategy):
        return RenamedRanker(strategy, name)
    return RenamedStrategy(strategy, name)


def as_strategy(obj: Any, name: str | None = None) -> AnyStrategy:
    """Return ``obj`` as a strategy of the pipeline, adapting a v1 strategy if needed."""
    ranking = is_ranking_strategy(obj)
    if not ranking and not callable(getattr(obj, "assemble", None)):
        raise TypeError(
            f"{type(obj).__qualname__} is not a context strategy: it has neither rank() "
            "(a ranking strategy) nor assemble() (a fragment strategy)"
        )
    v1 = is_v1_strategy(obj)
    members = ("name", "can_handle", "explain") if v1 else ("name", "capabilities", "can_handle")
    protocol: type[Any] = RankingStrategy if ranking else ContextStrategy
    missing = [m for m in members if not hasattr(obj, m)]
    if missing or not (v1 or isinstance(obj, protocol)):
        raise TypeError(
            f"{type(obj).__qualname__} is not a context strategy"
            + (f": missing {', '.join(missing)}" if missing else "")
        )
    if v1:
        return V1StrategyAdapter(obj, name)
    return obj  # type: ignore[no-any-return]
