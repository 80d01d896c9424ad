"""ParallelStrategyExecutor: real threads, deadlines, result validation and circuit breakers."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from contextfuse.backends import BackendSet
from contextfuse.components.coordination import CoordinatorConfig, ParallelStrategyExecutor
from contextfuse.components.protocols import Allocation, ExecutionReport
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextRequest,
    ContextStrategyResult,
    FragmentProvenance,
    PlanContext,
    StrategyCapabilities,
)

Assemble = Callable[[ContextBudget], Any]

REQUEST = ContextRequest(query="where is the config parsed")
BACKENDS = BackendSet()
PLAN = PlanContext(plan_id="plan-1")


def frag(node: str, tokens: int = 10, relevance: float = 0.5, depth: int = 0) -> ContextFragment:
    return ContextFragment(
        uko_node=node,
        content=f"content of {node}",
        token_count=tokens,
        relevance_score=relevance,
        detail_depth=depth,
        provenance=FragmentProvenance(resource_uri=node),
    )


class Stub:
    """A strategy whose ``assemble`` is a function of the budget; counts its calls."""

    def __init__(self, name: str, assemble: Assemble | None = None) -> None:
        self._name = name
        self._assemble = assemble or (lambda budget: [])
        self.calls = 0
        self.budgets: list[int] = []
        self.seen: list[tuple[ContextRequest, BackendSet, PlanContext]] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> StrategyCapabilities:
        return StrategyCapabilities()

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        return 1.0

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> Any:
        self.calls += 1
        self.budgets.append(budget.available_tokens)
        self.seen.append((request, backends, plan_context))
        return self._assemble(budget)

    def explain(self) -> str:
        return "test stub"


def boom(budget: ContextBudget) -> Any:
    raise RuntimeError("boom")


def returns(value: Any) -> Assemble:
    return lambda budget: value


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event hung strategies wait on; set at teardown, then every new thread must end."""
    event = threading.Event()
    before = set(threading.enumerate())
    yield event
    event.set()
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=5)
        assert not thread.is_alive(), f"thread {thread.name} leaked"


def hangs(release: threading.Event) -> Assemble:
    def wait(budget: ContextBudget) -> list[ContextFragment]:
        release.wait(timeout=30)
        return [frag("project://p/late.py")]

    return wait


def executor(
    clock: Callable[[], float] = time.monotonic, **config: Any
) -> ParallelStrategyExecutor:
    return ParallelStrategyExecutor(CoordinatorConfig(**config), clock=clock)


def run(
    ex: ParallelStrategyExecutor, *allocated: tuple[Stub, int], confidence: float = 1.0
) -> ExecutionReport:
    allocations = [Allocation(strategy=s, confidence=confidence, tokens=t) for s, t in allocated]
    return ex.execute(allocations, REQUEST, BACKENDS, PLAN)


def result_of(report: ExecutionReport, name: str) -> ContextStrategyResult:
    matches = [r for r in report.results if r.strategy_name == name]
    assert len(matches) == 1
    result = matches[0]
    assert isinstance(result, ContextStrategyResult)
    return result


def status(report: ExecutionReport, name: str) -> str:
    return str(result_of(report, name).stats["status"])


# ---- running strategies -----------------------------------------------------------------------


def test_each_strategy_is_called_with_its_allocation_as_budget_and_the_round_inputs() -> None:
    a, b = Stub("a"), Stub("b")
    run(executor(), (a, 300), (b, 70))
    assert (a.budgets, b.budgets) == ([300], [70])
    assert a.seen == [(REQUEST, BACKENDS, PLAN)]


def test_there_is_one_result_per_allocation_in_allocation_order() -> None:
    report = run(executor(), (Stub("z"), 100), (Stub("a"), 100), (Stub("m"), 100))
    assert [r.strategy_name for r in report.results] == ["z", "a", "m"]


def test_a_successful_result_carries_fragments_tokens_and_timing() -> None:
    fragments = [frag("project://p/a.py", 40), frag("project://p/b.py", 30)]
    report = run(executor(), (Stub("s", returns(fragments)), 100))
    result = result_of(report, "s")
    assert result.stats["status"] == "ok"
    assert {f.uko_node for f in result.fragments} == {"project://p/a.py", "project://p/b.py"}
    assert (result.tokens_used, result.total_fragments, result.errors) == (70, 2, ())
    assert result.execution_time_ms >= 0.0


def test_strategies_run_in_parallel_up_to_max_workers() -> None:
    barrier = threading.Barrier(3, timeout=5)

    def meet(budget: ContextBudget) -> list[ContextFragment]:
        barrier.wait()  # breaks (and raises) unless all three run at the same time
        return []

    stubs = [Stub(n, meet) for n in ("a", "b", "c")]
    report = run(executor(executor_max_workers=3), *[(s, 100) for s in stubs])
    assert [r.stats["status"] for r in report.results] == ["ok", "ok", "ok"]


def test_a_strategy_that_raises_fails_without_affecting_the_others() -> None:
    good = Stub("good", returns([frag("project://p/a.py")]))
    report = run(executor(), (Stub("bad", boom), 100), (good, 100))
    bad = result_of(report, "bad")
    assert bad.stats["status"] == "error"
    assert bad.errors == ("raised RuntimeError: boom",)
    assert bad.fragments == ()
    assert status(report, "good") == "ok"


def test_a_strategy_raising_system_exit_is_a_failure_not_a_dead_round() -> None:
    def leave(budget: ContextBudget) -> Any:
        raise SystemExit(3)

    started = time.perf_counter()
    report = run(executor(executor_timeout=5.0), (Stub("quitter", leave), 100))
    assert time.perf_counter() - started < 2.0
    assert result_of(report, "quitter").errors == ("raised SystemExit: 3",)


@pytest.mark.parametrize(
    ("value", "type_name"),
    [("some text", "str"), (None, "NoneType"), ({"uko_node": "x"}, "dict"), (42, "int")],
)
def test_a_result_that_is_not_a_list_is_a_failure(value: Any, type_name: str) -> None:
    report = run(executor(), (Stub("odd", returns(value)), 100))
    result = result_of(report, "odd")
    assert result.stats["status"] == "error"
    assert result.errors == (f"returned {type_name}, expected list[ContextFragment]",)


def test_a_tuple_of_fragments_is_accepted() -> None:
    report = run(executor(), (Stub("t", returns((frag("project://p/a.py"),))), 100))
    assert status(report, "t") == "ok"


def test_a_list_holding_something_other_than_fragments_is_a_failure() -> None:
    bad = [frag("project://p/a.py"), {"uko_node": "project://p/b.py", "token_count": 3}]
    report = run(executor(), (Stub("dicts", returns(bad)), 100))
    result = result_of(report, "dicts")
    assert result.stats["status"] == "error"
    assert result.errors == ("returned dict at index 1, expected list[ContextFragment]",)
    assert result.fragments == ()


def test_a_result_over_its_allocation_is_trimmed_in_the_strategys_order_and_reported() -> None:
    sizes = [60, 50, 30, 20, 500]  # keep 60, skip 50, keep 30, skip 20 (110 > 100), skip 500
    fragments = [frag(f"project://p/f{i}.py", n) for i, n in enumerate(sizes)]
    ex = executor()
    report = run(ex, (Stub("greedy", returns(fragments)), 100))
    result = result_of(report, "greedy")
    assert result.stats["rank_order"] == ["project://p/f0.py", "project://p/f2.py"]
    assert result.tokens_used == 90
    assert result.total_fragments == 5
    assert report.trimmed == {"greedy": 660 - 90}
    assert result.stats["trimmed_tokens"] == 570
    assert result.stats["trimmed_fragments"] == 3
    assert result.errors == (
        "returned 660 tokens for an allocation of 100: dropped 3 fragment(s) that did not fit",
    )


def test_a_trimmed_result_still_counts_as_a_success() -> None:
    ex = executor(circuit_breaker_threshold=1)
    big = Stub("big", returns([frag("project://p/a.py", 10_000)]))
    report = run(ex, (big, 100))
    assert status(report, "big") == "ok"
    assert ex.circuit_state("big") == "closed"


def test_at_most_max_fragments_per_strategy_are_kept_the_first_ones() -> None:
    fragments = [frag(f"project://p/f{i}.py", 1) for i in range(5)]
    report = run(executor(max_fragments_per_strategy=3), (Stub("many", returns(fragments)), 100))
    result = result_of(report, "many")
    assert result.stats["rank_order"] == [f"project://p/f{i}.py" for i in range(3)]
    assert result.total_fragments == 5
    assert report.trimmed == {"many": 2}
    assert "kept at most 3 (max_fragments_per_strategy), dropped 2" in result.errors[0]


def test_the_strategys_own_order_survives_in_rank_order_first_occurrence_only() -> None:
    returned = [
        frag("project://p/low.py", relevance=0.1, depth=9),
        frag("project://p/high.py", relevance=0.9),
        frag("project://p/low.py", relevance=0.1, depth=2),
        frag("project://p/mid.py", relevance=0.5),
    ]
    report = run(executor(), (Stub("recency", returns(returned)), 1000))
    result = result_of(report, "recency")
    assert result.fragments[0].uko_node == "project://p/high.py"  # re-sorted by relevance
    assert result.stats["rank_order"] == [
        "project://p/low.py",
        "project://p/high.py",
        "project://p/mid.py",
    ]
    assert result.stats["fragment_order"] == [f.fragment_id for f in returned]


def test_a_zero_token_allocation_is_not_run() -> None:
    stub = Stub("empty")
    report = run(executor(), (stub, 0))
    assert stub.calls == 0
    assert status(report, "empty") == "skipped"


# ---- deadlines --------------------------------------------------------------------------------


def test_a_hung_strategy_times_out_and_the_round_returns_shortly_after_the_timeout(
    release: threading.Event,
) -> None:
    good = Stub("good", returns([frag("project://p/a.py")]))
    started = time.perf_counter()
    report = run(executor(executor_timeout=0.2), (Stub("stuck", hangs(release)), 100), (good, 100))
    elapsed = time.perf_counter() - started
    assert 0.2 <= elapsed < 1.0
    stuck = result_of(report, "stuck")
    assert stuck.stats["status"] == "timeout"
    assert stuck.errors == ("timed out after 0.2 s",)
    assert stuck.execution_time_ms >= 150.0
    assert status(report, "good") == "ok"


def test_a_hung_strategy_does_not_hold_up_the_next_round(release: threading.Event) -> None:
    ex = executor(executor_timeout=0.5, executor_max_workers=1)
    run(ex, (Stub("stuck", hangs(release)), 100))  # its thread is still blocked
    started = time.perf_counter()
    report = run(ex, (Stub("quick", returns([frag("project://p/a.py")])), 100))
    assert time.perf_counter() - started < 0.4  # did not wait for the stuck worker
    assert status(report, "quick") == "ok"


def test_a_result_arriving_after_the_deadline_is_ignored(release: threading.Event) -> None:
    ex = executor(executor_timeout=0.1)
    report = run(ex, (Stub("late", hangs(release)), 100))
    release.set()
    time.sleep(0.05)
    assert status(report, "late") == "timeout"
    assert result_of(report, "late").fragments == ()
    assert ex.consecutive_failures("late") == 1


def test_a_strategy_that_never_started_is_reported_and_not_held_against_its_circuit(
    release: threading.Event,
) -> None:
    ex = executor(executor_timeout=0.2, executor_max_workers=1, circuit_breaker_threshold=1)
    waiting = Stub("waiting")
    report = run(ex, (Stub("stuck", hangs(release)), 100), (waiting, 100))
    assert waiting.calls == 0
    assert status(report, "waiting") == "not_started"
    assert result_of(report, "waiting").errors == (
        "not started: all 1 worker(s) were busy until the 0.2 s deadline",
    )
    assert ex.circuit_state("waiting") == "closed"
    assert ex.circuit_state("stuck") == "open"


# ---- worker threads ---------------------------------------------------------------------------


def new_workers(before: set[threading.Thread]) -> set[threading.Thread]:
    return {
        t
        for t in threading.enumerate()
        if t not in before and t.name.startswith("contextfuse-strategy-")
    }


def all_end(threads: set[threading.Thread]) -> bool:
    for thread in threads:
        thread.join(timeout=5)
    return not any(t.is_alive() for t in threads)


def test_idle_workers_are_kept_between_rounds_up_to_max_workers() -> None:
    before = set(threading.enumerate())
    ex = executor(executor_max_workers=2)
    for _ in range(20):
        run(ex, (Stub("a"), 10), (Stub("b"), 10), (Stub("c"), 10))
    deadline = time.monotonic() + 5
    while len([t for t in new_workers(before) if t.is_alive()]) > 2:
        assert time.monotonic() < deadline, "more idle workers than executor_max_workers"
        time.sleep(0.01)
    assert new_workers(before)
    ex.close()


def test_close_stops_the_idle_workers() -> None:
    before = set(threading.enumerate())
    ex = executor()
    run(ex, (Stub("a"), 10), (Stub("b"), 10))
    workers = new_workers(before)
    ex.close()
    assert all_end(workers)


def test_a_closed_executor_still_runs_rounds() -> None:
    ex = executor()
    ex.close()
    assert status(run(ex, (Stub("a", returns([])), 10)), "a") == "ok"
    ex.close()


def test_dropping_the_executor_stops_its_workers() -> None:
    before = set(threading.enumerate())
    ex = executor()
    run(ex, (Stub("a"), 10), (Stub("b"), 10))
    workers = new_workers(before)
    del ex
    gc.collect()
    assert all_end(workers)


# ---- circuit breaker --------------------------------------------------------------------------

FAILURES: dict[str, Assemble] = {
    "exception": boom,
    "wrong type": returns("not a list"),
    "invalid fragment": returns([{"uko_node": "x"}]),
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_the_circuit_opens_after_threshold_consecutive_failures(failure: str) -> None:
    ex = executor(circuit_breaker_threshold=3)
    flaky = Stub("flaky", FAILURES[failure])
    for _ in range(3):
        assert run(ex, (flaky, 100)).circuit_broken == ()
    assert ex.circuit_state("flaky") == "open"
    report = run(ex, (flaky, 100))
    assert flaky.calls == 3
    assert report.circuit_broken == ("flaky",)
    assert status(report, "flaky") == "circuit_open"


def test_the_run_that_opens_the_circuit_says_so() -> None:
    ex = executor(circuit_breaker_threshold=2, circuit_breaker_cooldown=30.0)
    flaky = Stub("flaky", boom)
    run(ex, (flaky, 100))
    report = run(ex, (flaky, 100))
    assert result_of(report, "flaky").errors == (
        "raised RuntimeError: boom",
        "circuit opened after 2 consecutive failures for 30 s",
    )


def test_timeouts_count_as_failures(release: threading.Event) -> None:
    ex = executor(executor_timeout=0.1, circuit_breaker_threshold=2)
    stuck = Stub("stuck", hangs(release))
    run(ex, (stuck, 100))
    run(ex, (stuck, 100))
    assert ex.circuit_state("stuck") == "open"
    assert run(ex, (stuck, 100)).circuit_broken == ("stuck",)
    assert stuck.calls == 2


def test_a_success_resets_the_consecutive_failure_count() -> None:
    ex = executor(circuit_breaker_threshold=3)
    outcomes = iter([boom, boom, returns([]), boom, boom])
    flaky = Stub("flaky", lambda budget: next(outcomes)(budget))
    for _ in range(5):
        run(ex, (flaky, 100))
    assert ex.consecutive_failures("flaky") == 2
    assert ex.circuit_state("flaky") == "closed"


def test_circuits_are_per_strategy_name() -> None:
    ex = executor(circuit_breaker_threshold=1)
    run(ex, (Stub("bad", boom), 100), (Stub("good"), 100))
    report = run(ex, (Stub("bad"), 100), (Stub("good"), 100))
    assert report.circuit_broken == ("bad",)
    assert status(report, "good") == "ok"


def test_an_open_circuit_stays_open_until_the_cooldown_has_passed() -> None:
    clock = FakeClock()
    ex = executor(clock, circuit_breaker_threshold=1, circuit_breaker_cooldown=10.0)
    flaky = Stub("flaky", boom)
    run(ex, (flaky, 100))
    clock.advance(9.99)
    assert ex.circuit_state("flaky") == "open"
    assert run(ex, (flaky, 100)).circuit_broken == ("flaky",)
    assert flaky.calls == 1


def test_after_the_cooldown_one_trial_call_goes_through() -> None:
    clock = FakeClock()
    ex = executor(clock, circuit_breaker_threshold=1, circuit_breaker_cooldown=10.0)
    flaky = Stub("flaky", boom)
    run(ex, (flaky, 100))
    clock.advance(10.0)
    assert ex.circuit_state("flaky") == "half_open"
    report = run(ex, (flaky, 100))
    assert flaky.calls == 2
    assert report.circuit_broken == ()


def test_a_failed_trial_reopens_the_circuit_for_another_cooldown() -> None:
    clock = FakeClock()
    ex = executor(clock, circuit_breaker_threshold=2, circuit_breaker_cooldown=10.0)
    flaky = Stub("flaky", boom)
    run(ex, (flaky, 100))
    run(ex, (flaky, 100))
    clock.advance(10.0)
    trial = run(ex, (flaky, 100))
    assert "trial call failed: circuit re-opened for 10 s" in result_of(trial, "flaky").errors
    assert ex.circuit_state("flaky") == "open"
    clock.advance(9.0)
    assert run(ex, (flaky, 100)).circuit_broken == ("flaky",)
    clock.advance(1.0)
    run(ex, (flaky, 100))
    assert flaky.calls == 4


def test_a_successful_trial_closes_the_circuit_and_clears_the_failures() -> None:
    clock = FakeClock()
    ex = executor(clock, circuit_breaker_threshold=2, circuit_breaker_cooldown=10.0)
    outcomes = iter([boom, boom, returns([]), boom, returns([])])
    flaky = Stub("flaky", lambda budget: next(outcomes)(budget))
    run(ex, (flaky, 100))
    run(ex, (flaky, 100))
    clock.advance(10.0)
    assert status(run(ex, (flaky, 100)), "flaky") == "ok"
    assert (ex.circuit_state("flaky"), ex.consecutive_failures("flaky")) == ("closed", 0)
    run(ex, (flaky, 100))  # one failure: below the threshold again
    assert ex.circuit_state("flaky") == "closed"
    assert status(run(ex, (flaky, 100)), "flaky") == "ok"


def test_only_one_trial_call_goes_through_when_rounds_run_concurrently() -> None:
    clock = FakeClock()
    ex = executor(clock, circuit_breaker_threshold=1, circuit_breaker_cooldown=10.0)
    run(ex, (Stub("flaky", boom), 100))
    clock.advance(10.0)
    entered, leave = threading.Event(), threading.Event()

    def trial(budget: ContextBudget) -> list[ContextFragment]:
        entered.set()
        leave.wait(timeout=5)
        return []

    flaky = Stub("flaky", trial)
    reports: list[ExecutionReport] = []
    first = threading.Thread(target=lambda: reports.append(run(ex, (flaky, 100))))
    first.start()
    try:
        assert entered.wait(timeout=5)
        others: list[Sequence[str]] = []
        threads = [
            threading.Thread(target=lambda: others.append(run(ex, (flaky, 100)).circuit_broken))
            for _ in range(5)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=5)
        assert others == [("flaky",)] * 5
        assert ex.is_blocked("flaky")
    finally:
        leave.set()
        first.join(timeout=5)
    assert flaky.calls == 1
    assert status(reports[0], "flaky") == "ok"
    assert ex.circuit_state("flaky") == "closed"


def test_failures_from_concurrent_rounds_are_all_counted() -> None:
    ex = executor(circuit_breaker_threshold=1000)
    flaky = Stub("flaky", boom)
    threads = [threading.Thread(target=lambda: run(ex, (flaky, 100))) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert ex.consecutive_failures("flaky") == 20


def test_reset_circuits_closes_every_circuit() -> None:
    ex = executor(circuit_breaker_threshold=1)
    run(ex, (Stub("flaky", boom), 100))
    ex.reset_circuits()
    assert (ex.circuit_state("flaky"), ex.consecutive_failures("flaky")) == ("closed", 0)


def test_a_strategy_is_held_to_its_own_timeout(release: threading.Event) -> None:
    ex = executor(executor_timeout=5.0, strategy_limits={"stuck": {"timeout_seconds": 0.2}})
    good = Stub("good", returns([frag("project://p/a.py")]))
    started = time.perf_counter()
    report = run(ex, (Stub("stuck", hangs(release)), 100), (good, 100))
    assert time.perf_counter() - started < 1.0
    assert result_of(report, "stuck").errors == ("timed out after 0.2 s",)
    assert status(report, "good") == "ok"


def test_a_strategy_is_held_to_its_own_max_fragments() -> None:
    many = [frag(f"project://p/{i}.py", tokens=1) for i in range(10)]
    ex = executor(strategy_limits={"many": {"max_fragments": 3}})
    report = run(ex, (Stub("many", returns(many)), 100), (Stub("other", returns(many)), 100))
    assert len(result_of(report, "many").fragments) == 3
    assert len(result_of(report, "other").fragments) == 10


def test_a_strategy_is_held_to_its_own_breaker_threshold() -> None:
    ex = executor(
        circuit_breaker_threshold=5, strategy_limits={"fragile": {"circuit_breaker_threshold": 1}}
    )
    run(ex, (Stub("fragile", boom), 100), (Stub("sturdy", boom), 100))
    assert ex.circuit_state("fragile") == "open"
    assert ex.circuit_state("sturdy") == "closed"
