"""The simple-keyword strategy on a repository the test creates and indexes for real."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from contextfuse import BackendSet, ContextRequest, PlanContext
from contextfuse.kb import index, open_backends
from contextfuse.plugin_manager import make_plugin_manager
from contextfuse.testing import assemble_with, assert_strategy_conforms
from contextfuse_simple_keyword import SimpleKeywordStrategy
from contextfuse_simple_keyword.query import extract_mentions, extract_patterns, pattern_scores

FILES = {
    "shop/cart.py": '''"""The shopping cart."""


class ShoppingCart:
    """Items a customer is about to buy."""

    def __init__(self):
        self.items = []

    def add_item(self, item, count=1):
        """Add ``count`` of ``item``."""
        if count <= 0:
            raise ValueError("count must be positive")
        self.items.append((item, count))

    def total(self, prices):
        return sum(prices[item] * count for item, count in self.items)
''',
    "shop/pricing.py": '''"""Prices and discounts."""


def apply_discount(price, percent):
    """Lower ``price`` by ``percent`` percent."""
    return price * (100 - percent) / 100


def round_price(value):
    return round(value, 2)
''',
    "docs/guide.md": "# Guide\n\n## Discounts\n\nUse apply_discount for sales.\n",
}


@pytest.fixture(scope="module")
def backends(tmp_path_factory) -> Iterator[BackendSet]:
    repo = tmp_path_factory.mktemp("shop")
    for rel, text in FILES.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    index(repo, pm=make_plugin_manager(autoload=False))
    with open_backends(repo) as opened:
        yield opened


def run(backends: BackendSet, query: str, tokens: int = 2000):
    return list(assemble_with(SimpleKeywordStrategy(), backends, query, tokens).fragments)


def test_the_strategy_conforms_to_the_protocol():
    assert_strategy_conforms(SimpleKeywordStrategy())


def test_a_named_method_comes_first_at_full_source(backends):
    query = "ShoppingCart.add_item raises ValueError for zero"
    ranked = SimpleKeywordStrategy().rank(ContextRequest(query=query), backends, PlanContext())
    assert ranked[0].uri.endswith("shop/cart.py#ShoppingCart.add_item")
    first = run(backends, query)[0]
    assert first.provenance.resource_uri.endswith("shop/cart.py")
    assert first.detail_depth == 9
    assert "count must be positive" in first.content


def test_a_path_in_a_traceback_brings_its_file(backends):
    query = 'Traceback:\n  File "shop/pricing.py", line 5, in apply_discount\nZeroDivisionError'
    files = {f.provenance.resource_uri for f in run(backends, query)}
    assert any(uri.endswith("shop/pricing.py") for uri in files)


def test_fragments_carry_file_provenance_and_line_ranges(backends):
    fragment = run(backends, "apply_discount percent")[0]
    assert fragment.provenance.resource_uri.endswith("shop/pricing.py")
    assert fragment.provenance.location.startswith("L")


def test_the_result_never_exceeds_the_budget(backends):
    for tokens in (1, 20, 60, 200):
        assert sum(f.token_count for f in run(backends, "cart item price", tokens)) <= tokens


def test_without_a_text_backend_it_cannot_handle_the_request():
    assert SimpleKeywordStrategy().can_handle(ContextRequest(query="x"), BackendSet()) == 0.0


def test_mentions_find_paths_dotted_names_and_identifiers():
    mentions = extract_mentions(
        "In `shop/cart.py` the call cart.add_item(x) and ShoppingCart fail in apply_discount"
    )
    assert "shop/cart.py" in mentions.paths
    assert {"cart.add_item", "add_item", "ShoppingCart", "apply_discount"} <= set(mentions.symbols)


def test_the_plugin_is_found_through_its_entry_point():
    pm = make_plugin_manager()
    assert "simple-keyword" in {s.strategy.name for s in pm.strategy_sources()}


def test_a_regex_in_the_request_finds_code_its_words_do_not_name(backends):
    # As words, "price" names round_price; as a pattern, only apply_discount multiplies it.
    query = r"where is /\bprice \*/ done"
    ranked = SimpleKeywordStrategy().rank(ContextRequest(query=query), backends, PlanContext())
    assert ranked[0].uri.endswith("shop/pricing.py#apply_discount")


def test_patterns_are_written_between_slashes_standing_alone():
    found = extract_patterns(r"see /def\s+add_\w+/ and `/TOTAL/i`, not src/shop/cart.py or and/or")
    assert [(p.source, p.ignore_case) for p in found] == [
        (r"def\s+add_\w+", False),
        ("TOTAL", True),
    ]


def test_an_escaped_slash_is_a_slash_in_the_pattern():
    assert [p.source for p in extract_patterns(r"find /a\/b/ here")] == ["a/b"]


def test_a_pattern_is_not_searched_as_words(backends):
    words, scores = pattern_scores(r"cart /apply_disc\w+/ price", backends.text)
    assert words == "cart price"
    assert any(uri.endswith("shop/pricing.py#apply_discount") for uri in scores)


def test_an_invalid_pattern_is_searched_as_words(backends):
    words, scores = pattern_scores("why /apply_discount(/ fails", backends.text)
    assert words == "why /apply_discount(/ fails"
    assert scores == {}


def test_scanning_for_patterns_is_linear_on_hostile_text():
    # Many slashes with nothing between the pattern and its closing boundary.
    assert extract_patterns(" /" + "a/" * 200_000) == []
    assert extract_patterns(" /" + "\\" * 200_000 + "/") != []


def test_slashes_between_words_are_not_a_pattern():
    assert extract_patterns("13 passed / 180 deselected / 2 warnings") == []
