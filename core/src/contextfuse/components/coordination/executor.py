"""``ParallelStrategyExecutor``: the default StrategyExecutor (threads, deadline, breakers)."""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from contextfuse.backends import BackendSet
from contextfuse.components.coordination.breaker import CircuitBreaker, CircuitState
from contextfuse.components.coordination.config import CoordinatorConfig
from contextfuse.components.coordination.pool import Round, WorkerPool
from contextfuse.components.coordination.render import Rendered, render_ranking
from contextfuse.components.coordination.result import (
    CIRCUIT_OPEN,
    ERROR,
    NOT_STARTED,
    OK,
    SKIPPED,
    TIMEOUT,
)
from contextfuse.components.coordination.selector import describe_error
from contextfuse.components.protocols import Allocation, ExecutionReport
from contextfuse.deadline import deadline_scope
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextRequest,
    ContextStrategyResult,
    PlanContext,
)
from contextfuse.ranked import Ranked
from contextfuse.strategy import RankingStrategy, is_ranking_strategy

__all__ = ["ParallelStrategyExecutor"]

logger = logging.getLogger(__name__)


@attrs.frozen(slots=True)
class _Task:
    index: int
    allocation: Allocation
    trial: bool


@attrs.frozen(slots=True)
class _Outcome:
    result: ContextStrategyResult
    failed: bool  # counts against the circuit
    trimmed_tokens: int = 0


def _limit(
    fragments: Sequence[ContextFragment], tokens: int, max_fragments: int
) -> tuple[list[ContextFragment], int, int]:
    """Keep fragments in order while they fit; returns (kept, over-budget drops, over-count)."""
    kept: list[ContextFragment] = []
    used = 0
    over_budget = 0
    over_count = 0
    for fragment in fragments:
        if len(kept) >= max_fragments:
            over_count += 1
        elif used + fragment.token_count > tokens:
            over_budget += 1
        else:
            kept.append(fragment)
            used += fragment.token_count
    return kept, over_budget, over_count


def _rank_order(fragments: Iterable[ContextFragment]) -> list[str]:
    return list(dict.fromkeys(f.uko_node for f in fragments))


class ParallelStrategyExecutor:
    """Runs strategies on threads, within a round deadline, behind per-strategy circuit breakers.

    Each round hands its allocations, in order, to up to ``executor_max_workers`` daemon worker
    threads (idle workers are kept between rounds; ``close()`` stops them). The round returns
    once every strategy finished or ``executor_timeout`` seconds after it started, whichever
    comes first; a strategy that never returns is abandoned on its worker, which later rounds
    replace, so it cannot hold up later rounds or interpreter exit. Each strategy runs inside
    a ``contextfuse.deadline`` scope ending with its allowance: past it, the store refuses
    its reads and interrupts its running query, so an abandoned strategy stops using the
    index (and any store or strategy that checks the deadline stops too).

    Results are validated: a strategy must return a list or tuple of ``ContextFragment``.
    Fragments are kept in the strategy's order while they fit its allocation (one that would
    overflow is skipped), at most ``max_fragments_per_strategy`` of them; tokens removed are
    reported in ``ExecutionReport.trimmed``. The strategy's own order is kept in
    ``stats["rank_order"]`` (uko_node, first occurrence) and ``stats["fragment_order"]``
    (fragment_id), since ``ContextStrategyResult`` re-sorts its fragments by relevance.

    Circuit breaker, per strategy name: after ``circuit_breaker_threshold`` consecutive
    failures (exception, timeout, invalid result) the circuit opens and the strategy is not
    called for ``circuit_breaker_cooldown`` seconds (by ``clock``); then one trial call goes
    through (half-open): success closes the circuit, failure re-opens it for another
    cool-down. The breaker state is thread-safe and shared by every round of this instance.
    """

    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config or CoordinatorConfig()
        self._breaker = CircuitBreaker(self._config, clock)
        self._pool = WorkerPool(keep=self._config.executor_max_workers)
        self._finalizer = weakref.finalize(self, self._pool.close)

    def close(self) -> None:
        """Stop the idle worker threads (done automatically when the executor is collected).

        The executor stays usable: a later round starts workers again.
        """
        self._pool.close()

    @property
    def config(self) -> CoordinatorConfig:
        return self._config

    # -- circuit breaker ---------------------------------------------------------------------

    def circuit_state(self, name: str) -> CircuitState:
        """``closed``, ``open`` (cooling down) or ``half_open`` (a trial call may go through)."""
        return self._breaker.state(name)

    def consecutive_failures(self, name: str) -> int:
        """Failures of ``name`` since its last success."""
        return self._breaker.consecutive_failures(name)

    def is_blocked(self, name: str) -> bool:
        """True when a call to ``name`` would not go through now (open, or its trial running)."""
        return self._breaker.is_blocked(name)

    def reset_circuits(self) -> None:
        """Close every circuit and forget all failures."""
        self._breaker.reset()

    # -- execution ---------------------------------------------------------------------------

    def execute(
        self,
        allocations: Sequence[Allocation],
        request: ContextRequest,
        backends: BackendSet,
        plan_context: PlanContext,
    ) -> ExecutionReport:
        """One ``ContextStrategyResult`` per allocation, in allocation order."""
        results: list[ContextStrategyResult | None] = [None] * len(allocations)
        broken: list[str] = []
        tasks: list[_Task] = []
        for index, allocation in enumerate(allocations):
            name = allocation.name
            if allocation.tokens <= 0:
                results[index] = ContextStrategyResult(
                    strategy_name=name,
                    errors=(f"not run: allocation of {allocation.tokens} tokens",),
                    stats={"status": SKIPPED, "allocation": allocation.tokens},
                )
                continue
            admitted, trial = self._breaker.admit(name)
            if not admitted:
                broken.append(name)
                results[index] = ContextStrategyResult(
                    strategy_name=name,
                    errors=(self._breaker.open_message(name),),
                    stats={"status": CIRCUIT_OPEN, "allocation": allocation.tokens},
                )
                continue
            tasks.append(_Task(index=index, allocation=allocation, trial=trial))

        trimmed: dict[str, int] = {}
        outcomes = self._run_round(tasks, request, backends, plan_context)
        for task, outcome in zip(tasks, outcomes, strict=True):
            name = task.allocation.name
            result = outcome.result
            ran = result.stats.get("status") != NOT_STARTED
            message = self._breaker.record(
                name, failed=outcome.failed if ran else None, trial=task.trial
            )
            if message is not None:
                logger.warning("strategy %s: %s", name, message)
                result = result.model_copy(update={"errors": (*result.errors, message)})
            if outcome.trimmed_tokens:
                trimmed[name] = trimmed.get(name, 0) + outcome.trimmed_tokens
            results[task.index] = result
        final = tuple(r for r in results if r is not None)
        return ExecutionReport(results=final, circuit_broken=tuple(broken), trimmed=trimmed)

    def _run_round(
        self,
        tasks: Sequence[_Task],
        request: ContextRequest,
        backends: BackendSet,
        plan_context: PlanContext,
    ) -> list[_Outcome]:
        if not tasks:
            return []
        config = self._config
        timeouts = [config.timeout_for(task.allocation.name) for task in tasks]
        # A ranking is rendered as far down as the whole round's budget could use: the packer
        # may give any strategy all of it (the best one's candidates come first).
        round_tokens = sum(task.allocation.tokens for task in tasks)
        # The round waits for the slowest allowance; each strategy is held to its own.
        state: Round[_Outcome] = Round(len(tasks))

        def work() -> None:
            while (index := state.claim()) is not None:
                allocation = tasks[index].allocation
                try:
                    # A thread cannot be stopped: past its allowance the strategy is stopped
                    # where it reads the store (see contextfuse.deadline).
                    with deadline_scope(time.monotonic() + timeouts[index]), backends.reading():
                        outcome = _run_strategy(
                            allocation, request, backends, plan_context, config, round_tokens
                        )
                except Exception as exc:  # a bug of ours must not leave the round waiting
                    logger.exception("executor failed on strategy %s", allocation.name)
                    outcome = _failure(
                        allocation, f"executor error {describe_error(exc)}", ERROR, 0.0
                    )
                state.finish(index, outcome)

        workers = self._pool.run(work, min(self._config.executor_max_workers, len(tasks)))
        if workers:
            round_start = time.perf_counter()
            # Wait until every task is done or the longest allowance among those still
            # running is spent; with one timeout for all this is a single wait.
            while not state.done.is_set():
                pending = [t for t, o in zip(timeouts, state.outcomes, strict=True) if o is None]
                remaining = max(pending, default=0.0) - (time.perf_counter() - round_start)
                if remaining <= 0 or state.done.wait(min(remaining, max(min(pending), 0.01))):
                    break
        outcomes, started = state.close()
        now = time.perf_counter()
        final: list[_Outcome] = []
        for task, outcome, began, own in zip(tasks, outcomes, started, timeouts, strict=True):
            late = outcome is not None and outcome.result.execution_time_ms > own * 1000.0
            if outcome is None or late:
                outcome = _unfinished(task.allocation, began, now, own, workers)
            final.append(outcome)
        return final


def _failure(
    allocation: Allocation, message: str, status: str, elapsed_ms: float, **stats: Any
) -> _Outcome:
    result = ContextStrategyResult(
        strategy_name=allocation.name,
        execution_time_ms=max(0.0, elapsed_ms),
        errors=(message,),
        stats={"status": status, "allocation": allocation.tokens, **stats},
    )
    return _Outcome(result=result, failed=status != NOT_STARTED)


def _unfinished(
    allocation: Allocation, began: float | None, now: float, timeout: float, workers: int
) -> _Outcome:
    name = allocation.name
    if began is None:
        logger.warning("strategy %s not started within %g s", name, timeout)
        return _failure(
            allocation,
            f"not started: all {workers} worker(s) were busy until the {timeout:g} s deadline",
            NOT_STARTED,
            0.0,
        )
    logger.warning("strategy %s timed out after %g s", name, timeout)
    return _failure(allocation, f"timed out after {timeout:g} s", TIMEOUT, (now - began) * 1000.0)


def _run_strategy(
    allocation: Allocation,
    request: ContextRequest,
    backends: BackendSet,
    plan_context: PlanContext,
    config: CoordinatorConfig,
    round_tokens: int,
) -> _Outcome:
    """Call the strategy and turn whatever it does into a validated, limited result.

    A fragment strategy fills its allocation; a ranking strategy's candidates are rendered as
    far down as ``round_tokens``, the round's whole budget, could use."""
    name = allocation.name
    tokens = allocation.tokens
    strategy = allocation.strategy
    ranking = is_ranking_strategy(strategy)
    start = time.perf_counter()
    try:
        returned: object = (
            strategy.rank(request, backends, plan_context)
            if isinstance(strategy, RankingStrategy) and ranking
            else strategy.assemble(  # type: ignore[union-attr]
                request, backends, ContextBudget.of(tokens), plan_context
            )
        )
        if ranking:
            returned = _rendered(returned, backends, name, max(tokens, round_tokens), config)
    except BaseException as exc:  # a strategy's failure (even SystemExit) must not kill the worker
        elapsed = (time.perf_counter() - start) * 1000.0
        logger.warning("strategy %s failed: %s", name, describe_error(exc))
        logger.debug("strategy %s traceback", name, exc_info=exc)
        return _failure(allocation, f"raised {describe_error(exc)}", ERROR, elapsed)
    elapsed = (time.perf_counter() - start) * 1000.0
    if isinstance(returned, _InvalidRanking):
        logger.warning("strategy %s %s", name, returned.message)
        return _failure(allocation, returned.message, ERROR, elapsed)
    if isinstance(returned, Rendered):
        return _ranked_outcome(allocation, returned, elapsed)
    if not isinstance(returned, (list, tuple)):
        message = f"returned {type(returned).__name__}, expected list[ContextFragment]"
        logger.warning("strategy %s %s", name, message)
        return _failure(allocation, message, ERROR, elapsed)
    for position, item in enumerate(returned):
        if not isinstance(item, ContextFragment):
            message = (
                f"returned {type(item).__name__} at index {position}, "
                "expected list[ContextFragment]"
            )
            logger.warning("strategy %s %s", name, message)
            return _failure(allocation, message, ERROR, elapsed)
    fragments: Sequence[ContextFragment] = returned
    max_fragments = config.max_fragments_for(name)
    kept, over_budget, over_count = _limit(fragments, tokens, max_fragments)
    returned_tokens = sum(f.token_count for f in fragments)
    used = sum(f.token_count for f in kept)
    errors: list[str] = []
    stats: dict[str, Any] = {
        "status": OK,
        "allocation": tokens,
        "rank_order": _rank_order(kept),
        "fragment_order": [f.fragment_id for f in kept],
    }
    trimmed = returned_tokens - used
    if over_budget or over_count:
        stats["trimmed_tokens"] = trimmed
        stats["trimmed_fragments"] = over_budget + over_count
    if over_budget:
        errors.append(
            f"returned {returned_tokens} tokens for an allocation of {tokens}: "
            f"dropped {over_budget} fragment(s) that did not fit"
        )
    if over_count:
        errors.append(
            f"returned {len(fragments)} fragments: kept at most {max_fragments} "
            f"(max_fragments_per_strategy), dropped {over_count}"
        )
    if errors:
        logger.warning("strategy %s trimmed: %s", name, "; ".join(errors))
    result = ContextStrategyResult(
        strategy_name=name,
        fragments=tuple(kept),
        total_fragments=len(fragments),
        tokens_used=used,
        execution_time_ms=elapsed,
        errors=tuple(errors),
        stats=stats,
    )
    return _Outcome(result=result, failed=False, trimmed_tokens=trimmed)


@attrs.frozen(slots=True)
class _InvalidRanking:
    message: str


def _rendered(
    returned: object, backends: BackendSet, name: str, tokens: int, config: CoordinatorConfig
) -> Rendered | _InvalidRanking:
    """A ranking strategy's candidates rendered, or what is wrong with what it returned."""
    if not isinstance(returned, (list, tuple)):
        return _InvalidRanking(f"rank() returned {type(returned).__name__}, expected list[Ranked]")
    for position, item in enumerate(returned):
        if not isinstance(item, Ranked):
            return _InvalidRanking(
                f"rank() returned {type(item).__name__} at index {position}, expected list[Ranked]"
            )
    return render_ranking(
        returned, backends, strategy=name, tokens=tokens, limits=config.render_limits()
    )


def _ranked_outcome(allocation: Allocation, rendered: Rendered, elapsed: float) -> _Outcome:
    """The result of a ranking strategy: every rendering of its candidates above the cut."""
    stats: dict[str, Any] = {
        "status": OK,
        "allocation": allocation.tokens,
        "rank_order": rendered.order,
        "fragment_order": [f.fragment_id for f in rendered.fragments],
        "ranked": True,
        "below_cut": rendered.below_cut,
        "below_cut_shown": list(rendered.below_cut_shown),
    }
    errors: tuple[str, ...] = ()
    if rendered.unknown:
        shown = ", ".join(rendered.unknown[:5])
        more = len(rendered.unknown) - 5
        errors = (
            f"ranked {len(rendered.unknown)} node(s) no store holds: {shown}"
            + (f" and {more} more" if more > 0 else ""),
        )
        stats["unknown"] = list(rendered.unknown)
    result = ContextStrategyResult(
        strategy_name=allocation.name,
        fragments=tuple(rendered.fragments),
        total_fragments=len(rendered.fragments),
        tokens_used=sum(f.token_count for f in rendered.fragments),
        execution_time_ms=elapsed,
        errors=errors,
        stats=stats,
    )
    return _Outcome(result=result, failed=False)
