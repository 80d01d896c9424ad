"""The plan and decision store: plans under parent plans, decisions, supersession."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb import open_plan_store
from contextfuse.kb.plans import SQLitePlanStore


@pytest.fixture
def store(repo: Path) -> Iterator[SQLitePlanStore]:
    opened = open_plan_store(repo)
    yield opened
    opened.close()


def hierarchy(store: SQLitePlanStore) -> dict[str, Any]:
    """Three levels: release > storage > index format, with a superseded decision."""
    root = store.add_plan("Ship release 2", "Everything for the second release.")
    storage = store.add_plan("Storage layer", "Where the data lives.", parent=root.id)
    fmt = store.add_plan("Index file format", parent=storage.id)
    wal = store.decide(root.id, "Support Linux and macOS only")
    files = store.decide(storage.id, "Keep data in JSON files")
    sqlite = store.decide(storage.id, "Keep data in SQLite", supersedes=[files.id])
    one = store.decide(fmt.id, "One index file per repository", "WAL journal mode.")
    return {
        "root": root,
        "storage": storage,
        "format": fmt,
        "platforms": wal,
        "files": files,
        "sqlite": sqlite,
        "one": one,
    }


def test_a_new_plan_is_active_with_a_ulid_and_a_plan_uri(store: SQLitePlanStore) -> None:
    plan = store.add_plan("Refactor the packer")
    assert plan.status == "active"
    assert len(plan.id) == 26
    assert plan.uri == f"plan://shop-repo/{plan.id}"
    assert plan.tier == "warm"


def test_the_plan_context_holds_the_plan_then_its_ancestors(store: SQLitePlanStore) -> None:
    made = hierarchy(store)
    context = store.get_plan(made["format"].id)
    assert context is not None
    assert [p.title for p in context.plans] == [
        "Index file format",
        "Storage layer",
        "Ship release 2",
    ]
    assert context.parent_plan_ids == (made["storage"].id, made["root"].id)
    assert context.goal == "Index file format"


def test_decisions_come_nearest_plan_first_newest_first(store: SQLitePlanStore) -> None:
    made = hierarchy(store)
    context = store.get_plan(made["format"].id)
    assert context is not None
    assert [d.title for d in context.decision_records] == [
        "One index file per repository",
        "Keep data in SQLite",
        "Keep data in JSON files",
        "Support Linux and macOS only",
    ]
    assert context.decisions == tuple(d.id for d in context.decision_records)


def test_a_superseded_decision_says_by_which_and_is_no_longer_in_force(
    store: SQLitePlanStore,
) -> None:
    made = hierarchy(store)
    older = store.decision(made["files"].id)
    newer = store.decision(made["sqlite"].id)
    assert older is not None and newer is not None
    assert older.status == "superseded"
    assert older.superseded_by == (newer.id,)
    assert newer.supersedes == (older.id,)
    assert not older.in_force and newer.in_force


def test_a_plan_uri_works_where_an_id_does(store: SQLitePlanStore) -> None:
    made = hierarchy(store)
    by_uri = store.get_plan(made["storage"].uri)
    assert by_uri is not None and by_uri.plan_id == made["storage"].id


def test_closing_a_plan_makes_it_cold(store: SQLitePlanStore) -> None:
    plan = store.add_plan("Try a faster tokenizer")
    closed = store.close_plan(plan.id, "abandoned")
    assert (closed.status, closed.tier) == ("abandoned", "cold")


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (lambda s: s.add_plan("Child", parent="01J0000000000000000000000Z"), "no plan"),
        (lambda s: s.add_plan("   "), "needs a title"),
        (lambda s: s.decide("01J0000000000000000000000Z", "Use X"), "no plan"),
        (lambda s: s.close_plan("01J0000000000000000000000Z"), "no plan"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(
    store: SQLitePlanStore, action: Callable[[SQLitePlanStore], Any], message: str
) -> None:
    with pytest.raises(KnowledgeBaseError, match=message):
        action(store)


def test_a_decision_cannot_supersede_an_unknown_one_and_nothing_is_written(
    store: SQLitePlanStore,
) -> None:
    plan = store.add_plan("Caching")
    with pytest.raises(KnowledgeBaseError, match="no decision"):
        store.decide(plan.id, "Use an LRU", supersedes=["01J0000000000000000000000Z"])
    assert store.list_decisions(plan.id) == []


def test_a_closing_status_must_be_done_or_abandoned(store: SQLitePlanStore) -> None:
    plan = store.add_plan("Caching")
    with pytest.raises(KnowledgeBaseError, match="'done' or 'abandoned'"):
        store.close_plan(plan.id, "paused")


def test_search_finds_plans_and_decisions_by_their_text(store: SQLitePlanStore) -> None:
    made = hierarchy(store)
    uris = [h.uri for h in store.search("WAL journal")]
    assert uris[0] == made["one"].uri
    assert made["root"].uri in [h.uri for h in store.search("second release")]


def test_renderings_go_from_one_line_to_the_full_text(store: SQLitePlanStore) -> None:
    made = hierarchy(store)
    uri = made["sqlite"].uri
    by_depth = store.get_renderings([uri])[uri]
    assert sorted(by_depth) == [0, 4, 9]
    assert by_depth[0].content.count("\n") == 0
    assert "Supersedes: Keep data in JSON files" in by_depth[9].content
    assert all(r.token_count > 0 for r in by_depth.values())
    assert by_depth[0].token_count < by_depth[9].token_count


def test_plans_survive_a_rebuild_of_the_index(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    build(repo)
    with_store = open_plan_store(repo)
    plan = with_store.add_plan("Keep me")
    with_store.close()
    build(repo, rebuild=True)
    assert opened(repo).plans.get_plan(plan.id) is not None


def test_a_plan_can_be_added_before_the_repository_is_indexed(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    early = open_plan_store(repo)
    plan = early.add_plan("Before indexing")
    early.close()
    build(repo)
    assert opened(repo).plans.get_plan(plan.id).goal == "Before indexing"


def test_open_backends_fills_the_plans_backend(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    build(repo)
    assert opened(repo).plans is not None


def test_the_store_satisfies_the_plan_store_protocol(store: SQLitePlanStore) -> None:
    from contextfuse.backends import PlanStore

    assert isinstance(store, PlanStore)


def test_a_locked_index_is_a_clear_error_and_writes_nothing(repo: Path) -> None:
    import sqlite3

    from contextfuse.kb.store import Database

    store = open_plan_store(repo)
    locker = sqlite3.connect(store.database.path, isolation_level=None)
    try:
        locker.execute("BEGIN IMMEDIATE")
        impatient = Database(store.database.path)
        impatient.connection().execute("PRAGMA busy_timeout = 50")
        with pytest.raises(KnowledgeBaseError, match="try again"):
            SQLitePlanStore(impatient, "shop-repo").add_plan("Blocked")
        impatient.close()
        locker.execute("ROLLBACK")
        assert store.list_plans() == []
    finally:
        locker.close()
        store.close()
