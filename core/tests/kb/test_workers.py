"""Worker processes build exactly the index one process builds."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any


def dump(index_db: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(index_db)
    try:
        return conn.execute(
            "SELECT n.uri, n.content_hash, r.depth, r.content, r.token_count, r.line_start,"
            " r.line_end FROM nodes n JOIN renderings r ON r.node_id = n.id ORDER BY 1, 3"
        ).fetchall()
    finally:
        conn.close()


def test_parallel_workers_build_the_same_index(
    repo: Path, tmp_path: Path, build: Callable[..., Any]
) -> None:
    one = build(repo, index_dir=tmp_path / "one", workers=1)
    two = build(repo, index_dir=tmp_path / "two", workers=2)
    assert (one.files, one.nodes, one.edges, one.tokens) == (
        two.files,
        two.nodes,
        two.edges,
        two.tokens,
    )
    assert dump(tmp_path / "one" / "index.db") == dump(tmp_path / "two" / "index.db")
