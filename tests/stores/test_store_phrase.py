"""Phrase search (words in a row, as code writes an option or a message), the same
assertions for every store (SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

from contextfuse.backends import BackendSet, PhraseSearch

from .conftest import Store

Indexed = tuple[Store, Path, BackendSet]
SLUGIFY = "shop/util.py#slugify"


def _phrase(kb: BackendSet, words: list[str]) -> list[str]:
    assert isinstance(kb.text, PhraseSearch)
    prefix = f"project://{kb.nodes.project}/"
    return [
        hit.uri.removeprefix(prefix) for hit in kb.text.search_phrase(words, kinds=["function"])
    ]


def test_the_text_backend_offers_phrase_search(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert isinstance(kb.text, PhraseSearch)


def test_words_in_a_row_find_the_function_whose_text_holds_them(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert _phrase(kb, ["LOWER", "case"]) == [SLUGIFY]
    assert _phrase(kb, ["with-dashes"]) == [SLUGIFY]


def test_the_same_words_in_another_order_are_not_the_phrase(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert _phrase(kb, ["case", "lower"]) == []


def test_a_phrase_of_any_characters_is_searched_safely(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert _phrase(kb, ['"', 'a"b OR *', "NEAR(", "'; DROP TABLE cf_nodes; --", ""]) == []
