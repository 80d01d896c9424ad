"""Full-text search scores a query once and serves every kind and depth from those rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextfuse.backends import BackendSet
from contextfuse.kb import generation, scored_matches
from contextfuse.kb.bm25_bound import bounded_best
from contextfuse.kb.scored_matches import COLUMNS, WEIGHTS

U = "project://tie-repo/"
#: Every module holds the same two functions: their nodes tie on every query term.
SAME = 'def cursor_window(shard):\n    """Rotate the cursor window."""\n    return shard\n\n\n'
SAME += "def shard_ledger(cursor):\n    return cursor\n"


#: Words of the functions: each module's function is named one and returns another, so
#: each word is in a share of the nodes, the modules of one pair of words tie, and a search of
#: two words finds nodes holding one of them and nodes holding both.
WORDS = ("cursor", "window", "shard", "ledger", "rotate", "budget", "packet", "trace")


def module(i: int) -> str:
    name, other = WORDS[i % len(WORDS)], WORDS[(i // len(WORDS)) % len(WORDS)]
    return f"def {name}(value):\n    return value.{other}\n"


def tied_repo(root: Path, write: Callable[..., Any], modules: int = 30) -> Path:
    files = {f"pkg/mod{i:03d}.py": module(i) for i in range(modules)}
    files["pkg/mod001.py"] += "\n\ndef zebra(value):\n    return value\n"  # a rare word
    write(root, files)
    return root


def joined_query(index_db: Path, match: str, limit: int, kinds: tuple[str, ...] = ()) -> list:
    """What the search ran before: FTS5 joined to the nodes, ordered by rank, limited."""
    weights = ", ".join(str(w) for w in WEIGHTS)
    sql = (
        f"SELECT n.uri, -bm25(fts, {weights}) AS score FROM fts JOIN nodes n"
        " ON n.id = fts.rowid WHERE fts MATCH ?"
    )
    if kinds:
        sql += f" AND n.kind IN ({','.join('?' * len(kinds))})"
    sql += " ORDER BY -score LIMIT ?"
    conn = sqlite3.connect(index_db)
    try:
        return conn.execute(sql, [match, *kinds, limit]).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("depth", [scored_matches._DEPTH, 3])
def test_tied_hits_cut_by_the_limit_are_the_ones_the_joined_query_keeps(
    depth: int,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    write: Callable[..., Any],
    build: Callable[..., Any],
    opened: Callable[..., Any],
) -> None:
    monkeypatch.setattr(scored_matches, "_DEPTH", depth)  # 3: every search reads deeper
    root = tied_repo(tmp_path / "tie-repo", write, modules=100)
    build(root)
    kb: BackendSet = opened(root)
    index_db = root / ".contextfuse" / "index.db"
    for words in ("cursor", "cursor window", "rotate ledger", "shard ledger zebra", "trace"):
        match = " OR ".join(f'"{word}"' for word in words.split())
        for kinds in ((), ("function",), ("file",)):
            for limit in (1, 7, 25, 200):
                hits = kb.text.search(words, limit=limit, kinds=list(kinds) or None)
                expected = joined_query(index_db, match, limit, kinds)
                assert [(h.uri, h.score) for h in hits] == sorted(
                    expected, key=lambda row: (-row[1], row[0])
                )


def test_the_rows_proved_best_are_fts5s_best_rows_with_its_scores(
    tmp_path: Path, write: Callable[..., Any], build: Callable[..., Any]
) -> None:
    root = tied_repo(tmp_path / "tie-repo", write, modules=100)
    build(root)
    conn = sqlite3.connect(root / ".contextfuse" / "index.db")
    try:
        for terms in (["rotate", "ledger"], ["shard", "ledger", "zebra"], ["window", "cursor"]):
            bounded = bounded_best(conn, terms, COLUMNS, WEIGHTS)
            assert bounded is not None
            ids, ranks = bounded
            weights = ", ".join(str(w) for w in WEIGHTS)
            rows = conn.execute(
                f"SELECT rowid, bm25(fts, {weights}) AS r FROM fts WHERE fts MATCH ? ORDER BY r",
                (" OR ".join(f'"{t}"' for t in terms),),
            ).fetchall()
            assert len(ids) < len(rows)
            assert list(zip(ids.tolist(), ranks.tolist(), strict=True)) == rows[: len(ids)]
            assert ids.size or "zebra" in terms  # one rare word's bound is above every row
    finally:
        conn.close()


def test_a_query_of_a_folded_word_is_left_to_fts5(
    tmp_path: Path, write: Callable[..., Any], build: Callable[..., Any]
) -> None:
    root = tied_repo(tmp_path / "tie-repo", write)
    build(root)
    conn = sqlite3.connect(root / ".contextfuse" / "index.db")
    try:
        assert bounded_best(conn, ["café", "cursor"], COLUMNS, WEIGHTS) is None
    finally:
        conn.close()


def test_every_search_of_one_query_sees_the_same_scores(
    tmp_path: Path, write: Callable[..., Any], build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    root = tied_repo(tmp_path / "tie-repo", write)
    build(root)
    kb: BackendSet = opened(root)
    everything = {h.uri: h.score for h in kb.text.search("cursor window", limit=500)}
    functions = kb.text.search("cursor window", limit=10, kinds=["function"])
    assert len(functions) == 10
    assert [h.score for h in functions] == [everything[h.uri] for h in functions]
    assert all("#" in h.uri for h in functions)


def test_a_search_after_a_change_sees_the_index_as_it_is_now(
    tmp_path: Path, write: Callable[..., Any], build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    root = tied_repo(tmp_path / "tie-repo", write, modules=3)
    build(root)
    kb: BackendSet = opened(root)  # kept open across the change, as a service keeps it
    before = kb.text.search("window", kinds=["function"])
    assert U + "pkg/mod001.py#window" in {h.uri for h in before}
    write(root, {"pkg/mod001.py": "def window_total(window):\n    return sum(window)\n"})
    build(root)
    after = {h.uri for h in kb.text.search("window", kinds=["function"])}
    assert U + "pkg/mod001.py#window" not in after
    assert U + "pkg/mod001.py#window_total" in after


def test_rows_read_from_a_later_position_first_leave_the_earlier_ones_to_be_read(
    tmp_path: Path, write: Callable[..., Any], build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    # Requests side by side: one search goes deeper at the position it had reached on a
    # list that another request's searches dropped meanwhile, so it reads the new list's
    # rows from there; the next search of the query starts at the first row (a KeyError).
    root = tied_repo(tmp_path / "tie-repo", write, modules=100)
    build(root)
    kb: BackendSet = opened(root)
    index_db = root / ".contextfuse" / "index.db"
    database = kb.nodes.database
    scorer = scored_matches.MatchScorer()
    terms = ("cursor", "window")
    with database.snapshot() as conn:
        key = (generation.cache_key(conn), terms)
        ranked = scorer._ranked(conn, key, scored_matches._DEPTH)
        scored_matches._read_nodes(conn, ranked, 2, 5)
        hits = scorer.best(conn, terms, 200)
    assert hits == sorted(
        joined_query(index_db, '"cursor" OR "window"', 200), key=lambda row: (-row[1], row[0])
    )
