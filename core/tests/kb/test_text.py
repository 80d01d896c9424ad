"""Full-text search: BM25 over code-aware terms, safe for any query."""

from __future__ import annotations

import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextfuse.backends import BackendSet
from contextfuse.kb.terms import (
    identifier_parts,
    is_short_request,
    query_terms,
    weighted_query_terms,
)
from contextfuse.kb.text import MAX_QUERY_TERMS, choose_terms

P = "project://shop-repo/"
CART = P + "shop/models.py#ShoppingCart"


def uris(kb: BackendSet, query: str, **options: Any) -> list[str]:
    return [hit.uri for hit in kb.text.search(query, **options)]


def test_identifiers_are_split_at_underscores_and_case_changes() -> None:
    assert identifier_parts("get_queryset") == ("get", "queryset")
    assert identifier_parts("HTTPResponseError") == ("http", "response", "error")
    assert identifier_parts("_private") == ("private",)
    assert identifier_parts("save") == ()


def test_a_query_keeps_whole_words_their_parts_and_paths() -> None:
    assert query_terms("ShoppingCart.add_item in shop/models.py") == [
        "shoppingcart_add_item",
        "shop_models_py",
        "models_py",
        "shoppingcart",
        "shopping",
        "cart",
        "add_item",
        "add",
        "item",
        "in",
        "shop",
        "models",
        "py",
    ]


def test_a_symbol_is_found_by_its_whole_name(kb: BackendSet) -> None:
    assert uris(kb, "add_item")[0] == CART + ".add_item"


def test_a_symbol_is_found_by_parts_of_its_camel_case_name(kb: BackendSet) -> None:
    assert uris(kb, "shopping cart")[0] == CART


def test_a_symbol_is_found_by_parts_of_its_snake_case_name(kb: BackendSet) -> None:
    assert uris(kb, "unused helper")[0] == P + "shop/util.py#unused_helper_function"


def test_a_file_is_found_by_its_path(kb: BackendSet) -> None:
    assert uris(kb, "shop/util.py", kinds=["file"])[0] == P + "shop/util.py"


def test_kinds_restrict_the_hits(kb: BackendSet) -> None:
    hits = kb.text.search("cart items", kinds=["method"])
    assert hits
    assert all("#ShoppingCart." in hit.uri for hit in hits)


def test_scores_are_higher_for_better_hits(kb: BackendSet) -> None:
    scores = [hit.score for hit in kb.text.search("cart item recount")]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > 0


def test_terms_the_index_does_not_know_find_nothing(kb: BackendSet) -> None:
    assert kb.text.search("zyxwvut qwertyuiop") == []
    assert kb.text.search("") == []


def test_hostile_queries_are_searched_safely(kb: BackendSet) -> None:
    for query in ['"unbalanced', "a AND (b OR", "NEAR(x y)", "*", "-cart", "col:cart", "^x"]:
        kb.text.search(query)
    assert uris(kb, 'cart" OR "x')[0].startswith(CART)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=300))
def test_any_query_string_is_safe(kb: BackendSet, query: str) -> None:
    for hit in kb.text.search(query, limit=5):
        assert hit.uri.startswith(P)


def test_a_long_issue_text_keeps_only_its_most_informative_terms(kb: BackendSet) -> None:
    words = " ".join(f"word{i}" for i in range(5000))
    issue = f'ShoppingCart.add_item fails with a (TypeError) "x" -- {words} ' * 4
    assert len(issue) > 20_000
    started = time.perf_counter()
    hits = kb.text.search(issue)
    assert time.perf_counter() - started < 1.0
    assert hits[0].uri.startswith(CART)
    assert len(kb.text.select_terms(query_terms(issue))) <= MAX_QUERY_TERMS


def test_words_that_look_like_code_weigh_more_than_prose() -> None:
    weights = weighted_query_terms("bulk_create fails in QuerySet with ERROR 1508 on utf8")
    assert {t: weights[t] for t in ("bulk_create", "queryset")} == dict.fromkeys(
        ("bulk_create", "queryset"), 2
    )
    assert {t: weights[t] for t in ("fails", "error", "utf8", "bulk", "query")} == dict.fromkeys(
        ("fails", "error", "utf8", "bulk", "query"), 1
    )
    assert weights["1508"] < 1


def test_a_long_request_weighs_the_words_of_its_first_line_and_repeated_words() -> None:
    noise = " ".join(f"r{i:04d}" for i in range(60))
    issue = f"Recursive mode ignores the configured paths\n\n```\n{noise} paths\n```\npaths"
    weights = weighted_query_terms(issue)
    assert weights["paths"] - weights["recursive"] == 0.5  # on three distinct lines
    assert weights["r0001"] == 1


def test_a_long_request_weighs_what_its_sentences_say_above_what_it_pastes() -> None:
    pasted = "\n".join(f"lib{i:02d}   1.0.{i}" for i in range(40))
    issue = f"Crash on start\n\n```\n{pasted}\n```\nThe parser loses the lineno here."
    weights = weighted_query_terms(issue)
    assert weights["lineno"] == weights["lib01"] + 0.25


def test_an_issue_templates_comments_headings_and_checklist_are_not_the_reporters_words() -> None:
    words = " ".join(f"w{i}" for i in range(50))
    issue = (
        "Title\n<!-- Thanks for submitting an issue -->\n- [x] a detailed description\n"
        f"### Environment versions\n```\nsubmitting detailed environment {words}\n```\n"
        "It crashes."
    )
    weights = weighted_query_terms(issue)
    assert weights["submitting"] == weights["detailed"] == weights["environment"] == 1
    assert weights["crashes"] == 1.25


def test_runs_of_underscores_are_not_search_terms() -> None:
    assert "____" not in weighted_query_terms("____ test_right_statement ____")


def test_english_function_words_are_not_searched(kb: BackendSet) -> None:
    assert kb.text.select_terms(["the", "cart", "how"]) == ["cart"]
    assert kb.text.select_terms(["the"]) == ["the"]  # unless nothing else is left


def test_a_question_finds_code_that_spells_its_word_another_way(kb: BackendSet) -> None:
    assert P + "shop/models.py#ShoppingCart.recount" in uris(kb, "recounting")


def test_the_words_a_query_spells_outrank_their_inflections(kb: BackendSet) -> None:
    hits = {hit.uri: hit.score for hit in kb.text.search("recount items")}
    assert hits[P + "shop/models.py#ShoppingCart.recount"] > hits.get(P + "README.md", 0.0)
    assert uris(kb, "recount")[0] == P + "shop/models.py#ShoppingCart.recount"


def _rare_terms(n: int) -> dict[str, int]:
    return {f"rare{i}": 3 for i in range(n)}


def test_a_short_question_keeps_a_word_common_in_its_small_index() -> None:
    frequency = {"plugin": 400, **_rare_terms(10)}
    chosen = choose_terms(dict.fromkeys(frequency, 1.0), frequency, lambda: 2_000, True)
    assert "plugin" in chosen


def test_a_long_report_leaves_out_a_word_common_in_its_small_index() -> None:
    frequency = {"plugin": 400, **_rare_terms(10)}
    chosen = choose_terms(dict.fromkeys(frequency, 1.0), frequency, lambda: 2_000, False)
    assert "plugin" not in chosen and len(chosen) == 10


def test_a_short_question_leaves_out_the_near_stopwords_of_a_large_index() -> None:
    frequency = {"update": 40_000, **_rare_terms(10)}
    chosen = choose_terms(dict.fromkeys(frequency, 1.0), frequency, lambda: 300_000, True)
    assert "update" not in chosen and len(chosen) == 10


def test_a_request_of_forty_words_or_fewer_is_a_short_question() -> None:
    assert is_short_request(" ".join(["word"] * 40))
    assert not is_short_request(" ".join(["word"] * 41))
