"""A strategy run by the executor reads one state of the index, whatever commits meanwhile."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any, ClassVar

from contextfuse.backends import BackendSet
from contextfuse.components.coordination import ParallelStrategyExecutor
from contextfuse.components.protocols import Allocation
from contextfuse.kb import generation
from contextfuse.kb.store import Database
from contextfuse.models import ContextBudget, ContextFragment, ContextRequest, PlanContext


class TwoReads:
    """A strategy that reads the index's generation twice, another process committing a new
    one between the two reads; it records both."""

    name = "two-reads"
    capabilities: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        return 1.0

    def explain(self) -> str:
        return "reads the generation twice"

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[ContextFragment]:
        database: Database = backends.nodes.database
        self.seen.append(generation.read_key(database))
        with closing(sqlite3.connect(database.path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            generation.renew(other)
            other.execute("COMMIT")
        self.seen.append(generation.read_key(database))
        return []


def test_a_strategy_sees_one_generation_of_the_index_throughout_its_run(
    repo: Path, build: Callable[..., Any], opened: Callable[..., BackendSet]
) -> None:
    build(repo)
    backends = opened(repo)
    strategy = TwoReads()
    executor = ParallelStrategyExecutor()
    try:
        report = executor.execute(
            [Allocation(strategy=strategy, confidence=1.0, tokens=1000)],
            ContextRequest(query="anything"),
            backends,
            PlanContext(),
        )
    finally:
        executor.close()
    assert report.results[0].stats["status"] == "ok"
    assert len(strategy.seen) == 2
    assert strategy.seen[0] == strategy.seen[1]
    # The commit was real: a read after the run sees the new generation.
    assert generation.read_key(backends.nodes.database) != strategy.seen[0]


def test_backends_without_a_database_read_as_before() -> None:
    with BackendSet().reading():
        pass
