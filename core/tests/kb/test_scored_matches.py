"""Full-text search scores a query once and serves every kind and depth from those rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextfuse.backends import BackendSet
from contextfuse.kb.scored_matches import WEIGHTS

U = "project://tie-repo/"
#: Every module holds the same two functions: their nodes tie on every query term.
SAME = 'def cursor_window(shard):\n    """Rotate the cursor window."""\n    return shard\n\n\n'
SAME += "def shard_ledger(cursor):\n    return cursor\n"


def tied_repo(root: Path, write: Callable[..., Any], modules: int = 30) -> Path:
    write(root, {f"pkg/mod{i:02d}.py": SAME for i in range(modules)})
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


def test_tied_hits_cut_by_the_limit_are_the_ones_the_joined_query_keeps(
    tmp_path: Path, write: Callable[..., Any], build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    root = tied_repo(tmp_path / "tie-repo", write)
    build(root)
    kb: BackendSet = opened(root)
    index_db = root / ".contextfuse" / "index.db"
    for kinds in ((), ("function",), ("file",)):
        for limit in (1, 7, 25, 200):
            hits = kb.text.search("cursor", limit=limit, kinds=list(kinds) or None)
            expected = joined_query(index_db, '"cursor"', limit, kinds)
            assert [(h.uri, h.score) for h in hits] == sorted(
                expected, key=lambda row: (-row[1], row[0])
            )


def test_every_search_of_one_query_sees_the_same_scores(
    tmp_path: Path, write: Callable[..., Any], build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    root = tied_repo(tmp_path / "tie-repo", write)
    build(root)
    kb: BackendSet = opened(root)
    everything = {h.uri: h.score for h in kb.text.search("cursor window", limit=500)}
    functions = kb.text.search("cursor window", limit=10, kinds=["function"])
    assert [h.score for h in functions] == [everything[h.uri] for h in functions]
    assert all("#" in h.uri for h in functions)


def test_a_search_after_a_change_sees_the_index_as_it_is_now(
    tmp_path: Path, write: Callable[..., Any], build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    root = tied_repo(tmp_path / "tie-repo", write, modules=3)
    build(root)
    kb: BackendSet = opened(root)  # kept open across the change, as a service keeps it
    before = kb.text.search("ledger", kinds=["function"])
    assert U + "pkg/mod01.py#shard_ledger" in {h.uri for h in before}
    write(root, {"pkg/mod01.py": "def ledger_total(ledger):\n    return sum(ledger)\n"})
    build(root)
    after = {h.uri for h in kb.text.search("ledger", kinds=["function"])}
    assert U + "pkg/mod01.py#shard_ledger" not in after
    assert U + "pkg/mod01.py#ledger_total" in after
