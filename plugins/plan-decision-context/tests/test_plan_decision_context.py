"""plan-decision-context on a repository with ADR files and a three-level plan hierarchy."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextfuse import hookimpl
from contextfuse.assembler import ContextAssembler
from contextfuse.backends import BackendSet
from contextfuse.config import ContextfuseConfig
from contextfuse.kb import index, open_backends, open_plan_store
from contextfuse.models import ContextFragment, ContextRequest, PlanContext
from contextfuse.plugin_manager import make_plugin_manager
from contextfuse.testing import assemble_with, assert_strategy_conforms
from contextfuse_plan_decision_context import PlanDecisionContextStrategy
from contextfuse_plan_decision_context import plugin as plugin_module

ADR_REDIS = """# 2. Keep sessions in Redis

Date: 2020-03-01

## Status

Superseded by [3. Keep sessions in PostgreSQL](0003-keep-sessions-in-postgresql.md)

## Context

Sessions must survive a restart of the web workers.
"""

ADR_POSTGRES = """---
status: accepted
date: 2021-06-01
---
# Keep sessions in PostgreSQL

## Context and Problem Statement

Redis lost sessions on failover; PostgreSQL is already operated and backed up.
"""

ADR_LOGGING = """# 1. Log in JSON

Date: 2019-01-01

## Status

Accepted

## Decision

Every service logs one JSON object per line.
"""


def git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada Tester",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada Tester",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo.parent),
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def make_repo(root: Path) -> Path:
    files = {
        "app/sessions.py": "def load_session(key):\n    return None\n",
        "docs/adr/0001-log-in-json.md": ADR_LOGGING,
        "docs/adr/0002-keep-sessions-in-redis.md": ADR_REDIS,
        "docs/adr/0003-keep-sessions-in-postgresql.md": ADR_POSTGRES,
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Sessions and their decision records")
    return root


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_repo(tmp_path_factory.mktemp("plans") / "webapp")
    index(root, pm=make_plugin_manager(autoload=False))
    return root


@pytest.fixture(scope="module")
def plans(repo: Path) -> dict[str, Any]:
    """Release > storage > sessions, with decisions at each level and one superseded."""
    store = open_plan_store(repo)
    try:
        release = store.add_plan("Release 3.0", "Everything that ships in 3.0.")
        storage = store.add_plan("Storage overhaul", "Fewer moving parts.", parent=release.id)
        sessions = store.add_plan("Move sessions", "Sessions off Redis.", parent=storage.id)
        made = {
            "release": release,
            "storage": storage,
            "sessions": sessions,
            "support": store.decide(release.id, "Support PostgreSQL 14 and later"),
            "cache": store.decide(storage.id, "Cache sessions in memory"),
        }
        made["table"] = store.decide(
            storage.id,
            "Store sessions in one table",
            "One table keyed by session key; rows expire by a timestamp column.",
            supersedes=[made["cache"].id],
        )
        made["expiry"] = store.decide(
            sessions.id, "Expire sessions nightly", "A nightly job deletes expired rows."
        )
        closed = store.add_plan("Old login rework")
        made["old"] = closed
        made["old_decision"] = store.decide(closed.id, "Use sessions for login")
        store.close_plan(closed.id)
    finally:
        store.close()
    return made


@pytest.fixture
def backends(repo: Path, plans: dict[str, Any]) -> Iterator[BackendSet]:
    opened = open_backends(repo)
    yield opened
    opened.nodes.close()


def run(
    backends: BackendSet, query: str = "", plan_id: str | None = None, tokens: int = 4000
) -> list[ContextFragment]:
    payload = assemble_with(
        PlanDecisionContextStrategy(),
        backends,
        ContextRequest(query=query, plan_id=plan_id),
        tokens,
        plan_context=PlanContext(plan_id=plan_id or ""),
    )
    return list(payload.fragments)


def titles(fragments: list[ContextFragment]) -> list[str]:
    return [f.content.split("\n", 1)[0].split("]: ", 1)[1] for f in fragments]


def test_the_strategy_conforms_to_the_protocol() -> None:
    assert_strategy_conforms(PlanDecisionContextStrategy())


def test_the_plugin_contributes_the_strategy() -> None:
    pm = make_plugin_manager(autoload=False)
    pm.register(plugin_module, name="plan-decision-context")
    assert "plan-decision-context" in {s.strategy.name for s in pm.strategy_sources()}


def test_a_plan_comes_with_its_ancestors_and_their_decisions_nearest_first(
    backends: BackendSet, plans: dict[str, Any]
) -> None:
    fragments = run(backends, plan_id=plans["sessions"].id)
    assert titles(fragments) == [
        "Move sessions",
        "Expire sessions nightly",
        "Storage overhaul",
        "Store sessions in one table",
        "Cache sessions in memory",
        "Release 3.0",
        "Support PostgreSQL 14 and later",
    ]
    relevance = [f.relevance_score for f in fragments if f.metadata["kind"] == "plan"]
    assert relevance == sorted(relevance, reverse=True)


def test_records_in_force_under_active_plans_are_warm_the_superseded_cold(
    backends: BackendSet, plans: dict[str, Any]
) -> None:
    by_uri = {f.uko_node: f for f in run(backends, plan_id=plans["sessions"].id)}
    assert by_uri[plans["sessions"].uri].tier == "warm"
    assert by_uri[plans["table"].uri].tier == "warm"
    assert by_uri[plans["cache"].uri].tier == "cold"
    assert by_uri[plans["cache"].uri].metadata["status"] == "superseded"


def test_a_closed_plan_and_its_decisions_are_cold(
    backends: BackendSet, plans: dict[str, Any]
) -> None:
    fragments = run(backends, plan_id=plans["old"].id)
    assert [f.tier for f in fragments] == ["cold", "cold"]


def test_a_large_budget_shows_decisions_in_force_in_full(
    backends: BackendSet, plans: dict[str, Any]
) -> None:
    by_uri = {f.uko_node: f for f in run(backends, plan_id=plans["sessions"].id)}
    table = by_uri[plans["table"].uri]
    assert table.detail_depth == 9
    assert "rows expire by a timestamp column" in table.content
    assert "Supersedes: Cache sessions in memory" in table.content
    assert by_uri[plans["cache"].uri].detail_depth <= 4  # superseded: a summary at most


def test_a_small_budget_still_lists_the_whole_chain_one_line_each(
    backends: BackendSet, plans: dict[str, Any]
) -> None:
    everything = run(backends, plan_id=plans["sessions"].id)
    lines = sum(len(f.content.split("\n", 1)[0]) for f in everything)
    small = run(backends, plan_id=plans["sessions"].id, tokens=lines // 2)
    assert len(small) == len(everything)
    assert sum(f.token_count for f in small) <= lines // 2
    assert {f.detail_depth for f in small} <= {0, 4, 9}
    assert small[0].uko_node == plans["sessions"].uri


def test_the_budget_is_never_exceeded(backends: BackendSet, plans: dict[str, Any]) -> None:
    for tokens in (5, 30, 80, 200, 1000):
        fragments = run(backends, plan_id=plans["sessions"].id, tokens=tokens)
        assert sum(f.token_count for f in fragments) <= tokens


def test_without_a_plan_decisions_matching_the_request_come_in_force_first(
    backends: BackendSet,
) -> None:
    fragments = run(backends, "where are sessions kept redis postgresql")
    assert fragments
    assert all(f.uko_node.startswith("decision://webapp/") for f in fragments)
    first = fragments[0]
    assert first.metadata["status"] in ("accepted", "proposed")
    assert "Keep sessions in Redis" in titles(fragments)


def test_an_imported_decision_points_to_its_adr_file(backends: BackendSet) -> None:
    fragments = run(backends, "log JSON object per line")
    adr = next(f for f in fragments if f.content.split("\n", 1)[0].endswith("Log in JSON"))
    assert adr.provenance.resource_uri == "project://webapp/docs/adr/0001-log-in-json.md"
    assert "Recorded in: docs/adr/0001-log-in-json.md" in adr.content


def test_an_adr_superseded_by_another_is_cold_and_says_by_which(
    backends: BackendSet,
) -> None:
    fragments = run(backends, "sessions redis")
    redis = next(f for f in fragments if f.content.split("\n", 1)[0].endswith("in Redis"))
    assert redis.tier == "cold"
    assert "Superseded by: Keep sessions in PostgreSQL" in redis.content


def test_confidence_is_high_with_a_known_plan_and_zero_without_anything(
    backends: BackendSet, plans: dict[str, Any]
) -> None:
    strategy = PlanDecisionContextStrategy()
    with_plan = ContextRequest(query="x", plan_id=plans["sessions"].id)
    assert strategy.can_handle(with_plan, backends) == 0.9
    assert strategy.can_handle(ContextRequest(query="sessions"), backends) > 0
    assert strategy.can_handle(ContextRequest(query="kubernetes"), backends) == 0.0
    assert strategy.can_handle(ContextRequest(query="sessions"), BackendSet()) == 0.0


def test_the_plan_id_flows_from_the_assembler_to_the_strategy(
    repo: Path, plans: dict[str, Any], contextfuse_strategy: Any
) -> None:
    pm = make_plugin_manager(autoload=False)
    pm.register(plugin_module, name="plan-decision-context")
    _provide_text_strategy(pm, contextfuse_strategy)
    assembler = ContextAssembler(repo, config=ContextfuseConfig(), plugin_manager=pm)
    try:
        payload = assembler.assemble(
            "expire sessions",
            3000,
            plan_id=plans["sessions"].id,
            strategies=["plan-decision-context"],
        )
    finally:
        assembler.close()
    assert payload.plan_id == plans["sessions"].id
    uris = {f.uko_node for f in payload.fragments}
    assert {plans["sessions"].uri, plans["storage"].uri, plans["release"].uri} <= uris


def _provide_text_strategy(pm: Any, build: Any) -> None:
    """Repository assembly needs a text strategy installed (the fallback chain ends there)."""

    class TextStrategy:
        @hookimpl
        def contextfuse_strategies(self) -> list[Any]:
            return [build("simple-keyword", uses_text=True)]

    pm.register(TextStrategy(), name="text-strategy")
