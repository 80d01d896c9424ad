"""A strategy past its time stops using the index: its reads are refused, its query stopped."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from contextfuse.backends import BackendSet
from contextfuse.components.coordination import CoordinatorConfig, ParallelStrategyExecutor
from contextfuse.components.protocols import Allocation
from contextfuse.deadline import deadline_scope
from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb import IndexStats, open_backends
from contextfuse.kb.store import Database
from contextfuse.models import ContextBudget, ContextRequest, PlanContext, StrategyCapabilities

TIMEOUT = 0.3
#: How long after its deadline a strategy may still read the index (one read in flight).
BOUND = 0.25


class StubbornReader:
    """A strategy that searches the index over and over for 3 s, whatever it is told."""

    name = "stubborn"
    capabilities = StrategyCapabilities(uses_text=True)

    def __init__(self) -> None:
        self.began = 0.0
        self.reads: list[float] = []
        self.refusals: list[tuple[float, str]] = []
        self.done = threading.Event()

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        return 1.0

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[Any]:
        self.began = time.monotonic()
        assert backends.text is not None
        try:
            while time.monotonic() < self.began + 3.0:
                try:
                    backends.text.search("shopping cart items owner", limit=20)
                    self.reads.append(time.monotonic())
                except KnowledgeBaseError as exc:  # it goes on regardless
                    self.refusals.append((time.monotonic(), str(exc)))
        finally:
            self.done.set()
        return []

    def explain(self) -> str:
        return "reads until stopped"


@pytest.fixture
def backends(indexed: tuple[Path, IndexStats]) -> Any:
    opened = open_backends(indexed[0])
    yield opened
    opened.nodes.close()


def run_past_its_timeout(backends: BackendSet) -> tuple[StubbornReader, str]:
    """One executor round of a :class:`StubbornReader`: the strategy and its status."""
    executor = ParallelStrategyExecutor(CoordinatorConfig(executor_timeout=TIMEOUT))
    strategy = StubbornReader()
    allocation = Allocation(strategy=strategy, confidence=1.0, tokens=1000)
    report = executor.execute([allocation], ContextRequest(query="cart"), backends, PlanContext())
    executor.close()
    return strategy, str(report.results[0].stats["status"])


def test_a_strategy_past_its_timeout_stops_reading_the_index_soon_after_its_deadline(
    backends: BackendSet,
) -> None:
    strategy, status = run_past_its_timeout(backends)
    assert status == "timeout"
    assert strategy.done.wait(10)

    deadline = strategy.began + TIMEOUT  # the executor set it a moment before
    assert strategy.reads, "the strategy read the index before its deadline"
    assert max(strategy.reads) < deadline + BOUND
    assert strategy.refusals
    assert min(when for when, _ in strategy.refusals) > deadline - 0.05
    assert "the time allowed for this work ran out" in strategy.refusals[0][1]


def test_the_index_still_answers_other_work_after_a_strategy_was_stopped(
    backends: BackendSet,
) -> None:
    strategy, _ = run_past_its_timeout(backends)
    assert backends.text is not None
    assert backends.text.search("shopping cart", limit=5)  # this thread has no deadline
    assert strategy.done.wait(10)


def test_a_long_query_is_stopped_soon_after_the_deadline_of_its_thread(tmp_path: Path) -> None:
    db = Database(tmp_path / "t.db")
    db.connection().execute("CREATE TABLE t (x)")
    db.connection().executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100_000)])
    started = time.monotonic()
    with deadline_scope(started + 0.2), pytest.raises(KnowledgeBaseError, match="ran out"):
        db.read("SELECT count(*) FROM t a, t b WHERE a.x + b.x = -1")  # minutes of work
    assert time.monotonic() - started < 0.2 + BOUND
    assert db.read("SELECT count(*) FROM t") == [(100_000,)]  # outside the scope: answered
    db.close()


def test_a_read_after_the_deadline_is_refused_at_once(tmp_path: Path) -> None:
    db = Database(tmp_path / "t.db")
    db.connection().execute("CREATE TABLE t (x)")
    with deadline_scope(time.monotonic() - 1), pytest.raises(KnowledgeBaseError, match="ran out"):
        db.read("SELECT 1")
    db.close()
