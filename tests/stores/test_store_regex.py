"""Regular-expression search, the same assertions for every store (SQLite and PostgreSQL)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from contextfuse.backends import BackendSet, RegexSearch
from contextfuse.errors import InvalidPatternError
from contextfuse.kb.tiers import tier_store_of

from .conftest import Store

Indexed = tuple[Store, Path, BackendSet]


def uri(kb: BackendSet, path: str) -> str:
    return f"project://{kb.nodes.project}/{path}"


def test_the_text_backend_offers_regex_search(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert isinstance(kb.text, RegexSearch)


def test_a_regex_finds_the_innermost_node_whose_text_matches(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert isinstance(kb.text, RegexSearch)
    hits = kb.text.search_regex(r"self\.items\.append\(\(\w+, \w+\)\)")
    assert [h.uri for h in hits] == [uri(kb, "shop/models.py#ShoppingCart.add_item")]


def test_line_anchors_and_case_folding_work_in_every_store(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert isinstance(kb.text, RegexSearch)
    assert kb.text.search_regex(r"^DEF\s+SLUGIFY\b") == []
    hits = kb.text.search_regex(r"^DEF\s+SLUGIFY\b", ignore_case=True)
    assert [h.uri for h in hits] == [uri(kb, "shop/util.py#slugify")]


def test_kinds_restrict_regex_hits(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert isinstance(kb.text, RegexSearch)
    hits = kb.text.search_regex(r"def (save|recount)", kinds=["class"])
    assert {h.uri for h in hits} == {
        uri(kb, "shop/models.py#Base"),
        uri(kb, "shop/models.py#ShoppingCart"),
    }


def test_a_pattern_only_re2_reads_is_still_found(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop  # Unicode classes: PostgreSQL's flavour has none
    assert isinstance(kb.text, RegexSearch)
    hits = kb.text.search_regex(r"def \p{Ll}+ify\(")
    assert [h.uri for h in hits] == [uri(kb, "shop/util.py#slugify")]


def test_secrets_are_not_found_by_a_regex(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert isinstance(kb.text, RegexSearch)
    assert kb.text.search_regex(r"AKIA[0-9A-Z]{16}") == []


@pytest.mark.parametrize("pattern", ["(", r"(a)\1", "'; DROP TABLE cf_nodes; --("])
def test_an_invalid_pattern_is_a_clear_error_in_every_store(
    indexed_shop: Indexed, pattern: str
) -> None:
    _, _, kb = indexed_shop
    assert isinstance(kb.text, RegexSearch)
    with pytest.raises(InvalidPatternError, match="invalid regular expression"):
        kb.text.search_regex(pattern)


@pytest.mark.timeout(120)
def test_a_pattern_that_backtracks_elsewhere_returns(indexed_shop: Indexed) -> None:
    store, shop, _ = indexed_shop
    (shop / "shop" / "long.py").write_text(f'TEXT = "{"a" * 100_000}!"\n')
    store.index(shop)
    kb = store.open(shop)
    assert isinstance(kb.text, RegexSearch)
    assert kb.text.search_regex(r"(a+)+$") == []


def test_a_compacted_file_is_found_by_a_regex(store: Store, shop: Path) -> None:
    store.index(shop)
    kb = store.open(shop)
    tiers = tier_store_of(kb)
    assert tiers is not None
    now = time.time()
    tiers.apply(now)
    tiers.apply(now + 31 * 86_400.0)  # every file cold: its text stored compressed
    assert tiers.counts()["cold"] > 0
    assert isinstance(kb.text, RegexSearch)
    hits = kb.text.search_regex(r"text\.lower\(\)\.replace")
    assert [h.uri for h in hits] == [uri(kb, "shop/util.py#slugify")]
