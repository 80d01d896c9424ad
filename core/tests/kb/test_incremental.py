"""Refreshing an index: only what changed is read again."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextfuse.backends import BackendSet

U = "project://shop-repo/"


def snapshot(kb: BackendSet, queries: list[str]) -> list[list[tuple[str, float]]]:
    return [[(h.uri, round(h.score, 9)) for h in kb.text.search(q)] for q in queries]


def test_a_refresh_without_changes_reads_no_file(repo: Path, build: Callable[..., Any]) -> None:
    first = build(repo)
    second = build(repo)
    assert (second.files_parsed, second.bytes_read, second.files_removed) == (0, 0, 0)
    assert second.files_unchanged == first.files
    assert (second.nodes, second.edges, second.tokens) == (first.nodes, first.edges, first.tokens)


def test_a_refresh_without_changes_is_near_instant(repo: Path, build: Callable[..., Any]) -> None:
    build(repo)
    assert build(repo).seconds < 1.0


def test_a_changed_file_is_parsed_again_and_its_old_symbols_disappear(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any], write: Callable[..., Any]
) -> None:
    build(repo)
    write(repo, {"shop/util.py": "def shout(text):\n    return text.upper()\n"})
    stats = build(repo)
    kb = opened(repo)
    assert stats.files_parsed == 1
    assert kb.nodes.find_symbols("unused_helper_function") == []
    assert [n.uri for n in kb.nodes.find_symbols("shout")] == [U + "shop/util.py#shout"]
    assert all("unused_helper" not in h.uri for h in kb.text.search("unused helper function"))
    assert kb.text.search("shout")[0].uri == U + "shop/util.py#shout"


def test_a_deleted_file_leaves_the_index(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    build(repo)
    os.remove(repo / "shop/util.py")
    stats = build(repo)
    kb = opened(repo)
    assert stats.files_removed == 1
    assert kb.nodes.find_paths("shop/util.py") == []
    assert kb.text.search("slugify", kinds=["function"]) == []
    assert kb.graph.neighbors(U + "shop/util.py") == []


def test_a_touched_file_with_the_same_content_is_not_parsed(
    repo: Path, build: Callable[..., Any]
) -> None:
    build(repo)
    os.utime(repo / "shop/models.py", ns=(1, 1))
    stats = build(repo)
    assert stats.files_parsed == 0
    assert stats.bytes_read == (repo / "shop/models.py").stat().st_size
    assert build(repo).bytes_read == 0  # its new mtime was recorded


def test_a_file_that_becomes_binary_leaves_the_index(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any], write: Callable[..., Any]
) -> None:
    build(repo)
    write(repo, {"README.md": b"\x00\x01\x02binary now"})
    stats = build(repo)
    assert ("README.md", "binary") in stats.skipped_files
    assert opened(repo).nodes.find_paths("README.md") == []


def test_node_uris_stay_the_same_across_refreshes(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any], write: Callable[..., Any]
) -> None:
    build(repo)
    before = {n.uri for n in opened(repo).nodes.children(U + "shop/models.py")}
    write(repo, {"shop/models.py": (repo / "shop/models.py").read_text() + "\n# end\n"})
    build(repo)
    after = {n.uri for n in opened(repo).nodes.children(U + "shop/models.py")}
    assert before == after


def test_an_index_refreshed_many_times_equals_one_built_from_scratch(
    repo: Path,
    tmp_path: Path,
    build: Callable[..., Any],
    opened: Callable[..., Any],
    write: Callable[..., Any],
) -> None:
    build(repo)
    write(repo, {"shop/util.py": "def shout(text):\n    return text.upper()\n"})
    build(repo)
    write(repo, {"shop/extra.py": "class Extra:\n    def shout(self):\n        return shout(1)\n"})
    os.remove(repo / "README.md")
    build(repo)
    write(repo, {"shop/util.py": "def whisper(text):\n    return text.lower()\n"})
    build(repo)
    fresh_dir = tmp_path / "fresh-index"
    build(repo, index_dir=fresh_dir)
    queries = ["shout whisper", "cart item", "shop guide", "extra", "slugify text"]
    refreshed, fresh = opened(repo), opened(repo, index_dir=fresh_dir)
    assert snapshot(refreshed, queries) == snapshot(fresh, queries)
    assert sorted(refreshed.graph.neighbors(U + "shop/extra.py#Extra.shout")) == sorted(
        fresh.graph.neighbors(U + "shop/extra.py#Extra.shout")
    )
    conn = sqlite3.connect(repo / ".contextfuse" / "index.db")
    conn.execute("INSERT INTO fts (fts) VALUES ('integrity-check')")
    conn.close()


def test_rebuild_parses_everything_again(repo: Path, build: Callable[..., Any]) -> None:
    first = build(repo)
    again = build(repo, rebuild=True)
    assert again.rebuilt
    assert again.files_parsed == first.files
    assert again.tokens == first.tokens


def test_another_tokenizer_counts_everything_again(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    class Characters:
        name = "characters"

        def count(self, text: str) -> int:
            return len(text)

        def count_many(self, texts: list[str]) -> list[int]:
            return [len(t) for t in texts]

    build(repo)
    stats = build(repo, tokenizer=Characters())
    assert stats.files_parsed == stats.files
    kb = opened(repo)
    full = kb.nodes.get_renderings([U + "shop/util.py"], [9])[U + "shop/util.py"][9]
    assert full.token_count == len(full.content)


def all_edges(kb: BackendSet) -> set[tuple[str, str, str, float]]:
    found = set()
    for file in kb.nodes.files():
        uris = [file.uri, *(n.uri for n in kb.nodes.children(file.uri))]
        uris += [n.uri for u in uris[1:] for n in kb.nodes.children(u)]
        for uri in uris:
            found.update((e.source, e.target, e.kind, e.weight) for e in kb.graph.neighbors(uri))
    return found


def test_an_edit_inside_a_function_relinks_it_and_keeps_the_other_edges(
    repo: Path,
    tmp_path: Path,
    build: Callable[..., Any],
    opened: Callable[..., Any],
    write: Callable[..., Any],
) -> None:
    build(repo)
    models = (repo / "shop/models.py").read_text()
    write(repo, {"shop/models.py": models.replace("self.recount()", "slugify(item)")})
    build(repo)
    build(repo, index_dir=tmp_path / "fresh")
    refreshed, fresh = opened(repo), opened(repo, index_dir=tmp_path / "fresh")
    add_item = U + "shop/models.py#ShoppingCart.add_item"
    calls = {e.target for e in refreshed.graph.neighbors(add_item, ["calls"], "out")}
    assert calls == {U + "shop/util.py#slugify"}
    assert all_edges(refreshed) == all_edges(fresh)
