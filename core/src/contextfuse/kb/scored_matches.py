"""One BM25 pass per full-text query, shared by the searches that differ only in kinds and depth.

A strategy searches one request several times (arce: every node, implementation code, whole
files), and FTS5 scores every node holding a query term each time, then joins each of those
rows to ``nodes`` to test its kind, before it keeps the best few. In an index of 600,000
nodes a common word is in tens of thousands of them. Here the full-text query runs once,
without the join: its rows (node id, ``bm25()``) are kept in the order that
``ORDER BY rank LIMIT n`` gives them (SQLite keeps rows of equal rank in the order it met
them, and the full-text scan meets them by ascending node id). Each search then reads
only the nodes of the best rows, a growing chunk at a time, until it has ``limit`` of the
kinds it asked for: the same hits, with the same scores, as the joined query.

The rows are kept per index generation (``contextfuse.kb.generation``), read in the
caller's read snapshot, so a change to the index is never answered from older rows.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from itertools import chain

import attrs
import numpy as np
import numpy.typing as npt

from contextfuse.kb import generation
from contextfuse.kb.bm25_bound import bounded_best

__all__ = ["MatchScorer"]

#: The search table's columns and their bm25() weights.
COLUMNS = ("name", "path", "body", "parts")
WEIGHTS = (10.0, 4.0, 1.0, 0.5)
#: Queries whose rows are kept (a request's spelled words and their inflections, for the
#: few requests that run at once).
_KEPT = 4
#: Rows taken from SQLite at first: enough for a few hundred hits of a kind that is a sixth
#: of the nodes; a search that needs more takes eight times as many, and so on.
_DEPTH = 4096
#: Nodes read at once: at least the first, at most the second (SQLite binds at most 32,766
#: parameters).
_FIRST_CHUNK = 64
_CHUNK = 16_384
_BM25 = f"bm25(fts, {', '.join(str(w) for w in WEIGHTS)})"
#: A kept query: the index generation it was scored in and its terms (OR-ed).
_Key = tuple[str, tuple[str, ...]]


@attrs.define
class _Ranked:
    """A query's best matching node ids and their ``bm25()`` (lower is better), best first,
    and the nodes read so far for them (shared by the searches of the query)."""

    ids: npt.NDArray[np.int64]
    ranks: npt.NDArray[np.float64]
    #: True when ``ids`` holds every matching row, not only the best ones.
    complete: bool
    #: The rows asked of SQLite (0: the rows that ``bounded_best`` proved the best).
    depth: int
    #: Node id -> (uri, kind), for the rows before ``read``; None: no such node.
    nodes: dict[int, tuple[str, str] | None] = attrs.field(factory=dict)
    read: int = 0


class MatchScorer:
    """The best nodes for FTS5 ``MATCH`` expressions, each expression scored once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[_Key, _Ranked] = OrderedDict()
        self._scoring: dict[_Key, threading.Lock] = {}

    def best(
        self,
        conn: sqlite3.Connection,
        terms: Sequence[str],
        limit: int,
        kinds: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """``(uri, score)`` of the ``limit`` best nodes of ``kinds`` (all when None) matching
        any of ``terms``, best first, as ``conn`` (inside a read snapshot) sees the index; the
        score is ``-bm25()``, higher is better."""
        key = (generation.cache_key(conn), tuple(terms))
        ranked = self._ranked(conn, key, 0)
        wanted = frozenset(kinds) if kinds else None
        found: list[tuple[str, float]] = []
        position = 0
        while len(found) < limit:
            if position >= len(ranked.ids):
                if ranked.complete:
                    break
                deeper = max(_DEPTH, 8 * ranked.depth, 2 * len(ranked.ids))
                ranked = self._ranked(conn, key, deeper)
                continue
            end = _read_nodes(conn, ranked, position, 2 * (limit - len(found)))
            ids = ranked.ids[position:end].tolist()
            for node, rank in zip(ids, ranked.ranks[position:end].tolist(), strict=True):
                row = ranked.nodes[node]  # a row of no node is left out, as by the join
                if row is not None and (wanted is None or row[1] in wanted):
                    found.append((row[0], -rank))
                    if len(found) == limit:
                        break
            position = end
        return found

    def _ranked(self, conn: sqlite3.Connection, key: _Key, depth: int) -> _Ranked:
        """The best ``depth`` rows of ``key``'s query (or more; 0: the first rows taken),
        scored once per key."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and (kept.complete or kept.depth >= depth):
                self._kept.move_to_end(key)
                return kept
            gate = self._scoring.setdefault(key, threading.Lock())
        with gate:  # a second thread asking for the same query waits for the first's rows
            with self._lock:
                kept = self._kept.get(key)
            if kept is not None and (kept.complete or kept.depth >= depth):
                return kept
            try:
                ranked = _first(conn, key[1]) if depth == 0 else _score(conn, key[1], depth)
                if kept is not None:  # the nodes read for the shallower rows still hold
                    ranked.nodes, ranked.read = kept.nodes, kept.read
                with self._lock:
                    self._kept[key] = ranked
                    self._kept.move_to_end(key)
                    while len(self._kept) > _KEPT:
                        self._kept.popitem(last=False)
            finally:
                with self._lock:
                    self._scoring.pop(key, None)
            return ranked


def _first(conn: sqlite3.Connection, terms: tuple[str, ...]) -> _Ranked:
    """The rows proved best without scoring every row when the query allows, else the best
    ``_DEPTH`` rows."""
    bounded = bounded_best(conn, terms, COLUMNS, WEIGHTS)
    if bounded is None:
        return _score(conn, terms, _DEPTH)
    return _Ranked(ids=bounded[0], ranks=bounded[1], complete=False, depth=0)


def _score(conn: sqlite3.Connection, terms: tuple[str, ...], depth: int) -> _Ranked:
    """The best ``depth`` rows matching any of ``terms`` with their ``bm25()``, sorted by
    rank, then node id: every row is scored, only the best leave SQLite."""
    match = " OR ".join(f'"{term}"' for term in terms)
    rows = conn.execute(
        f"SELECT rowid, {_BM25} AS score_rank FROM fts WHERE fts MATCH ?"
        " ORDER BY score_rank LIMIT ?",
        (match, depth),
    ).fetchall()
    pairs = np.fromiter(chain.from_iterable(rows), dtype=np.float64, count=2 * len(rows))
    ids = pairs[0::2].astype(np.int64)  # node ids are far below 2**53: exact in a double
    ranks = pairs[1::2]
    order = np.lexsort((ids, ranks))  # SQLite's order already; ties by id made explicit
    return _Ranked(
        ids=ids[order],
        ranks=np.ascontiguousarray(ranks[order]),
        complete=len(rows) < depth,
        depth=depth,
    )


def _read_nodes(conn: sqlite3.Connection, ranked: _Ranked, position: int, wanted: int) -> int:
    """Read the nodes of rows from ``position`` on (at least ``wanted`` of them, unless read
    already); returns the end of the rows whose nodes are known.

    ``ranked.read`` only ever covers rows read from the first on: a search that went past
    the rows of a shallower list meets the deeper one at its own position, and when another
    thread's searches dropped the shallower list meanwhile, the deeper one is new and the
    rows before that position were never read."""
    if ranked.read > position:
        return ranked.read
    ids = ranked.ids[position : position + min(_CHUNK, max(wanted, _FIRST_CHUNK))].tolist()
    marks = ",".join("?" * len(ids))
    found = {
        node: (uri, kind)
        for node, uri, kind in conn.execute(
            f"SELECT id, uri, kind FROM nodes WHERE id IN ({marks})", ids
        )
    }
    ranked.nodes.update((node, found.get(node)) for node in ids)
    end = position + len(ids)
    if position <= ranked.read:  # contiguous with the rows read before
        ranked.read = max(ranked.read, end)
    return end
