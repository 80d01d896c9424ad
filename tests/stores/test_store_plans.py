"""The plan and decision store behaves the same in every store (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from contextfuse.backends import BackendSet, PlanStore
from contextfuse.errors import KnowledgeBaseError
from contextfuse.models import Decision, Plan

from .conftest import Store

Indexed = tuple[Store, Path, BackendSet]


def test_the_plan_store_implements_the_protocol(indexed_shop: Indexed) -> None:
    assert isinstance(indexed_shop[2].plans, PlanStore)


def test_a_plan_comes_with_its_ancestors_and_their_decisions_nearest_first(
    indexed_shop: Indexed,
) -> None:
    plans = indexed_shop[2].plans
    root = plans.add_plan("Ship the cart", "The cart ships in May.")
    child = plans.add_plan("Add the checkout", parent=root.uri)
    early = plans.decide(root.id, "Carts are kept in the session")
    late = plans.decide(root.id, "Carts expire after a day")
    mine = plans.decide(child.id, "Checkout uses the payment gateway")
    context = plans.get_plan(child.id)
    assert context is not None
    assert [p.id for p in context.plans] == [child.id, root.id]
    assert context.parent_plan_ids == (root.id,)
    assert context.goal == "Add the checkout"
    assert context.decisions == (mine.id, late.id, early.id)
    assert plans.get_plan(child.uri) == context


def test_an_unknown_plan_is_none(indexed_shop: Indexed) -> None:
    assert indexed_shop[2].plans.get_plan("01J00000000000000000000000") is None


def test_a_decision_that_supersedes_another_marks_it_superseded(indexed_shop: Indexed) -> None:
    plans = indexed_shop[2].plans
    plan = plans.add_plan("Store carts")
    old = plans.decide(plan.id, "Keep carts in memory")
    new = plans.decide(plan.id, "Keep carts in the database", supersedes=[old.id])
    records = plans.get_records([old.uri, new.uri])
    before, after = records[old.uri], records[new.uri]
    assert isinstance(before, Decision) and isinstance(after, Decision)
    assert (before.status, before.superseded_by, before.in_force) == (
        "superseded",
        (new.id,),
        False,
    )
    assert after.supersedes == (old.id,)


def test_writes_name_what_is_missing(indexed_shop: Indexed) -> None:
    plans = indexed_shop[2].plans
    plan = plans.add_plan("Real plan")
    with pytest.raises(KnowledgeBaseError, match="no plan"):
        plans.decide("01J00000000000000000000000", "Orphan")
    with pytest.raises(KnowledgeBaseError, match="to supersede"):
        plans.decide(plan.id, "Replaces nothing", supersedes=["01J00000000000000000000000"])
    with pytest.raises(KnowledgeBaseError, match="needs a title"):
        plans.add_plan("  ")
    with pytest.raises(KnowledgeBaseError, match="'done' or 'abandoned'"):
        plans.close_plan(plan.id, "paused")


def test_a_closed_plan_keeps_its_status(indexed_shop: Indexed) -> None:
    plans = indexed_shop[2].plans
    plan = plans.add_plan("Try a thing")
    plans.close_plan(plan.uri, "abandoned")
    found = plans.get_records([plan.uri])[plan.uri]
    assert isinstance(found, Plan) and (found.status, found.tier) == ("abandoned", "cold")


def test_search_finds_plans_and_decisions_by_words_and_identifier_parts(
    indexed_shop: Indexed,
) -> None:
    plans = indexed_shop[2].plans
    plan = plans.add_plan("Speed up slugify", "Profile the helper first.")
    decision = plans.decide(plan.id, "Cache the results", "Wrap ShoppingCart.recount in a cache.")
    assert [h.uri for h in plans.search("slugify")] == [plan.uri]
    assert [h.uri for h in plans.search("shopping cart")] == [decision.uri]
    assert [h.uri for h in plans.search("recount")] == [decision.uri]


def test_search_ranks_a_title_match_above_a_body_match(indexed_shop: Indexed) -> None:
    plans = indexed_shop[2].plans
    plan = plans.add_plan("Checkout")
    in_body = plans.decide(plan.id, "Use one form", "The invoice is printed at the end.")
    in_title = plans.decide(plan.id, "Print the invoice", "At the end of the checkout.")
    hits = plans.search("invoice")
    assert [h.uri for h in hits] == [in_title.uri, in_body.uri]
    assert hits[0].score > hits[1].score > 0


@pytest.mark.parametrize("query", ["'; DROP TABLE x; --", "a & b | !c", '"unclosed', "\\", ""])
def test_hostile_plan_queries_are_searched_safely(indexed_shop: Indexed, query: str) -> None:
    plans = indexed_shop[2].plans
    plans.add_plan("A plan about drop tables")
    assert isinstance(plans.search(query), list)


def test_records_are_read_by_uri_and_missing_ones_left_out(indexed_shop: Indexed) -> None:
    plans = indexed_shop[2].plans
    plan = plans.add_plan("Read me")
    decision = plans.decide(plan.id, "Read me too")
    missing = f"decision://{plans.project}/01J00000000000000000000000"
    found = plans.get_records([plan.uri, decision.uri, missing])
    assert set(found) == {plan.uri, decision.uri}
    assert found[decision.uri].title == "Read me too"


def test_renderings_are_a_line_a_summary_and_the_whole_record(indexed_shop: Indexed) -> None:
    plans = indexed_shop[2].plans
    plan = plans.add_plan("Ship it", "First paragraph.\n\nSecond paragraph.")
    decision = plans.decide(plan.id, "Ship on Friday")
    renderings = plans.get_renderings([plan.uri, decision.uri])
    shown = renderings[plan.uri]
    assert sorted(shown) == [0, 4, 9]
    assert shown[0].content == f"Plan {plan.id} [active]: Ship it"
    assert "Second paragraph." not in shown[4].content
    assert "Second paragraph." in shown[9].content
    assert f"Plan: Ship it ({plan.id})" in renderings[decision.uri][4].content
    assert all(r.token_count > 0 for r in shown.values())
    assert sorted(plans.get_renderings([plan.uri], [0])[plan.uri]) == [0]


def test_plans_survive_a_rebuild_of_the_index(indexed_shop: Indexed) -> None:
    store, root, kb = indexed_shop
    plan = kb.plans.add_plan("Outlive the index")
    store.index(root, rebuild=True)
    assert store.open(root).plans.get_plan(plan.id) is not None


def test_two_projects_in_one_store_do_not_see_each_other_s_plans(
    store: Store, tmp_path: Path, write: Callable[[Path, dict[str, str]], None]
) -> None:
    first, second = tmp_path / "plans-alpha", tmp_path / "plans-beta"
    write(first, {"a.py": "A = 1\n"})
    write(second, {"b.py": "B = 2\n"})
    store.index(first)
    store.index(second)
    alpha, beta = store.open(first).plans, store.open(second).plans
    plan = alpha.add_plan("Only in alpha")
    assert beta.get_plan(plan.id) is None
    assert beta.search("alpha") == []
    assert beta.get_records([f"plan://{beta.project}/{plan.id}"]) == {}


NYGARD_REDIS = """# 2. Store carts in Redis

Date: 2019-05-01

## Status

Superseded by [3. Store carts in PostgreSQL](0003-store-carts-in-postgresql.md)

## Context

Carts must survive a restart.
"""

MADR_POSTGRES = """---
status: accepted
date: 2020-01-15
---
# Store carts in PostgreSQL

Redis lost carts on failover. Supersedes ADR-0002.
"""

ADRS = {
    "docs/adr/0002-store-carts-in-redis.md": NYGARD_REDIS,
    "docs/adr/0003-store-carts-in-postgresql.md": MADR_POSTGRES,
    "docs/adr/README.md": "# Decisions\n\nThe index of our ADRs.\n",
}


def imported(kb: BackendSet) -> dict[str, Decision]:
    return {d.title: d for d in kb.plans.list_decisions(imported=True)}


def test_adr_files_are_imported_as_linked_decisions_without_a_plan(
    store: Store, shop: Path, write: Callable[[Path, dict[str, str]], None]
) -> None:
    write(shop, ADRS)
    stats = store.index(shop)
    found = imported(store.open(shop))
    redis, postgres = found["Store carts in Redis"], found["Store carts in PostgreSQL"]
    assert stats.decisions_imported == 2
    assert sorted(found) == ["Store carts in PostgreSQL", "Store carts in Redis"]
    assert (redis.source, redis.plan_id) == ("docs/adr/0002-store-carts-in-redis.md", None)
    assert redis.superseded_by == (postgres.id,)
    assert postgres.supersedes == (redis.id,)
    assert [h.uri for h in store.open(shop).plans.search("failover")] == [postgres.uri]


def test_an_edited_adr_is_imported_again_under_its_id_and_a_deleted_one_leaves(
    store: Store, shop: Path, write: Callable[[Path, dict[str, str]], None]
) -> None:
    write(shop, ADRS)
    store.index(shop)
    before = imported(store.open(shop))["Store carts in PostgreSQL"].id
    assert store.index(shop).decisions_imported == 0
    write(shop, {"docs/adr/0003-store-carts-in-postgresql.md": MADR_POSTGRES + "\nMore.\n"})
    (shop / "docs/adr/0002-store-carts-in-redis.md").unlink()
    assert store.index(shop).decisions_imported == 2
    found = imported(store.open(shop))
    assert list(found) == ["Store carts in PostgreSQL"]
    assert (
        found["Store carts in PostgreSQL"].id,
        found["Store carts in PostgreSQL"].supersedes,
    ) == (
        before,
        (),
    )
