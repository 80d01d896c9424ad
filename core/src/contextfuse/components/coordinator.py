"""Phase 1 defaults (strategy orchestration) and the ``StrategyCoordinator`` facade over them.

``ConfidenceWeightedSelector`` polls each strategy's ``can_handle``, ``ProportionalBudgetAllocator``
shares the token budget in proportion to confidence, and ``ParallelStrategyExecutor`` runs the
strategies on threads with a round deadline and a per-strategy circuit breaker.
``StrategyCoordinator.coordinate()`` chains the three (``spec/acms-fusion.md``).

Decisions where the spec is silent:

* A preferred strategy's confidence is multiplied by ``preference_boost`` *after* clamping to
  ``[0, 1]`` and is not clamped again, so it may exceed 1.0 (up to ``preference_boost``):
  allocation is proportional, so a boost capped at 1.0 would do nothing for a strategy that is
  already certain.
* Strategies whose circuit is open are removed before allocation, so their tokens go to the
  strategies that will run; they are listed in ``CoordinationResult.circuit_broken``.
* When every allocated strategy sits at ``per_strategy_max_cap``, the tokens left over are not
  allocated: the allocations then sum to less than the total budget.
* ``executor_timeout`` is a round deadline measured from the start of ``execute``. A strategy
  still running then has timed out (a failure for its circuit); one that never started because
  every worker was busy is reported as not started and does not count against its circuit.
* A strategy that returns too many tokens or fragments is trimmed, not failed: the run counts
  as a success for its circuit and the trim is reported.
* ``CoordinationResult.strategies_used`` lists the strategies that ran successfully *and*
  contributed at least one fragment, in allocation order.

Every ``ContextStrategyResult`` the executor writes has ``stats["status"]`` (``ok``, ``error``,
``timeout``, ``not_started``, ``circuit_open`` or ``skipped``) and ``stats["allocation"]``; a
successful one also has ``rank_order`` (uko_node in the strategy's own order, first occurrence)
and ``fragment_order`` (fragment_id in that order), and when trimmed ``trimmed_tokens`` and
``trimmed_fragments``.
"""

from __future__ import annotations

import itertools
import logging
import math
import numbers
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from contextfuse.backends import BackendSet, FragmentBackend
from contextfuse.components.protocols import (
    Allocation,
    BudgetAllocator,
    Candidate,
    ExecutionReport,
    StrategyExecutor,
    StrategySelector,
)
from contextfuse.errors import ComponentContractError
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextRequest,
    ContextStrategyResult,
    PlanContext,
)
from contextfuse.strategy import ContextStrategy, V1StrategyAdapter, as_strategy

__all__ = [
    "CircuitState",
    "ConfidenceWeightedSelector",
    "CoordinationResult",
    "CoordinatorConfig",
    "ParallelStrategyExecutor",
    "ProportionalBudgetAllocator",
    "Selection",
    "StrategyCoordinator",
]

logger = logging.getLogger(__name__)

#: State of a strategy's circuit breaker.
CircuitState = Literal["closed", "open", "half_open"]

# Values of ``ContextStrategyResult.stats["status"]`` written by the executor.
_OK = "ok"
_ERROR = "error"
_TIMEOUT = "timeout"
_NOT_STARTED = "not_started"
_CIRCUIT_OPEN = "circuit_open"
_SKIPPED = "skipped"


# ---- configuration ----------------------------------------------------------------------------


class StrategyLimits(BaseModel):
    """One strategy's overrides of the executor settings (the registry's per-strategy table)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    timeout_seconds: float | None = Field(default=None, gt=0.0, allow_inf_nan=False)
    max_fragments: int | None = Field(default=None, ge=1)
    circuit_breaker_threshold: int | None = Field(default=None, ge=1)


class CoordinatorConfig(BaseModel):
    """Settings of the coordinator and its three components (the ``[coordinator]`` table).

    The first six are the spec's (``spec/acms-fusion.md``). ``circuit_breaker_cooldown``: seconds
    an open circuit waits before letting one trial call through. ``max_fragments_per_strategy``:
    fragments kept from one run, in the strategy's order (the registry's ``max_fragments``).
    ``per_strategy_max_cap`` must be at least ``min_useful_budget``.

    ``timeout_seconds``, ``max_workers`` and ``max_fragments`` (the registry's names for the same
    settings) are accepted as aliases of ``executor_timeout``, ``executor_max_workers`` and
    ``max_fragments_per_strategy``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_useful_budget: int = Field(default=64, ge=1)
    executor_timeout: float = Field(
        default=30.0,
        gt=0.0,
        allow_inf_nan=False,
        validation_alias=AliasChoices("executor_timeout", "timeout_seconds"),
    )
    executor_max_workers: int = Field(
        default=4, ge=1, validation_alias=AliasChoices("executor_max_workers", "max_workers")
    )
    circuit_breaker_threshold: int = Field(default=3, ge=1)
    preference_boost: float = Field(default=1.5, ge=1.0, allow_inf_nan=False)
    per_strategy_max_cap: int | None = Field(default=None, ge=1)
    circuit_breaker_cooldown: float = Field(default=30.0, ge=0.0, allow_inf_nan=False)
    max_fragments_per_strategy: int = Field(
        default=100,
        ge=1,
        validation_alias=AliasChoices("max_fragments_per_strategy", "max_fragments"),
    )

    strategy_limits: dict[str, StrategyLimits] = Field(
        default_factory=dict,
        description="Per-strategy overrides of timeout, max fragments and breaker threshold.",
    )

    def timeout_for(self, name: str) -> float:
        """The timeout of strategy ``name`` (its override, else ``executor_timeout``)."""
        limits = self.strategy_limits.get(name)
        return (
            limits.timeout_seconds if limits and limits.timeout_seconds else self.executor_timeout
        )

    def max_fragments_for(self, name: str) -> int:
        """How many fragments strategy ``name`` may return."""
        limits = self.strategy_limits.get(name)
        if limits and limits.max_fragments:
            return limits.max_fragments
        return self.max_fragments_per_strategy

    def threshold_for(self, name: str) -> int:
        """Consecutive failures that open the circuit of strategy ``name``."""
        limits = self.strategy_limits.get(name)
        if limits and limits.circuit_breaker_threshold:
            return limits.circuit_breaker_threshold
        return self.circuit_breaker_threshold

    @model_validator(mode="after")
    def _cap_holds_a_useful_share(self) -> CoordinatorConfig:
        cap = self.per_strategy_max_cap
        if cap is not None and cap < self.min_useful_budget:
            raise ValueError(
                f"per_strategy_max_cap ({cap}) must be at least min_useful_budget "
                f"({self.min_useful_budget}): no strategy could receive a useful share"
            )
        return self

    @classmethod
    def coerce(cls, value: CoordinatorConfig | Mapping[str, Any] | None) -> CoordinatorConfig:
        """Accept a config, a mapping of its fields (a ``[coordinator]`` table) or None."""
        if isinstance(value, CoordinatorConfig):
            return value
        if value is None:
            return cls()
        return cls.model_validate(dict(value))


# ---- selection --------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class Selection:
    """What the selector decided: the candidates, the strategies that failed, those left out."""

    candidates: tuple[Candidate, ...]
    errors: Mapping[str, str] = attrs.field(factory=dict)  # strategy -> what went wrong
    dropped: Mapping[str, str] = attrs.field(factory=dict)  # strategy -> why it was left out


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _as_confidence(value: object) -> float | None:
    """``value`` as a float in [0, 1], or None when it is not a number or is NaN."""
    if not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if math.isnan(number):
        return None
    return min(1.0, max(0.0, number))


class ConfidenceWeightedSelector:
    """Keeps the strategies that can run and want to, weighted by their ``can_handle`` confidence.

    A strategy is left out when a backend of its ``capabilities.required_backends`` is missing
    (``can_handle`` is then not called), when its confidence is 0, or when its name repeats an
    earlier strategy's. A strategy whose ``name``, ``capabilities`` or ``can_handle`` raises, or
    whose ``can_handle`` returns something other than a number (or NaN), is left out and
    recorded in ``last_errors``. Confidences are clamped to ``[0, 1]``; those of the request's
    ``preferred_strategies`` are then multiplied by ``preference_boost`` and may exceed 1.0.
    """

    def __init__(self, config: CoordinatorConfig | None = None) -> None:
        self._config = config or CoordinatorConfig()
        #: strategy -> what went wrong, for the last ``select`` call.
        self.last_errors: Mapping[str, str] = {}
        #: strategy -> why it was left out (missing backend, confidence 0), last call.
        self.last_dropped: Mapping[str, str] = {}

    @property
    def config(self) -> CoordinatorConfig:
        return self._config

    def select(
        self,
        strategies: Sequence[ContextStrategy],
        request: ContextRequest,
        backends: BackendSet,
    ) -> list[Candidate]:
        """Candidates ordered by confidence desc, then name."""
        return list(self.evaluate(strategies, request, backends).candidates)

    def evaluate(
        self,
        strategies: Iterable[ContextStrategy],
        request: ContextRequest,
        backends: BackendSet,
    ) -> Selection:
        """Like ``select``, also returning the errors and the reasons strategies were left out."""
        available = backends.available()
        preferred = frozenset(request.preferred_strategies)
        boost = self._config.preference_boost
        seen: set[str] = set()
        candidates: list[Candidate] = []
        errors: dict[str, str] = {}
        dropped: dict[str, str] = {}
        for strategy in strategies:
            try:
                name = strategy.name
            except Exception as exc:
                errors[f"<{type(strategy).__qualname__}>"] = f"name raised {_describe(exc)}"
                continue
            if not isinstance(name, str) or not name:
                errors[f"<{type(strategy).__qualname__}>"] = (
                    f"name is {name!r}, expected a non-empty str"
                )
                continue
            if name in seen:
                errors[name] = "another strategy has the same name; only the first one is used"
                continue
            seen.add(name)
            try:
                required = strategy.capabilities.required_backends
            except Exception as exc:
                errors[name] = f"capabilities raised {_describe(exc)}"
                continue
            missing = required - available
            if missing:
                dropped[name] = f"missing backend(s): {', '.join(sorted(missing))}"
                continue
            try:
                raw = strategy.can_handle(request, backends)
            except Exception as exc:
                errors[name] = f"can_handle raised {_describe(exc)}"
                continue
            confidence = _as_confidence(raw)
            if confidence is None:
                errors[name] = (
                    f"can_handle returned {_short_repr(raw)} ({type(raw).__name__}), "
                    "expected a number in [0, 1]"
                )
                continue
            if confidence <= 0.0:
                dropped[name] = "confidence 0"
                continue
            if name in preferred:
                confidence *= boost
            candidates.append(Candidate(strategy=strategy, confidence=confidence))
        candidates.sort(key=lambda c: (-c.confidence, c.name))
        for name, message in errors.items():
            logger.warning("strategy %s left out: %s", name, message)
        self.last_errors = errors
        self.last_dropped = dropped
        return Selection(candidates=tuple(candidates), errors=errors, dropped=dropped)


def _short_repr(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---- allocation -------------------------------------------------------------------------------


def _integer_weights(values: Sequence[float]) -> list[int]:
    """Positive finite floats as integers in exactly the same proportions.

    A float is ``n / 2**k``; scaling all of them to the largest ``2**k`` makes them integers,
    so the shares below are computed exactly (and much faster than with ``Fraction``).
    """
    ratios = [float(value).as_integer_ratio() for value in values]
    shift = max(d.bit_length() for _, d in ratios)
    return [n << (shift - d.bit_length()) for n, d in ratios]


def _largest_remainder(weights: Sequence[int], names: Sequence[str], total: int) -> list[int]:
    """Integer shares of ``total`` proportional to ``weights`` (all > 0), summing to ``total``.

    Exact integer arithmetic; the tokens left after flooring go to the largest remainders,
    ties broken by name, then position.
    """
    denominator = sum(weights)
    shares: list[int] = []
    remainders: list[int] = []
    for weight in weights:
        share, remainder = divmod(total * weight, denominator)
        shares.append(share)
        remainders.append(remainder)
    leftover = total - sum(shares)
    if leftover:
        order = sorted(range(len(shares)), key=lambda i: (-remainders[i], names[i], i))
        for i in order[:leftover]:
            shares[i] += 1
    return shares


def _capped_shares(
    weights: Sequence[int], names: Sequence[str], total: int, cap: int | None
) -> list[int]:
    """Proportional shares where no share exceeds ``cap``; excess goes to the uncapped ones.

    Re-sharing the remaining tokens among the uncapped strategies is the same as
    redistributing the excess in proportion to confidence; it is repeated until no share
    exceeds the cap. When every share is capped the rest is left unallocated.
    """
    shares = [0] * len(weights)
    free = list(range(len(weights)))
    remaining = total
    while free and remaining > 0:
        split = _largest_remainder([weights[i] for i in free], [names[i] for i in free], remaining)
        over = {i for i, s in zip(free, split, strict=True) if cap is not None and s > cap}
        if not over:
            for i, s in zip(free, split, strict=True):
                shares[i] = s
            break
        assert cap is not None
        for i in over:
            shares[i] = cap
        remaining -= cap * len(over)
        free = [i for i in free if i not in over]
    return shares


class ProportionalBudgetAllocator:
    """Shares the budget in proportion to confidence (largest-remainder rounding).

    * The shares sum exactly to ``total_budget``, except when every strategy is held at
      ``per_strategy_max_cap``: the rest is then left unallocated.
    * A strategy whose share would fall below ``min_useful_budget`` is excluded and the shares
      are recomputed among the others, weakest first (lowest confidence, then the later name),
      until every remaining share is useful. The best strategy is never excluded: if even the
      whole budget is below ``min_useful_budget`` it gets all of it (context is always produced).
    * ``per_strategy_max_cap`` clamps each share; the excess is re-shared, in proportion, among
      the uncapped strategies, and capped again, until stable.

    Allocations come in confidence desc, name order, each with at least one token.
    """

    def __init__(self, config: CoordinatorConfig | None = None) -> None:
        self._config = config or CoordinatorConfig()

    @property
    def config(self) -> CoordinatorConfig:
        return self._config

    def allocate(
        self, candidates: Sequence[Candidate], total_budget: int, request: ContextRequest
    ) -> list[Allocation]:
        """Allocations whose tokens sum to at most ``total_budget``."""
        if total_budget <= 0:
            return []
        usable: list[tuple[float, str, int, Candidate]] = []
        seen: set[str] = set()
        for index, candidate in enumerate(candidates):
            confidence = candidate.confidence
            if candidate.name in seen or not math.isfinite(confidence) or confidence <= 0.0:
                continue
            seen.add(candidate.name)
            usable.append((-confidence, candidate.name, index, candidate))
        if not usable:
            return []
        usable.sort(key=lambda entry: entry[:3])
        ranked = [entry[3] for entry in usable]
        weights = _integer_weights([c.confidence for c in ranked])
        names = [c.name for c in ranked]
        cap = self._config.per_strategy_max_cap
        minimum = self._config.min_useful_budget
        kept = len(ranked)
        while True:
            shares = _capped_shares(weights[:kept], names[:kept], total_budget, cap)
            # Shares never increase down the ranking, so the last one is the smallest.
            if kept == 1 or shares[-1] >= minimum:
                break
            kept -= 1
        return [
            Allocation(strategy=c.strategy, confidence=c.confidence, tokens=s)
            for c, s in zip(ranked[:kept], shares, strict=True)
            if s > 0
        ]


# ---- execution --------------------------------------------------------------------------------


@attrs.define(slots=True)
class _Circuit:
    failures: int = 0
    opened_at: float | None = None
    trial_in_flight: bool = False


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


class _WorkerPool:
    """Daemon threads that run jobs, kept between rounds (at most ``keep`` of them idle).

    Starting threads every round costs a hand-off per thread; idle workers only need a queue
    put. A worker stuck in a strategy that never returns is simply not idle: later rounds start
    new workers, so it can delay nothing but itself. Daemon threads never hold up exit.
    """

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._idle = 0
        self._closed = False
        self._pid = os.getpid()
        self._serial = itertools.count()

    def run(self, job: Callable[[], None], copies: int) -> int:
        """Run ``copies`` copies of ``job``, each on its own worker; returns how many could."""
        with self._lock:
            if self._pid != os.getpid():  # a forked child has none of the parent's threads
                self._jobs, self._idle, self._pid = queue.SimpleQueue(), 0, os.getpid()
            self._closed = False
            reused = min(self._idle, copies)
            self._idle -= reused
            jobs = self._jobs
        for _ in range(copies):
            jobs.put(job)
        running = reused
        for _ in range(copies - reused):
            thread = threading.Thread(
                target=self._work,
                args=(jobs,),
                name=f"contextfuse-strategy-{next(self._serial)}",
                daemon=True,
            )
            try:
                thread.start()
            except RuntimeError:  # "can't start new thread": make do with the workers we have
                logger.exception("could not start a strategy worker")
                break
            running += 1
        return running

    def _work(self, jobs: queue.SimpleQueue[Callable[[], None] | None]) -> None:
        while (job := jobs.get()) is not None:
            try:
                job()
            except BaseException:  # a job is ours and catches strategy errors; never die silently
                logger.exception("strategy worker job failed")
            with self._lock:
                if self._closed or jobs is not self._jobs or self._idle >= self._keep:
                    return
                self._idle += 1

    def close(self) -> None:
        """Let the idle workers exit (a busy one exits when its job ends)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, 0
            jobs = self._jobs
        for _ in range(idle):
            jobs.put(None)


class _Round:
    """The shared state of one execution round: tasks are claimed by worker threads."""

    __slots__ = ("_count", "_lock", "_next", "closed", "done", "outcomes", "pending", "started")

    def __init__(self, count: int) -> None:
        self._lock = threading.Lock()
        self._next = 0
        self._count = count
        self.closed = False
        self.pending = count
        self.done = threading.Event()
        self.outcomes: list[_Outcome | None] = [None] * count
        self.started: list[float | None] = [None] * count

    def claim(self) -> int | None:
        with self._lock:
            if self.closed or self._next >= self._count:
                return None
            index = self._next
            self._next += 1
            self.started[index] = time.perf_counter()
            return index

    def finish(self, index: int, outcome: _Outcome) -> None:
        with self._lock:
            if self.closed:  # the round is over: a late result is dropped
                return
            self.outcomes[index] = outcome
            self.pending -= 1
            if self.pending == 0:
                self.done.set()

    def close(self) -> tuple[list[_Outcome | None], list[float | None]]:
        with self._lock:
            self.closed = True
            return list(self.outcomes), list(self.started)


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
    replace, so it cannot hold up later rounds or interpreter exit.

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
        self._clock = clock
        self._lock = threading.Lock()
        self._circuits: dict[str, _Circuit] = {}
        self._pool = _WorkerPool(keep=self._config.executor_max_workers)
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
        with self._lock:
            circuit = self._circuits.get(name)
            if circuit is None or circuit.opened_at is None:
                return "closed"
            if self._clock() - circuit.opened_at >= self._config.circuit_breaker_cooldown:
                return "half_open"
            return "open"

    def consecutive_failures(self, name: str) -> int:
        """Failures of ``name`` since its last success."""
        with self._lock:
            circuit = self._circuits.get(name)
            return 0 if circuit is None else circuit.failures

    def is_blocked(self, name: str) -> bool:
        """True when a call to ``name`` would not go through now (open, or its trial running)."""
        with self._lock:
            circuit = self._circuits.get(name)
            if circuit is None or circuit.opened_at is None:
                return False
            if circuit.trial_in_flight:
                return True
            return self._clock() - circuit.opened_at < self._config.circuit_breaker_cooldown

    def reset_circuits(self) -> None:
        """Close every circuit and forget all failures."""
        with self._lock:
            self._circuits.clear()

    def _admit(self, name: str) -> tuple[bool, bool]:
        """(may run, is the half-open trial)."""
        with self._lock:
            circuit = self._circuits.get(name)
            if circuit is None or circuit.opened_at is None:
                return True, False
            if circuit.trial_in_flight:
                return False, False
            if self._clock() - circuit.opened_at >= self._config.circuit_breaker_cooldown:
                circuit.trial_in_flight = True
                return True, True
            return False, False

    def _record(self, name: str, *, failed: bool | None, trial: bool) -> str | None:
        """Record a run (``failed=None``: did not run). Returns a message when the circuit opens."""
        with self._lock:
            circuit = self._circuits.get(name)
            if failed is None:
                if trial and circuit is not None:
                    circuit.trial_in_flight = False
                return None
            if not failed:
                self._circuits.pop(name, None)
                return None
            if circuit is None:
                circuit = self._circuits[name] = _Circuit()
            circuit.failures += 1
            cooldown = self._config.circuit_breaker_cooldown
            if trial:
                circuit.trial_in_flight = False
                circuit.opened_at = self._clock()
                return f"trial call failed: circuit re-opened for {cooldown:g} s"
            threshold = self._config.threshold_for(name)
            if circuit.opened_at is None and circuit.failures >= threshold:
                circuit.opened_at = self._clock()
                return (
                    f"circuit opened after {circuit.failures} consecutive failures "
                    f"for {cooldown:g} s"
                )
            return None

    def _open_message(self, name: str) -> str:
        with self._lock:
            circuit = self._circuits.get(name)
            if circuit is None or circuit.opened_at is None:
                return "circuit open"
            if circuit.trial_in_flight:
                return "circuit half-open: a trial call is already running"
            left = self._config.circuit_breaker_cooldown - (self._clock() - circuit.opened_at)
            return (
                f"circuit open after {circuit.failures} consecutive failures; "
                f"next trial in {max(0.0, left):.1f} s"
            )

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
                    stats={"status": _SKIPPED, "allocation": allocation.tokens},
                )
                continue
            admitted, trial = self._admit(name)
            if not admitted:
                broken.append(name)
                results[index] = ContextStrategyResult(
                    strategy_name=name,
                    errors=(self._open_message(name),),
                    stats={"status": _CIRCUIT_OPEN, "allocation": allocation.tokens},
                )
                continue
            tasks.append(_Task(index=index, allocation=allocation, trial=trial))

        trimmed: dict[str, int] = {}
        outcomes = self._run_round(tasks, request, backends, plan_context)
        for task, outcome in zip(tasks, outcomes, strict=True):
            name = task.allocation.name
            result = outcome.result
            ran = result.stats.get("status") != _NOT_STARTED
            message = self._record(name, failed=outcome.failed if ran else None, trial=task.trial)
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
        # The round waits for the slowest allowance; each strategy is held to its own.
        state = _Round(len(tasks))

        def work() -> None:
            while (index := state.claim()) is not None:
                allocation = tasks[index].allocation
                try:
                    outcome = _run_strategy(
                        allocation,
                        request,
                        backends,
                        plan_context,
                        config.max_fragments_for(allocation.name),
                    )
                except Exception as exc:  # a bug of ours must not leave the round waiting
                    logger.exception("executor failed on strategy %s", allocation.name)
                    outcome = _failure(allocation, f"executor error {_describe(exc)}", _ERROR, 0.0)
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
    return _Outcome(result=result, failed=status != _NOT_STARTED)


def _unfinished(
    allocation: Allocation, began: float | None, now: float, timeout: float, workers: int
) -> _Outcome:
    name = allocation.name
    if began is None:
        logger.warning("strategy %s not started within %g s", name, timeout)
        return _failure(
            allocation,
            f"not started: all {workers} worker(s) were busy until the {timeout:g} s deadline",
            _NOT_STARTED,
            0.0,
        )
    logger.warning("strategy %s timed out after %g s", name, timeout)
    return _failure(allocation, f"timed out after {timeout:g} s", _TIMEOUT, (now - began) * 1000.0)


def _run_strategy(
    allocation: Allocation,
    request: ContextRequest,
    backends: BackendSet,
    plan_context: PlanContext,
    max_fragments: int,
) -> _Outcome:
    """Call the strategy and turn whatever it does into a validated, limited result."""
    name = allocation.name
    tokens = allocation.tokens
    start = time.perf_counter()
    try:
        returned: object = allocation.strategy.assemble(
            request, backends, ContextBudget.of(tokens), plan_context
        )
    except BaseException as exc:  # a strategy's failure (even SystemExit) must not kill the worker
        elapsed = (time.perf_counter() - start) * 1000.0
        logger.warning("strategy %s failed: %s", name, _describe(exc))
        logger.debug("strategy %s traceback", name, exc_info=exc)
        return _failure(allocation, f"raised {_describe(exc)}", _ERROR, elapsed)
    elapsed = (time.perf_counter() - start) * 1000.0
    if not isinstance(returned, (list, tuple)):
        message = f"returned {type(returned).__name__}, expected list[ContextFragment]"
        logger.warning("strategy %s %s", name, message)
        return _failure(allocation, message, _ERROR, elapsed)
    for position, item in enumerate(returned):
        if not isinstance(item, ContextFragment):
            message = (
                f"returned {type(item).__name__} at index {position}, "
                "expected list[ContextFragment]"
            )
            logger.warning("strategy %s %s", name, message)
            return _failure(allocation, message, _ERROR, elapsed)
    fragments: Sequence[ContextFragment] = returned
    kept, over_budget, over_count = _limit(fragments, tokens, max_fragments)
    returned_tokens = sum(f.token_count for f in fragments)
    used = sum(f.token_count for f in kept)
    errors: list[str] = []
    stats: dict[str, Any] = {
        "status": _OK,
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


# ---- the coordinator --------------------------------------------------------------------------


class CoordinationResult(BaseModel):
    """The outcome of one coordination round (``StrategyCoordinator.coordinate``).

    ``fragments``: the fragments of every successful run, concatenated in allocation order,
    each run's fragments in the strategy's own order (not re-sorted). ``strategies_used``: the
    strategies that ran successfully and contributed at least one fragment. ``allocations``:
    ``(name, confidence, tokens)`` per strategy given tokens. ``circuit_broken``: strategies
    skipped because their circuit was open. ``results``: one result per allocation.
    ``errors``: ``"<strategy>: <message>"`` for selection failures, failed runs and trims.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    fragments: list[ContextFragment] = Field(default_factory=list)
    strategies_used: list[str] = Field(default_factory=list)
    allocations: list[tuple[str, float, int]] = Field(default_factory=list)
    circuit_broken: list[str] = Field(default_factory=list)
    results: list[ContextStrategyResult] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    total_budget: int = Field(default=0, ge=0)

    @property
    def tokens_used(self) -> int:
        """Tokens of all the fragments (before any fusion)."""
        return sum(f.token_count for f in self.fragments)

    def ranks(self) -> dict[str, dict[str, int]]:
        """strategy -> {uko_node: rank in that strategy's own order} (``FragmentScorer``)."""
        ranks: dict[str, dict[str, int]] = {}
        for result in self.results:
            order = result.stats.get("rank_order")
            if not isinstance(order, list) or not _succeeded(result):
                continue
            ranks[result.strategy_name] = {node: rank for rank, node in enumerate(order)}
        return ranks

    def sources(self) -> dict[str, list[str]]:
        """uko_node -> the strategies that returned it, in allocation order."""
        sources: dict[str, list[str]] = {}
        for result in self.results:
            for node in dict.fromkeys(f.uko_node for f in result.fragments):
                sources.setdefault(node, []).append(result.strategy_name)
        return sources


def _succeeded(result: ContextStrategyResult) -> bool:
    status = result.stats.get("status")
    if status is not None:
        return bool(status == _OK)
    return bool(result.fragments) or not result.errors


def _in_strategy_order(result: ContextStrategyResult) -> list[ContextFragment]:
    """The result's fragments in the order the strategy returned them."""
    fragments = list(result.fragments)
    order = result.stats.get("fragment_order")
    if isinstance(order, list) and len(order) == len(fragments):
        position = {fid: i for i, fid in reversed(list(enumerate(order)))}
        if all(f.fragment_id in position for f in fragments):
            return sorted(fragments, key=lambda f: position[f.fragment_id])
    ranks = result.stats.get("rank_order")
    if isinstance(ranks, list):
        rank = {node: i for i, node in reversed(list(enumerate(ranks)))}
        return sorted(fragments, key=lambda f: rank.get(f.uko_node, len(rank)))
    return fragments


# strategy object -> whether it needed the v1 adapter. ``as_strategy`` inspects signatures and
# runs a runtime protocol check (~80 us a strategy); strategies are long-lived, so remember it.
_V1_BY_OBJECT: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
_V1_LOCK = threading.Lock()


def _adapt(obj: Any) -> ContextStrategy:
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
        self._selector = selector or ConfidenceWeightedSelector(self._config)
        self._allocator = allocator or ProportionalBudgetAllocator(self._config)
        self._executor = executor or ParallelStrategyExecutor(self._config)

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
        if isinstance(self._selector, ConfidenceWeightedSelector):
            selection = self._selector.evaluate(pool, req, backend_set)
            candidates = list(selection.candidates)
            selection_errors: Mapping[str, str] = selection.errors
        else:
            candidates = list(self._selector.select(pool, req, backend_set))
            found = getattr(self._selector, "last_errors", None)
            selection_errors = found if isinstance(found, Mapping) else {}
        errors.extend(f"{name}: {message}" for name, message in selection_errors.items())

        circuit_broken: list[str] = []
        if isinstance(self._executor, ParallelStrategyExecutor):
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
            if not _succeeded(result) or not result.fragments:
                continue
            gathered.extend(_in_strategy_order(result))
            used.append(result.strategy_name)

        return CoordinationResult(
            fragments=gathered,
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
