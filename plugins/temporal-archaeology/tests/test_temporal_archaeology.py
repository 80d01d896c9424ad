"""temporal-archaeology on a repository with real git history: renames, a branch, a merge."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextfuse import hookimpl
from contextfuse.assembler import ContextAssembler
from contextfuse.backends import BackendSet, Commit, FileChange
from contextfuse.config import ContextfuseConfig
from contextfuse.kb import index, open_backends
from contextfuse.models import ContextRequest, PlanContext
from contextfuse.plugin_manager import make_plugin_manager
from contextfuse.testing import assemble_with, assert_strategy_conforms
from contextfuse_temporal_archaeology import TemporalArchaeologyStrategy
from contextfuse_temporal_archaeology import plugin as plugin_module

CART_V1 = '''"""The shopping cart."""

from shop.pricing import round_price


class ShoppingCart:
    """Items a customer is about to buy."""

    def __init__(self):
        self.items = []

    def add_item(self, item, count=1):
        """Add ``count`` of ``item``."""
        self.items.append((item, count))

    def total(self, prices):
        return sum(prices[item] * count for item, count in self.items)
'''

PRICING_V1 = '''"""Prices and discounts."""


def apply_discount(price, percent):
    """Lower ``price`` by ``percent`` percent."""
    return price * (100 - percent) / 100


def round_price(value):
    return round(value, 2)
'''

PRICING_V2 = '''"""Prices and discounts."""

from decimal import ROUND_HALF_UP, Decimal


def apply_discount(price, percent):
    """Lower ``price`` by ``percent`` percent."""
    return price * (100 - percent) / 100


def round_price(value):
    """Round to cents, halves up: binary floats lost a cent on discounted prices."""
    return Decimal(str(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
'''

COUPONS = '''"""Coupons customers redeem at checkout."""

from shop.prices import apply_discount


def redeem_coupon(cart, code, prices):
    """The cart's total after the coupon ``code``."""
    percent = {"WELCOME10": 10}.get(code, 0)
    return apply_discount(cart.total(prices), percent)
'''


def git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Grace Hopper",
        "GIT_AUTHOR_EMAIL": "grace@example.com",
        "GIT_COMMITTER_NAME": "Grace Hopper",
        "GIT_COMMITTER_EMAIL": "grace@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo.parent),
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def write(repo: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def make_history(repo: Path) -> Path:
    """Six commits on main, a rename, and a branch merged back with --no-ff."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    write(repo, {"shop/cart.py": CART_V1, "shop/pricing.py": PRICING_V1})
    commit(repo, "Add the shopping cart and pricing")
    write(
        repo,
        {
            "shop/pricing.py": PRICING_V2,
            "shop/cart.py": CART_V1.replace("return sum(", "return round_price(sum(").replace(
                "self.items)\n", "self.items))\n"
            ),
        },
    )
    commit(repo, "Fix cents lost when rounding discounted prices")
    git(repo, "mv", "shop/pricing.py", "shop/prices.py")
    write(repo, {"shop/cart.py": (repo / "shop/cart.py").read_text().replace("pricing", "prices")})
    commit(repo, "Move pricing into the prices module")
    git(repo, "checkout", "-q", "-b", "coupons")
    write(repo, {"shop/coupons.py": COUPONS})
    commit(repo, "Let customers redeem coupons at checkout")
    git(repo, "checkout", "-q", "main")
    write(repo, {"README.md": "# Shop\n\nA cart and its prices.\n"})
    commit(repo, "Document the shop")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge branch 'coupons'", "coupons")
    cart = (repo / "shop/cart.py").read_text()
    write(
        repo,
        {
            "shop/cart.py": cart.replace(
                "        self.items.append((item, count))",
                '        if count <= 0:\n            raise ValueError("count must be positive")\n'
                "        self.items.append((item, count))",
            )
        },
    )
    commit(repo, "Reject negative quantities in the cart\n\nA negative count made totals go down.")
    return repo


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_history(tmp_path_factory.mktemp("history") / "shop")
    index(root, pm=make_plugin_manager(autoload=False))
    return root


@pytest.fixture
def backends(repo: Path) -> Iterator[BackendSet]:
    opened = open_backends(repo)
    yield opened
    opened.nodes.close()


def run(backends: BackendSet, query: str, tokens: int = 3000) -> list:
    return list(assemble_with(TemporalArchaeologyStrategy(), backends, query, tokens).fragments)


def test_the_strategy_conforms_to_the_protocol() -> None:
    assert_strategy_conforms(TemporalArchaeologyStrategy())


def test_the_plugin_contributes_the_strategy() -> None:
    pm = make_plugin_manager(autoload=False)
    pm.register(plugin_module, name="temporal-archaeology")
    assert "temporal-archaeology" in {s.strategy.name for s in pm.strategy_sources()}


def test_a_matching_commit_is_a_cold_fragment_with_message_date_and_files(
    backends: BackendSet,
) -> None:
    fragments = run(backends, "why were cents lost when rounding discounted prices")
    first = fragments[0]
    assert first.uko_node.startswith("commit://shop/")
    assert first.tier == "cold"
    assert first.provenance.resource_type == "commit"
    assert "Fix cents lost when rounding discounted prices" in first.content
    assert "Grace Hopper" in first.content
    assert "shop/pricing.py +" in first.content
    assert "round_price" in first.content  # the function the hunk changed


def test_the_code_a_commit_changed_is_raised_where_it_lives_after_a_rename(
    backends: BackendSet,
) -> None:
    fragments = run(backends, "why were cents lost when rounding discounted prices")
    code = [f for f in fragments if f.uko_node.startswith("project://")]
    assert code
    # prices.py is small: shown whole, with the changed round_price in it.
    assert any(
        f.uko_node.startswith("project://shop/shop/prices.py")
        and f.detail_depth == 9
        and "def round_price" in f.content
        for f in code
    )
    assert not any("pricing.py" in f.uko_node for f in code)


def test_a_commit_is_found_by_an_identifier_only_its_diff_holds(backends: BackendSet) -> None:
    first = run(backends, "quantize")[0]
    assert "Fix cents lost" in first.content


def test_a_commit_of_a_merged_branch_is_found(backends: BackendSet) -> None:
    fragments = run(backends, "redeem coupons")
    assert "Let customers redeem coupons at checkout" in fragments[0].content
    assert any(f.uko_node.startswith("project://shop/shop/coupons.py") for f in fragments)


def test_files_that_change_together_with_the_touched_ones_are_raised(
    backends: BackendSet,
) -> None:
    strategy = TemporalArchaeologyStrategy()
    hits = backends.temporal.search("Move pricing into the prices module", limit=1)
    commit = next(iter(backends.temporal.get_commits([hits[0].uri]).values()))
    scores = strategy.code_scores([(commit, 1.0)], backends)
    # The rename commit touched cart.py and the two paths of prices.py; cart.py changed
    # with pricing.py before, so both are there, and none of a deleted path.
    assert "project://shop/shop/cart.py" in scores
    assert "project://shop/shop/prices.py" in scores
    assert "project://shop/shop/pricing.py" not in scores


def test_the_fragments_never_exceed_the_budget(backends: BackendSet) -> None:
    for tokens in (20, 60, 200, 1000):
        fragments = run(backends, "cart prices rounding coupons", tokens)
        assert sum(f.token_count for f in fragments) <= tokens


def test_a_small_budget_gets_commits_as_one_line(backends: BackendSet) -> None:
    fragments = run(backends, "rounding discounted prices", 120)
    commits = [f for f in fragments if f.uko_node.startswith("commit://")]
    assert commits and all(f.detail_depth < 9 for f in commits)


def test_a_question_about_history_raises_confidence(backends: BackendSet) -> None:
    strategy = TemporalArchaeologyStrategy()
    plain = strategy.can_handle(ContextRequest(query="negative quantities"), backends)
    why = strategy.can_handle(
        ContextRequest(query="why are negative quantities rejected"), backends
    )
    assert 0 < plain < why


def test_a_query_no_commit_matches_is_declined(backends: BackendSet) -> None:
    request = ContextRequest(query="kubernetes helm chart")
    assert TemporalArchaeologyStrategy().can_handle(request, backends) == 0.0


def test_a_repository_without_history_is_declined(tmp_path: Path) -> None:
    write(tmp_path / "plain", {"a.py": "def f():\n    return 1\n"})
    index(tmp_path / "plain", pm=make_plugin_manager(autoload=False))
    opened = open_backends(tmp_path / "plain")
    try:
        assert opened.temporal is None
        request = ContextRequest(query="f")
        assert TemporalArchaeologyStrategy().can_handle(request, opened) == 0.0
    finally:
        opened.nodes.close()


def test_the_assembler_runs_it_when_named(repo: Path, contextfuse_strategy: Any) -> None:
    pm = make_plugin_manager(autoload=False)
    pm.register(plugin_module, name="temporal-archaeology")
    _provide_text_strategy(pm, contextfuse_strategy)
    assembler = ContextAssembler(repo, config=ContextfuseConfig(), plugin_manager=pm)
    try:
        payload = assembler.assemble(
            "why are negative quantities rejected", 2000, strategies=["temporal-archaeology"]
        )
    finally:
        assembler.close()
    assert payload.strategies_used == ("temporal-archaeology",)
    assert any("Reject negative quantities" in f.content for f in payload.fragments)


def test_the_functions_a_commit_changed_score_above_the_rest_of_their_file(
    backends: BackendSet,
) -> None:
    hit = backends.temporal.search("Fix cents lost when rounding", limit=1)[0]
    commit = next(iter(backends.temporal.get_commits([hit.uri]).values()))
    scores = TemporalArchaeologyStrategy().code_scores([(commit, 1.0)], backends)
    changed = scores["project://shop/shop/prices.py#round_price"]
    assert changed > scores.get("project://shop/shop/prices.py#apply_discount", 0.0)
    assert "project://shop/shop/cart.py#ShoppingCart.total" in scores


def test_a_bulk_commit_raises_no_code(backends: BackendSet) -> None:
    changes = tuple(FileChange(f"shop/f{i}.py", 1, 0) for i in range(50))
    bulk = Commit(
        "0" * 40, 0, "Bot", "Reformat everything", (), (*changes, FileChange("shop/cart.py", 1, 1))
    )
    assert TemporalArchaeologyStrategy().code_scores([(bulk, 1.0)], backends) == {}


def test_commits_and_code_are_one_ranking_with_commits_first(backends: BackendSet) -> None:
    request = ContextRequest(query="cart prices rounding coupons quantities")
    ranked = TemporalArchaeologyStrategy().rank(request, backends, PlanContext())
    assert ranked[0].uri.startswith("commit://") and ranked[0].renderings
    assert any(r.uri.startswith("project://") for r in ranked)
    assert [r.score for r in ranked] == sorted((r.score for r in ranked), reverse=True)


def _provide_text_strategy(pm: Any, build: Any) -> None:
    """Repository assembly needs a text strategy installed (the fallback chain ends there)."""

    class TextStrategy:
        @hookimpl
        def contextfuse_strategies(self) -> list[Any]:
            return [build("simple-keyword", uses_text=True)]

    pm.register(TextStrategy(), name="text-strategy")
