"""Storage tiers behave the same in every store: promotion on access, demotion by age."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from contextfuse.assembler import ContextAssembler
from contextfuse.config import load_config
from contextfuse.kb.tiers import TierPolicy, TierStore, tier_store_of

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
    assert tiers.counts() == {"hot": 0, "warm": 5, "cold": 0}


def test_a_file_read_is_promoted_to_hot(tiers: TierStore) -> None:
    tiers.apply()
    tiers.touch(["shop/util.py"])
    assert tiers.counts() == {"hot": 1, "warm": 4, "cold": 0}


def test_idle_files_are_demoted_by_age(tiers: TierStore) -> None:
    now = time.time()
    tiers.apply(now)
    tiers.touch(["shop/util.py"], now)
    tiers.touch(["README.md"], now + 20 * DAY)
    moved = tiers.apply(now + 31 * DAY)
    assert tiers.counts() == {"hot": 0, "warm": 1, "cold": 4}
    assert moved == {"admitted": 0, "to_warm": 2, "to_cold": 4, "dropped": 0}


def test_cold_records_are_dropped_after_the_retention(tiers: TierStore) -> None:
    now = time.time()
    tiers.apply(now)
    tiers.apply(now + 31 * DAY)
    moved = tiers.apply(now + 200 * DAY)
    assert moved["dropped"] == 5
    assert tiers.counts() == {"hot": 0, "warm": 0, "cold": 5}


def test_the_policy_is_stored_with_the_index(tiers: TierStore) -> None:
    tiers.set_policy(TierPolicy(hot_days=1, warm_days=2, retention_days=3))
    now = time.time()
    tiers.apply(now)
    tiers.apply(now + 2.5 * DAY)
    assert tiers.policy() == TierPolicy(hot_days=1, warm_days=2, retention_days=3)
    assert tiers.counts()["cold"] == 5


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
