"""One behaviour suite, the same assertions for every store (SQLite and PostgreSQL)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from contextfuse.backends import BackendSet
from contextfuse.errors import KnowledgeBaseError

from .conftest import AWS_KEY, Store

Indexed = tuple[Store, Path, BackendSet]


def uri(kb: BackendSet, path: str) -> str:
    return f"project://{kb.nodes.project}/{path}"


def test_files_and_their_symbols_are_nodes(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    models = uri(kb, "shop/models.py")
    found = kb.nodes.get_nodes([models + "#ShoppingCart.add_item", models, "project://x/none"])
    assert set(found) == {models + "#ShoppingCart.add_item", models}
    assert found[models + "#ShoppingCart.add_item"].parent == models + "#ShoppingCart"


def test_depth_9_of_a_symbol_is_its_exact_source(indexed_shop: Indexed) -> None:
    _, root, kb = indexed_shop
    node = uri(kb, "shop/util.py#slugify")
    rendering = kb.nodes.get_renderings([node], depths=[9])[node][9]
    lines = (root / "shop/util.py").read_text().split("\n")
    assert rendering.content == "\n".join(lines[rendering.line_start - 1 : rendering.line_end])


def test_every_node_has_the_four_depths_with_token_counts(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    node = uri(kb, "shop/models.py#ShoppingCart")
    renderings = kb.nodes.get_renderings([node])[node]
    assert sorted(renderings) == [0, 2, 4, 9]
    assert all(r.token_count > 0 for r in renderings.values())


def test_a_file_at_depth_9_is_the_whole_file(indexed_shop: Indexed) -> None:
    _, root, kb = indexed_shop
    node = uri(kb, "README.md")
    assert kb.nodes.get_renderings([node], [9])[node][9].content == (root / "README.md").read_text()


def test_symbols_are_found_by_exact_name_and_files_by_path_suffix(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert [n.qualname for n in kb.nodes.find_symbols("recount")] == ["ShoppingCart.recount"]
    assert [n.path for n in kb.nodes.find_paths("models.py")] == ["shop/models.py"]


def test_files_are_listed_by_path(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert [n.path for n in kb.nodes.files()] == [
        "README.md",
        "settings.py",
        "shop/__init__.py",
        "shop/models.py",
        "shop/util.py",
    ]


def test_the_children_of_a_class_are_its_methods_in_line_order(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    children = kb.nodes.children(uri(kb, "shop/models.py#ShoppingCart"))
    assert [n.name for n in children] == ["add_item", "recount"]


def test_text_search_finds_a_symbol_by_the_parts_of_its_name(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    hits = kb.text.search("shopping cart", limit=3)
    assert uri(kb, "shop/models.py#ShoppingCart") in [h.uri for h in hits]


def test_text_search_finds_a_file_by_its_path(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    hits = kb.text.search("shop/util.py", limit=3)
    assert hits[0].uri.startswith(uri(kb, "shop/util.py"))


def test_text_search_scores_best_first_and_kinds_restrict(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    hits = kb.text.search("slugify", limit=10, kinds=["function"])
    assert [h.uri for h in hits] == [uri(kb, "shop/util.py#slugify")]
    scores = [h.score for h in kb.text.search("slugify text", limit=10)]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("query", ["'; DROP TABLE x; --", "a & b | !c", '"unclosed', "\\", ""])
def test_hostile_queries_are_searched_safely(indexed_shop: Indexed, query: str) -> None:
    _, _, kb = indexed_shop
    assert isinstance(kb.text.search(query), list)


def test_the_graph_links_imports_calls_and_inheritance(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    models = uri(kb, "shop/models.py")
    imports = {e.target for e in kb.graph.neighbors(models, ["imports"], "out")}
    calls = {e.target for e in kb.graph.neighbors(models + "#Base.save", ["calls"], "out")}
    bases = {e.target for e in kb.graph.neighbors(models + "#ShoppingCart", ["inherits"], "out")}
    assert imports == {uri(kb, "shop/util.py")}
    assert calls == {uri(kb, "shop/util.py#slugify")}
    assert bases == {models + "#Base"}


def test_pagerank_ranks_the_seed_and_its_neighbourhood_first(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    seed = uri(kb, "shop/util.py#slugify")
    hits = kb.graph.personalized_pagerank({seed: 1.0}, limit=4)
    assert hits[0].uri == seed
    assert uri(kb, "shop/models.py#Base.save") in [h.uri for h in hits]
    assert kb.graph.personalized_pagerank({"project://nowhere/x.py": 1.0}) == []


def test_history_comes_newest_first_with_the_files_of_each_commit(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    commits = kb.temporal.commits()
    assert [c.message for c in commits] == ["Add titled helper", "Initial commit"]
    assert set(commits[0].files) == {"shop/models.py", "shop/util.py"}
    assert [c.message for c in kb.temporal.commits(path=uri(kb, "README.md"))] == ["Initial commit"]


def test_files_changed_together_are_counted(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert dict(kb.temporal.co_changed("shop/util.py"))["shop/models.py"] == 2


def test_secrets_never_reach_the_store(indexed_shop: Indexed) -> None:
    _, _, kb = indexed_shop
    assert kb.text.search(AWS_KEY) == []
    assert kb.nodes.find_paths(".env") == []
    settings = uri(kb, "settings.py")
    assert AWS_KEY not in kb.nodes.get_renderings([settings], [9])[settings][9].content


def test_a_refresh_reads_only_the_changed_files(
    indexed_shop: Indexed, write: Callable[[Path, dict[str, str]], None]
) -> None:
    store, root, _ = indexed_shop
    write(root, {"shop/util.py": "def hyphenate(text):\n    return text\n"})
    stats = store.index(root)
    kb = store.open(root)
    assert (stats.files_parsed, stats.files_unchanged) == (1, 4)
    assert [n.name for n in kb.nodes.find_symbols("hyphenate")] == ["hyphenate"]
    assert kb.nodes.find_symbols("slugify") == []


def test_a_deleted_file_leaves_the_store(indexed_shop: Indexed) -> None:
    store, root, _ = indexed_shop
    (root / "README.md").unlink()
    stats = store.index(root)
    kb = store.open(root)
    assert stats.files_removed == 1
    assert kb.nodes.find_paths("README.md") == []
    assert kb.text.search("sells things") == []


def test_two_projects_in_one_store_do_not_see_each_other(
    store: Store, tmp_path: Path, write: Callable[[Path, dict[str, str]], None]
) -> None:
    first, second = tmp_path / "alpha", tmp_path / "beta"
    write(first, {"a.py": "def only_in_alpha():\n    pass\n"})
    write(second, {"b.py": "def only_in_beta():\n    pass\n"})
    store.index(first)
    store.index(second)
    alpha = store.open(first)
    assert [n.name for n in alpha.nodes.find_symbols("only_in_alpha")] == ["only_in_alpha"]
    assert alpha.nodes.find_symbols("only_in_beta") == []
    assert alpha.text.search("beta") == []
    assert [n.path for n in alpha.nodes.files()] == ["a.py"]


class _HashEmbedder:
    """An index contributor with 8-dimensional vectors derived from each node's text."""

    name = "hash-embedder"

    def contribute(self, session: Any) -> dict[str, int]:
        texts = list(session.iter_node_texts(depth=9, kinds=["function", "method"]))
        vector = session.backends.vector
        missing = set(vector.missing("hash-8", {u: d for u, d, _ in texts}))
        todo = [(u, d, t) for u, d, t in texts if u in missing]
        if todo:
            vector.upsert(
                "hash-8", [u for u, _, _ in todo], [d for _, d, _ in todo],
                np.stack([embed(t) for _, _, t in todo]),
            )  # fmt: skip
        return {"embedded": len(todo)}


def embed(text: str) -> np.ndarray:
    digest = hashlib.sha256(text.encode()).digest()
    return np.frombuffer(digest[:32], dtype=np.uint8).astype(np.float32)[:8] + 1.0


def test_vectors_written_at_index_time_are_searched_by_cosine(store: Store, shop: Path) -> None:
    stats = store.index(shop, contributors=[_HashEmbedder()])
    kb = store.open(shop)
    node = uri(kb, "shop/util.py#slugify")
    text = kb.nodes.get_renderings([node], [9])[node][9].content
    hits = kb.vector.search("hash-8", embed(text), limit=3)
    assert stats.contributors["hash-embedder"].startswith("ok")
    assert kb.vector.models() == ["hash-8"]
    assert hits[0].uri == node
    assert hits[0].score == pytest.approx(1.0, abs=1e-3)  # the SQLite store rescores float16


def test_unchanged_nodes_are_not_embedded_again(store: Store, shop: Path) -> None:
    store.index(shop, contributors=[_HashEmbedder()])
    stats = store.index(shop, contributors=[_HashEmbedder()])
    assert stats.contributors["hash-embedder"] == "ok (embedded 0)"


def test_an_index_without_vectors_has_no_vector_backend(indexed_shop: Indexed) -> None:
    assert indexed_shop[2].vector is None


def test_opening_a_repository_never_indexed_is_a_clear_error(store: Store, tmp_path: Path) -> None:
    (tmp_path / "never").mkdir()
    with pytest.raises(KnowledgeBaseError, match="index"):
        store.open(tmp_path / "never")
