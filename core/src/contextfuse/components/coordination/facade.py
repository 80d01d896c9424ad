"""``StrategyCoordinator``: the phase 1 facade (select, allocate, execute).

The facade talks to its components only through their protocols, so a replaced selector or
executor keeps what the facade adds: every strategy is polled behind a guard (a ``name``,
``capabilities`` or ``can_handle`` that raises or answers nonsense is reported in
``CoordinationResult.errors`` and left out), and strategies whose circuit is open (an executor
that implements ``CircuitAware``) are removed before allocation.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from contextfuse.backends import BackendSet, FragmentBackend
from contextfuse.components.coordination.config import CoordinatorConfig
from contextfuse.components.coordination.result import (
    CoordinationResult,
    in_strategy_order,
    succeeded,
)
from contextfuse.components.coordination.selector import (
    as_confidence,
    describe_error,
    short_repr,
)
from contextfuse.components.protocols import (
    Allocation,
    BudgetAllocator,
    CircuitAware,
    StrategyExecutor,
    StrategySelector,
)
from contextfuse.components.relevance_record import record_strategy_relevance
from contextfuse.errors import ComponentContractError
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextRequest,
    ContextStrategyResult,
    PlanContext,
)
from contextfuse.slots import slot
from contextfuse.strategy import AnyStrategy, RankingStrategy, V1StrategyAdapter, as_strategy

__all__ = ["StrategyCoordinator"]

logger = logging.getLogger(__name__)


# strategy object -> whether it needed the v1 adapter. ``as_strategy`` inspects signatures and
# runs a runtime protocol check (~80 us a strategy); strategies are long-lived, so remember it.
_V1_BY_OBJECT: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
_V1_LOCK = threading.Lock()


def _adapt(obj: Any) -> AnyStrategy:
    """``as_strategy(obj)``, remembering per object whether it is a v1 strategy."""
    try:
        with _V1_LOCK:
            v1 = _V1_BY_OBJECT.get(obj)
    except TypeError:  # not weak-referenceable or not hashable: no memo
        return as_strategy(obj)
    if v1 is None:
        strategy = as_strategy(obj)  # raises TypeError for a non-strategy
        with _V1_LOCK:
            _V1_BY_OBJECT[obj] = strategy is not obj
        return strategy
    return V1StrategyAdapter(obj) if v1 else obj


def _coerce_fragments(fragments: Iterable[ContextFragment | Mapping[str, Any]]) -> FragmentBackend:
    items: list[ContextFragment] = []
    for position, item in enumerate(fragments):
        if isinstance(item, ContextFragment):
            items.append(item)
        elif isinstance(item, Mapping):
            items.append(ContextFragment.model_validate(dict(item)))
        else:
            raise TypeError(
                f"fragments[{position}] is {type(item).__name__}, expected ContextFragment"
            )
    return FragmentBackend(items)


class StrategyCoordinator:
    """Phase 1 facade: select strategies, share the budget among them, run them.

    ``config`` configures the default components; a component passed explicitly is used as is.
    The executor (and so the circuit-breaker state) lives as long as the coordinator.
    """

    def __init__(
        self,
        config: CoordinatorConfig | Mapping[str, Any] | None = None,
        *,
        selector: StrategySelector | None = None,
        allocator: BudgetAllocator | None = None,
        executor: StrategyExecutor | None = None,
    ) -> None:
        self._config = CoordinatorConfig.coerce(config)
        # The defaults are the slot table's (one place names them), built from ``config``.
        self._selector = selector or slot("strategy_selector").build(self._config)
        self._allocator = allocator or slot("budget_allocator").build(self._config)
        self._executor = executor or slot("strategy_executor").build(self._config)

    @property
    def config(self) -> CoordinatorConfig:
        return self._config

    @property
    def selector(self) -> StrategySelector:
        return self._selector

    @property
    def allocator(self) -> BudgetAllocator:
        return self._allocator

    @property
    def executor(self) -> StrategyExecutor:
        return self._executor

    def coordinate(
        self,
        request: ContextRequest | Mapping[str, Any] | str | None,
        strategies: Iterable[Any],
        budget: ContextBudget | int,
        fragments: Iterable[ContextFragment | Mapping[str, Any]] | None = None,
        backends: BackendSet | Mapping[str, Any] | None = None,
        plan_context: PlanContext | Mapping[str, Any] | None = None,
    ) -> CoordinationResult:
        """Run one round: select, allocate ``budget.available_tokens``, execute.

        ``request``, ``backends`` and ``plan_context`` may be mappings (coerced); ``budget`` may
        be a token count. ``fragments``, when given, are served to the strategies as the
        ``fragments`` backend (replacing one in ``backends``). ``strategies`` may be v1-style
        (wrapped with ``as_strategy``); a non-strategy raises ``TypeError``.
        """
        req = ContextRequest.coerce(request)
        backend_set = BackendSet.coerce(backends)
        if fragments is not None:
            backend_set = backend_set.model_copy(update={"fragments": _coerce_fragments(fragments)})
        plan = PlanContext.coerce(plan_context)
        total = (
            budget if isinstance(budget, ContextBudget) else ContextBudget.of(budget)
        ).available_tokens
        pool = [_adapt(s) for s in strategies]

        errors: list[str] = []
        polled = _poll_guards(pool, errors)
        chosen = self._selector.select(polled, req, backend_set)
        candidates = [
            attrs.evolve(c, strategy=c.strategy.strategy)
            if isinstance(c.strategy, _PolledStrategy)
            else c
            for c in chosen
        ]
        for guard in polled:
            errors.extend(f"{guard.name}: {message}" for message in guard.errors)

        circuit_broken: list[str] = []
        if isinstance(self._executor, CircuitAware):
            executor = self._executor
            circuit_broken = [c.name for c in candidates if executor.is_blocked(c.name)]
            if circuit_broken:
                blocked = set(circuit_broken)
                candidates = [c for c in candidates if c.name not in blocked]

        allocations = [a for a in self._allocator.allocate(candidates, total, req) if a.tokens > 0]
        _check_allocations(allocations, total)

        report = self._executor.execute(allocations, req, backend_set, plan)
        for name in report.circuit_broken:
            if name not in circuit_broken:
                circuit_broken.append(name)

        gathered: list[ContextFragment] = []
        used: list[str] = []
        results: list[ContextStrategyResult] = []
        for result in report.results:
            if not isinstance(result, ContextStrategyResult):
                raise ComponentContractError(
                    f"strategy executor returned {type(result).__name__} in its results, "
                    "expected ContextStrategyResult"
                )
            results.append(result)
            errors.extend(f"{result.strategy_name}: {message}" for message in result.errors)
            if not succeeded(result) or not result.fragments:
                continue
            gathered.extend(in_strategy_order(result))
            used.append(result.strategy_name)

        return CoordinationResult(
            # One strategy's nodes have nothing to record (its own relevance is the fragment's).
            fragments=record_strategy_relevance(gathered) if len(used) > 1 else gathered,
            strategies_used=used,
            allocations=[a.as_tuple() for a in allocations],
            circuit_broken=circuit_broken,
            results=results,
            errors=errors,
            total_budget=total,
        )


def _check_allocations(allocations: Sequence[Allocation], total: int) -> None:
    allocated = sum(a.tokens for a in allocations)
    if allocated > total:
        raise ComponentContractError(
            f"budget allocator allocated {allocated} tokens of a budget of {total}"
        )


class _PolledStrategy:
    """A strategy as the selector sees it: ``can_handle`` never raises and always answers a
    confidence in [0, 1]; what went wrong is kept in ``errors`` for the coordination result."""

    __slots__ = ("capabilities", "errors", "name", "strategy")

    def __init__(self, strategy: AnyStrategy, name: str, capabilities: Any) -> None:
        self.strategy = strategy
        self.name = name
        self.capabilities = capabilities
        self.errors: list[str] = []

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        try:
            raw = self.strategy.can_handle(request, backends)
        except Exception as exc:
            return self._fail(f"can_handle raised {describe_error(exc)}")
        confidence = as_confidence(raw)
        if confidence is None:
            return self._fail(
                f"can_handle returned {short_repr(raw)} ({type(raw).__name__}), "
                "expected a number in [0, 1]"
            )
        return confidence

    def _fail(self, message: str) -> float:
        logger.warning("strategy %s left out: %s", self.name, message)
        self.errors.append(message)
        return 0.0

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[ContextFragment]:
        if isinstance(self.strategy, RankingStrategy):
            raise TypeError(f"strategy {self.name!r} ranks: the executor calls its rank()")
        return self.strategy.assemble(request, backends, budget, plan_context)

    def explain(self) -> str:
        return self.strategy.explain()


def _poll_guards(pool: Sequence[AnyStrategy], errors: list[str]) -> list[_PolledStrategy]:
    """Each strategy behind a guard; one whose name or capabilities fail, or whose name
    repeats an earlier one's, is reported in ``errors`` and left out."""
    guards: list[_PolledStrategy] = []
    seen: set[str] = set()
    for strategy in pool:
        label = f"<{type(strategy).__qualname__}>"
        try:
            name = strategy.name
        except Exception as exc:
            errors.append(f"{label}: name raised {describe_error(exc)}")
            continue
        if not isinstance(name, str) or not name:
            errors.append(f"{label}: name is {name!r}, expected a non-empty str")
            continue
        if name in seen:
            errors.append(f"{name}: another strategy has the same name; only the first one is used")
            continue
        seen.add(name)
        try:
            capabilities = strategy.capabilities
            capabilities.required_backends  # noqa: B018 - the selector reads it; fail here
        except Exception as exc:
            errors.append(f"{name}: capabilities raised {describe_error(exc)}")
            continue
        guards.append(_PolledStrategy(strategy, name, capabilities))
    return guards
