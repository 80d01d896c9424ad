"""Storage tiers behave the same in every store: promotion on access, demotion by age."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from contextfuse.assembler import ContextAssembler
from contextfuse.backends import BackendSet
from contextfuse.config import load_config
from contextfuse.kb.tiers import EVICTED, TierPolicy, TierStore, tier_store_of

from .conftest import Store

DAY = 86_400.0


@pytest.fixture
def tiers(store: Store, shop: Path) -> TierStore:
    store.index(shop)
    found = tier_store_of(store.open(shop))
    assert found is not None
    return found


def test_indexed_files_start_warm(tiers: TierStore) -> None:
    tiers.apply()
    assert tiers.counts() == {"hot": 0, "warm": 5, "cold": 0, "evicted": 0}


def test_a_file_read_is_promoted_to_hot(tiers: TierStore) -> None:
    tiers.apply()
    tiers.touch(["shop/util.py"])
    assert tiers.counts() == {"hot": 1, "warm": 4, "cold": 0, "evicted": 0}


def test_idle_files_are_demoted_by_age_and_cold_ones_compacted(tiers: TierStore) -> None:
    now = time.time()
    tiers.apply(now)
    tiers.touch(["shop/util.py"], now)
    tiers.touch(["README.md"], now + 20 * DAY)
    moved = tiers.apply(now + 31 * DAY)
    assert tiers.counts() == {"hot": 0, "warm": 1, "cold": 4, "evicted": 0}
    assert moved == {
        "admitted": 0,
        "to_warm": 2,
        "to_cold": 4,
        "compacted": 4,
        "restored": 0,
        "evicted": 0,
    }
    assert tiers.storage()["files"] == 4


def test_cold_files_idle_past_the_retention_are_evicted(tiers: TierStore) -> None:
    now = time.time()
    tiers.apply(now)
    tiers.apply(now + 31 * DAY)
    moved = tiers.apply(now + 200 * DAY)
    assert moved["evicted"] == 5
    assert tiers.counts() == {"hot": 0, "warm": 0, "cold": 0, "evicted": 5}
    assert tiers.storage()["files"] == 0


def test_the_policy_is_stored_with_the_index(tiers: TierStore) -> None:
    tiers.set_policy(TierPolicy(hot_days=1, warm_days=2, retention_days=3))
    now = time.time()
    tiers.apply(now)
    tiers.apply(now + 2.5 * DAY)
    assert tiers.policy() == TierPolicy(hot_days=1, warm_days=2, retention_days=3)
    assert tiers.counts()["cold"] == 5


def compacted(store: Store, shop: Path, now: float) -> tuple[BackendSet, TierStore]:
    """The shop indexed, every file cold and compacted ``now`` (its backends open)."""
    store.index(shop)
    kb = store.open(shop)
    tiers = tier_store_of(kb)
    assert tiers is not None
    tiers.apply(now)
    tiers.apply(now + 31 * DAY)
    return kb, tiers


def test_a_compacted_file_keeps_its_exact_source_search_rows_and_outline(
    store: Store, shop: Path
) -> None:
    kb, _ = compacted(store, shop, time.time())
    node = f"project://{kb.nodes.project}/shop/util.py#slugify"
    lines = (shop / "shop/util.py").read_text().split("\n")
    renderings = kb.nodes.get_renderings([node])[node]
    assert sorted(renderings) == [0, 2, 4, 9]
    assert renderings[9].content == "\n".join(
        lines[renderings[9].line_start - 1 : renderings[9].line_end]
    )
    assert node in [h.uri for h in kb.text.search("slugify")]


def test_a_compacted_file_read_again_is_stored_whole(store: Store, shop: Path) -> None:
    now = time.time()
    _, tiers = compacted(store, shop, now)
    tiers.touch(["shop/util.py"], now + 32 * DAY)
    assert tiers.counts() == {"hot": 1, "warm": 0, "cold": 4, "evicted": 0}
    assert tiers.storage()["files"] == 4


def test_an_evicted_file_leaves_the_index_and_refreshes_leave_it_out(
    store: Store, shop: Path
) -> None:
    now = time.time()
    kb, tiers = compacted(store, shop, now)
    tiers.touch(["shop/models.py"], now + 190 * DAY)
    tiers.apply(now + 200 * DAY)
    stats = store.index(shop)
    kb = store.open(shop)
    assert kb.nodes.find_paths("util.py") == []
    assert kb.text.search("lower case with dashes") == []
    assert [n.path for n in kb.nodes.files()] == ["shop/models.py"]
    assert (stats.files, stats.files_parsed, stats.skipped.get(EVICTED)) == (1, 0, 4)


def test_an_evicted_file_comes_back_from_its_source_when_it_changes(
    store: Store, shop: Path, write: Callable[[Path, dict[str, str]], None]
) -> None:
    now = time.time()
    _, tiers = compacted(store, shop, now)
    tiers.apply(now + 200 * DAY)
    write(shop, {"shop/util.py": "def hyphenate(text):\n    return text\n"})
    stats = store.index(shop)
    kb = store.open(shop)
    assert stats.files_parsed == 1
    assert [n.name for n in kb.nodes.find_symbols("hyphenate")] == ["hyphenate"]


def test_an_evicted_file_that_is_touched_is_read_again_by_the_next_index_run(
    store: Store, shop: Path
) -> None:
    now = time.time()
    _, tiers = compacted(store, shop, now)
    tiers.apply(now + 200 * DAY)
    tiers.touch(["shop/util.py"], now + 201 * DAY)
    store.index(shop)
    kb = store.open(shop)
    node = f"project://{kb.nodes.project}/shop/util.py#slugify"
    assert kb.nodes.get_renderings([node], [9])[node][9].content.startswith("def slugify")
    assert tiers.counts()["evicted"] == 4


def test_a_policy_whose_days_shrink_is_refused() -> None:
    with pytest.raises(ValidationError, match="tier days must grow"):
        TierPolicy(hot_days=10, warm_days=2)


def test_an_assembly_promotes_the_files_it_delivers(store: Store, shop: Path) -> None:
    store.index(shop)
    config = None
    if store.url is not None:
        config = load_config(shop)
        index = config.index.model_copy(update={"store": store.url})
        config = config.model_copy(update={"index": index})
    assembler = ContextAssembler(shop, config=config)
    try:
        payload = assembler.assemble("slugify", 2000)
        tiers = tier_store_of(assembler.backends)
        assert tiers is not None
        assert tiers.counts()["hot"] >= 1
        assert payload.fragments
    finally:
        assembler.close()
