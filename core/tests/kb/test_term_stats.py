"""The search units: what a term's document frequency is a share of."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from contextfuse.backends import BackendSet
from contextfuse.kb import IndexStats
from contextfuse.kb.layout import DEFAULT_INDEX_DIR
from contextfuse.kb.parse_pieces import PIECE_LINES
from contextfuse.kb.term_stats import SEARCH_UNITS_KEY


def closure_module(root: Path) -> Path:
    """A repository whose one function is longer than a piece and declares two functions."""
    filler = "".join(f"  total += step({i});\n" for i in range(PIECE_LINES))
    (root / "plugin.js").write_text(
        "function enablePlugin() {\n"
        "  function applyChanges(base, changes) {\n    return changes.reduce(merge, base);\n  }\n"
        "  function undoChanges(base) {\n    return base.undo();\n  }\n"
        f"{filler}"
        "  loadPlugin({ applyChanges, undoChanges });\n"
        "}\n"
    )
    return root


@contextmanager
def index_db(root: Path) -> Iterator[sqlite3.Connection]:
    """The index file, committed and closed on leaving (a connection's own ``with`` does
    not close it)."""
    with closing(sqlite3.connect(root / DEFAULT_INDEX_DIR / "index.db")) as conn, conn:
        yield conn


def test_declarations_inside_a_function_are_not_search_units(
    tmp_path: Path, build: Callable[..., IndexStats]
) -> None:
    root = closure_module(tmp_path)
    build(root)
    with index_db(root) as conn:
        nodes = [qualname for (qualname,) in conn.execute("SELECT qualname FROM nodes")]
        nested = conn.execute(
            "SELECT count(*) FROM nodes n JOIN nodes p ON p.id = n.parent_id"
            " WHERE p.kind = 'function'"
        ).fetchone()[0]
        (units,) = conn.execute("SELECT value FROM meta WHERE key = ?", (SEARCH_UNITS_KEY,))
    assert "enablePlugin.applyChanges" in nodes
    assert nested >= 2
    assert int(units[0]) == len(nodes) - nested


def test_an_index_without_the_stored_count_counts_its_search_units(
    tmp_path: Path,
    build: Callable[..., IndexStats],
    opened: Callable[..., BackendSet],
) -> None:
    root = closure_module(tmp_path)
    build(root)
    with index_db(root) as conn:
        (stored,) = conn.execute("SELECT value FROM meta WHERE key = ?", (SEARCH_UNITS_KEY,))
        conn.execute("DELETE FROM meta WHERE key = ?", (SEARCH_UNITS_KEY,))
    text = opened(root).text
    assert text._search_units() == int(stored[0])  # type: ignore[attr-defined]
