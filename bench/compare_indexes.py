"""Compare two index files table by table: the check that a change to the indexer kept the
index the same.

Every table of the index is compared row by row in key order (a digest of each, and the
first differing rows where they differ): files, nodes, renderings with their token counts,
edges, vectors, vocabulary, skipped, meta, history and plan tables. The full-text tables are
compared by what they index, not by how their segments are laid out: every (term, node,
column, position) of ``fts5vocab(..., 'instance')`` and each node's token counts per column
(``fts_docsize``). Meta keys that hold a moment or a random key (``indexed_at``,
``generation``) are left out; ``--ignore-mtime`` leaves out the files' and skipped files'
mtimes (for two indexes of two copies of the same tree).

With ``--repo`` and ``--query`` (repeatable), each query is also assembled from both
indexes (``contextfuse assemble --format json``, budgets 8,000 and 27,000, the default
strategies and semantic-embedding alone) and the payloads compared without what differs
per call (payload and fragment ids, moments): the same index must give the same payload.

Compare fresh indexes: an assembly records the access tiers of what it read (``tiers``,
with the moment), so the tables are compared before the assemblies.

Run::

    python bench/compare_indexes.py BEFORE/index.db AFTER/index.db [--ignore-mtime]
        [--repo REPO --query TEXT ...]

Prints one line per table (and per assembly) and exits 1 when any differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from itertools import zip_longest
from pathlib import Path

#: Meta keys whose value differs between two runs by nature.
_VOLATILE_META = ("indexed_at", "generation")
#: Physical storage of the full-text tables (segments): compared through their content.
_PHYSICAL_SUFFIXES = ("_data", "_idx", "_config", "_content")
_SHOWN = 5  # differing rows printed per table


def tables(conn: sqlite3.Connection) -> list[str]:
    """The ordinary tables of an index; full-text tables compared through their content."""
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
    virtual = {name for name, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL")}
    names = []
    for name, _ in rows:
        if name in virtual or name.startswith("sqlite_"):
            continue
        base = next((name[: -len(s)] for s in _PHYSICAL_SUFFIXES if name.endswith(s)), None)
        if base in virtual:
            continue  # kept: ``<fts>_docsize``, each row's token count per column
        names.append(name)
    return sorted(names)


def full_text_tables(conn: sqlite3.Connection) -> list[str]:
    """The FTS5 tables of an index."""
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%fts5(%'"
    ).fetchall()
    return sorted(name for (name,) in rows)


def rows_of(
    conn: sqlite3.Connection, table: str, ignore_mtime: bool
) -> Iterator[tuple[object, ...]]:
    """Every row of ``table`` in the order of all its columns."""
    # Names as str whatever the text factory: a quoted unknown name would read as a string.
    columns = [
        name.decode() if isinstance(name, bytes) else str(name)
        for _, name, *_ in conn.execute(f"PRAGMA table_info({table})")
    ]
    if not columns:
        raise SystemExit(f"no columns found for {table}")
    if ignore_mtime:
        columns = [c for c in columns if c != "mtime_ns"]
    where = ""
    if table == "meta":
        where = " WHERE key NOT IN (" + ",".join(f"'{k}'" for k in _VOLATILE_META) + ")"
    listed = ", ".join(f'"{c}"' for c in columns)
    yield from conn.execute(f"SELECT {listed} FROM {table}{where} ORDER BY {listed}")


def instances_of(conn: sqlite3.Connection, table: str) -> Iterator[tuple[object, ...]]:
    """Every (term, rowid, column, offset) a full-text table indexes."""
    name = f"temp.compare_{table}"
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, {table}, instance)"
    )
    yield from conn.execute(f"SELECT term, doc, col, offset FROM {name} ORDER BY 1, 2, 3, 4")


def compare(
    label: str, left: Iterator[tuple[object, ...]], right: Iterator[tuple[object, ...]]
) -> bool:
    """Print one line for ``label`` (and the first differing rows); True when the same."""
    digests = (hashlib.sha256(), hashlib.sha256())
    counts = [0, 0]
    differing: list[tuple[object, object]] = []
    for a, b in zip_longest(left, right):
        for side, row in enumerate((a, b)):
            if row is not None:
                digests[side].update(repr(row).encode())
                counts[side] += 1
        if a != b and len(differing) < _SHOWN:
            differing.append((a, b))
    same = digests[0].digest() == digests[1].digest() and counts[0] == counts[1]
    verdict = "same" if same else "DIFFERENT"
    print(f"{label:<28} {counts[0]:>10} {counts[1]:>10}  {verdict}  {digests[0].hexdigest()[:16]}")
    for a, b in differing:
        print(f"    before: {_short(a)}\n    after:  {_short(b)}")
    return same


def _short(row: object) -> str:
    text = repr(row)
    return text if len(text) < 300 else text[:300] + "..."


#: Fields of a payload that differ from call to call.
_PER_CALL = frozenset({"payload_id", "fragment_id", "assembled_at", "created_at"})


def payload(repo: Path, index: Path, query: str, options: list[str]) -> object:
    """The JSON payload ``contextfuse assemble`` gives from ``index``, without its per-call
    fields (the provenance map is keyed by fragment ids: its values are kept, in order)."""
    done = subprocess.run(
        ["contextfuse", "assemble", "--repo", str(repo), "--index-dir", str(index.parent),
         "--no-refresh", "--no-daemon", "-q", "--format", "json", *options, query],
        capture_output=True, text=True, check=True,
    )  # fmt: skip

    def strip(value: object) -> object:
        if isinstance(value, dict):
            if "provenance_map" in value:
                value = {**value, "provenance_map": list(value["provenance_map"].values())}
            return {k: strip(v) for k, v in value.items() if k not in _PER_CALL}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(done.stdout))


def compare_assemblies(repo: Path, before: Path, after: Path, queries: list[str]) -> bool:
    """Assemble every query from both indexes; print one line each; True when all agree."""
    same = True
    for query in queries:
        for budget in ("8000", "27000"):
            for strategy in ([], ["--strategy", "semantic-embedding"]):
                options = ["--budget", budget, *strategy]
                a, b = (payload(repo, index, query, options) for index in (before, after))
                agree = a == b
                same &= agree
                label = f"budget {budget} {strategy[-1] if strategy else 'default'}"
                verdict = "same" if agree else "DIFFERENT"
                print(f"assemble {label:<35} {verdict}  {query[:50]}")
    return same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--ignore-mtime", action="store_true", help="leave out files' mtimes")
    parser.add_argument("--repo", type=Path, help="the repository both indexes are of")
    parser.add_argument("--query", action="append", default=[], help="assemble this from both")
    args = parser.parse_args(argv)
    if args.query and args.repo is None:
        parser.error("--query needs --repo")
    before = sqlite3.connect(f"file:{args.before}?mode=ro", uri=True)
    after = sqlite3.connect(f"file:{args.after}?mode=ro", uri=True)
    names, fts_names = tables(before), full_text_tables(before)
    print(f"{'table':<28} {'before':>10} {'after':>10}")
    same = names == tables(after) and fts_names == full_text_tables(after)
    for name in sorted(set(names) ^ set(tables(after))):
        print(f"{name:<28} only in {'before' if name in names else 'after'}")
    names = [name for name in names if name in tables(after)]
    for conn in (before, after):
        conn.text_factory = bytes  # compare stored bytes, whatever their encoding
    for name in names:
        same &= compare(
            name, rows_of(before, name, args.ignore_mtime), rows_of(after, name, args.ignore_mtime)
        )
    for name in fts_names:
        same &= compare(
            f"{name} (instances)", instances_of(before, name), instances_of(after, name)
        )
    if args.query:
        same &= compare_assemblies(args.repo, args.before, args.after, args.query)
    print("the indexes are the same" if same else "the indexes DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
