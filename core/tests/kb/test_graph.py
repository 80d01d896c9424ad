"""The code graph: containment, imports, calls, references, inheritance; PageRank."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextfuse.backends import BackendSet, Edge

P = "project://shop-repo/"
MODELS = P + "shop/models.py"
UTIL = P + "shop/util.py"
CART = MODELS + "#ShoppingCart"


def edges(kb: BackendSet, uri: str, kind: str, direction: str = "out") -> set[str]:
    found = kb.graph.neighbors(uri, kinds=[kind], direction=direction)
    return {e.target if direction == "out" else e.source for e in found}


def test_a_file_contains_its_top_level_symbols(kb: BackendSet) -> None:
    assert edges(kb, MODELS, "contains") == {MODELS + "#Base", CART}


def test_a_class_contains_its_methods(kb: BackendSet) -> None:
    assert CART + ".add_item" in edges(kb, CART, "contains")


def test_python_imports_resolve_to_files_of_the_repository(kb: BackendSet) -> None:
    assert edges(kb, MODELS, "imports") == {UTIL}  # ``import os`` is not in the repository


def test_typescript_relative_imports_resolve_to_files(kb: BackendSet) -> None:
    pytest.importorskip("tree_sitter_typescript")
    assert edges(kb, P + "web/app.ts", "imports") == {P + "web/helper.ts"}


def test_a_call_of_an_imported_function_links_to_it(kb: BackendSet) -> None:
    assert UTIL + "#slugify" in edges(kb, MODELS + "#Base.save", "calls")


def test_a_call_on_self_links_to_the_method_of_the_class(kb: BackendSet) -> None:
    assert edges(kb, CART + ".add_item", "calls") == {CART + ".recount"}


def test_inheritance_links_a_class_to_its_base(kb: BackendSet) -> None:
    assert edges(kb, CART, "inherits") == {MODELS + "#Base"}


def test_incoming_edges_are_found_by_direction(kb: BackendSet) -> None:
    assert MODELS + "#Base.save" in edges(kb, UTIL + "#slugify", "calls", direction="in")
    both = kb.graph.neighbors(UTIL + "#slugify")
    assert Edge(UTIL, UTIL + "#slugify", "contains", 1.0) in both


def test_an_ambiguous_name_is_not_linked(
    new_repo: Callable[..., Any],
    build: Callable[..., Any],
    opened: Callable[..., Any],
    write: Callable[..., Any],
) -> None:
    root = new_repo("ambiguous", with_git=False)
    write(
        root,
        {
            "a.py": "def twin():\n    return 1\n",
            "b.py": "def twin():\n    return 2\n",
            "c.py": "def caller():\n    return twin()\n\n\ndef solo():\n    return caller()\n",
        },
    )
    build(root)
    kb = opened(root)
    assert edges(kb, "project://ambiguous/c.py#caller", "calls") == set()
    assert edges(kb, "project://ambiguous/c.py#solo", "calls") == {
        "project://ambiguous/c.py#caller"
    }


def test_references_to_classes_are_linked(
    new_repo: Callable[..., Any],
    build: Callable[..., Any],
    opened: Callable[..., Any],
    write: Callable[..., Any],
) -> None:
    root = new_repo("refs", with_git=False)
    write(root, {"kinds.py": "def check(x):\n    return isinstance(x, ShoppingCart)\n"})
    build(root)
    kb = opened(root)
    assert edges(kb, "project://refs/kinds.py#check", "references") == {
        "project://refs/shop/models.py#ShoppingCart"
    }


def test_personalized_pagerank_ranks_the_seeds_neighbourhood_first(kb: BackendSet) -> None:
    hits = kb.graph.personalized_pagerank({UTIL + "#slugify": 1.0}, limit=5)
    ranked = [h.uri for h in hits]
    assert ranked[0] == UTIL + "#slugify"
    assert {UTIL, MODELS + "#Base.save"} <= set(ranked)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_pagerank_can_follow_only_some_edge_kinds(kb: BackendSet) -> None:
    hits = kb.graph.personalized_pagerank({MODELS: 1.0}, limit=50, kinds=["imports"])
    assert {h.uri for h in hits} == {MODELS, UTIL}


def test_pagerank_of_unknown_seeds_is_empty(kb: BackendSet) -> None:
    assert kb.graph.personalized_pagerank({P + "nope.py": 1.0}) == []


def test_pagerank_is_fast_on_thousands_of_nodes(
    tmp_path: Path, build: Callable[..., Any], opened: Callable[..., Any], write: Callable[..., Any]
) -> None:
    root = tmp_path / "big"
    files = {
        f"pkg/m{i}.py": f"from pkg.m{(i + 1) % 300} import f{(i + 1) % 300}\n\n\n"
        f"def f{i}():\n    return f{(i + 1) % 300}()\n\n\n"
        f"class C{i}:\n    def run(self):\n        return f{i}()\n"
        for i in range(300)
    }
    write(root, {"pkg/__init__.py": "", **files})
    build(root)
    kb = opened(root)
    kb.graph.personalized_pagerank({"project://big/pkg/m0.py": 1.0})  # loads the arrays
    started = time.perf_counter()
    hits = kb.graph.personalized_pagerank({"project://big/pkg/m0.py#f0": 1.0}, limit=10)
    assert time.perf_counter() - started < 0.1
    assert hits[0].uri == "project://big/pkg/m0.py#f0"


def test_go_rust_and_java_imports_resolve_to_files(
    new_repo: Callable[..., Any],
    build: Callable[..., Any],
    opened: Callable[..., Any],
    write: Callable[..., Any],
) -> None:
    for grammar in ("tree_sitter_go", "tree_sitter_rust", "tree_sitter_java"):
        pytest.importorskip(grammar)
    root = new_repo("polyglot", with_git=False)
    write(
        root,
        {
            "go/shop/go.mod": "module example.com/shop\n\ngo 1.21\n",
            "go/shop/util/slug.go": "package util\n\nfunc Slug(s string) string { return s }\n",
            "go/other/util/slug.go": "package util\n",
            "go/shop/main.go": 'package main\n\nimport "example.com/shop/util"\n\n'
            'func main() { util.Slug("x") }\n',
            "rust/src/lib.rs": "mod helpers;\nuse crate::helpers::tidy;\n",
            "rust/src/helpers.rs": "pub fn tidy() {}\n",
            "java/shop/util/Slug.java": "package shop.util;\npublic class Slug {}\n",
            "java/shop/Cart.java": "package shop;\nimport shop.util.Slug;\npublic class Cart {}\n",
        },
    )
    build(root)
    kb = opened(root)
    p = "project://polyglot/"
    assert edges(kb, p + "go/shop/main.go", "imports") == {p + "go/shop/util/slug.go"}
    assert edges(kb, p + "rust/src/lib.rs", "imports") == {p + "rust/src/helpers.rs"}
    assert edges(kb, p + "java/shop/Cart.java", "imports") == {p + "java/shop/util/Slug.java"}


def test_a_walk_round_over_the_reached_nodes_edges_equals_one_over_every_edge() -> None:
    import numpy as np

    from contextfuse.kb import graph

    rng = np.random.default_rng(7)
    nodes, edges = 400, 1600
    source, target = rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)
    order = np.argsort(source, kind="stable")
    adjacency = graph._Adjacency(
        ids=np.arange(nodes),
        source=source[order],
        target=target[order],
        share=rng.random(edges)[order],
        dangling=np.zeros(nodes, dtype=bool),
        first=np.searchsorted(source[order], np.arange(nodes + 1)),
    )
    rank = np.zeros(nodes)
    rank[rng.integers(0, nodes, 12)] = rng.random(12)
    every_edge = np.bincount(
        adjacency.target, weights=rank[adjacency.source] * adjacency.share, minlength=nodes
    )
    assert np.array_equal(graph._spread(adjacency, rank), every_edge)


def test_a_walk_that_computes_only_its_reached_nodes_ranks_as_one_over_every_node() -> None:
    import numpy as np

    from contextfuse.kb import graph

    rng = np.random.default_rng(11)
    nodes, edges = 4000, 6000  # sparse: a walk from a few seeds stays local for rounds
    source, target = rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)
    order = np.argsort(source, kind="stable")
    out = np.bincount(source, minlength=nodes)
    adjacency = graph._Adjacency(
        ids=np.arange(nodes),
        source=source[order],
        target=target[order],
        share=(1.0 / np.maximum(out, 1))[source[order]],
        dangling=out == 0,
        first=np.searchsorted(source[order], np.arange(nodes + 1)),
    )
    personal = np.zeros(nodes)
    personal[rng.integers(0, nodes, 5)] = 0.2
    rank = personal.copy()  # the walk over every node in every round
    for _ in range(graph._MAX_ITERATIONS):
        spread = np.bincount(
            adjacency.target, weights=rank[adjacency.source] * adjacency.share, minlength=nodes
        )
        lost = rank[adjacency.dangling].sum()
        updated = 0.15 * personal + 0.85 * (spread + lost * personal)
        done = np.abs(updated - rank).sum() < graph._TOLERANCE
        rank = updated
        if done:
            break
    walked = graph._walk(adjacency, personal, 0.85)
    assert np.array_equal(np.flatnonzero(walked), np.flatnonzero(rank))
    assert np.allclose(walked, rank, rtol=1e-12, atol=0.0)
    assert np.array_equal(np.argsort(-walked, kind="stable"), np.argsort(-rank, kind="stable"))
