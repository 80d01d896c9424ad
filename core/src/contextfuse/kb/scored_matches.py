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

__all__ = ["MatchScorer"]

#: bm25() weights of the columns name, path, body, parts.
WEIGHTS = (10.0, 4.0, 1.0, 0.5)
#: Queries whose rows are kept (a request's spelled words and their inflections, for the
#: few requests that run at once).
_KEPT = 8
#: Nodes read for the first chunk of a search, at least; later chunks double.
_FIRST_CHUNK = 64
_BM25 = f"bm25(fts, {', '.join(str(w) for w in WEIGHTS)})"


@attrs.frozen
class _Ranked:
    """A query's matching node ids and their ``bm25()`` (lower is better), best first."""

    ids: npt.NDArray[np.int64]
    ranks: npt.NDArray[np.float64]


class MatchScorer:
    """The best nodes for FTS5 ``MATCH`` expressions, each expression scored once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str], _Ranked] = OrderedDict()
        self._scoring: dict[tuple[str, str], threading.Lock] = {}

    def best(
        self,
        conn: sqlite3.Connection,
        match: str,
        limit: int,
        kinds: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """``(uri, score)`` of the ``limit`` best nodes of ``kinds`` (all when None) matching
        ``match``, best first, as ``conn`` (inside a read snapshot) sees the index; the score is
        ``-bm25()``, higher is better."""
        ranked = self._ranked(conn, match)
        wanted = frozenset(kinds) if kinds else None
        found: list[tuple[str, float]] = []
        start, size = 0, max(_FIRST_CHUNK, 2 * limit)
        while len(found) < limit and start < len(ranked.ids):
            ids = ranked.ids[start : start + size].tolist()
            marks = ",".join("?" * len(ids))
            nodes = {
                node: (uri, kind)
                for node, uri, kind in conn.execute(
                    f"SELECT id, uri, kind FROM nodes WHERE id IN ({marks})", ids
                )
            }
            for node, rank in zip(ids, ranked.ranks[start : start + size].tolist(), strict=True):
                row = nodes.get(node)  # a row of no node is left out, as by the join
                if row is not None and (wanted is None or row[1] in wanted):
                    found.append((row[0], -rank))
                    if len(found) == limit:
                        break
            start += size
            size = min(2 * size, 16_384)  # SQLite binds at most 32,766 parameters
        return found

    def _ranked(self, conn: sqlite3.Connection, match: str) -> _Ranked:
        key = (generation.cache_key(conn), match)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                return kept
            gate = self._scoring.setdefault(key, threading.Lock())
        with gate:  # a second thread asking for the same query waits for the first's rows
            with self._lock:
                kept = self._kept.get(key)
            if kept is not None:
                return kept
            try:
                ranked = _score(conn, match)
                with self._lock:
                    self._kept[key] = ranked
                    while len(self._kept) > _KEPT:
                        self._kept.popitem(last=False)
            finally:
                with self._lock:
                    self._scoring.pop(key, None)
            return ranked


def _score(conn: sqlite3.Connection, match: str) -> _Ranked:
    """Every row matching ``match`` with its ``bm25()``, sorted by rank, then node id."""
    rows = conn.execute(f"SELECT rowid, {_BM25} FROM fts WHERE fts MATCH ?", (match,)).fetchall()
    pairs = np.fromiter(chain.from_iterable(rows), dtype=np.float64, count=2 * len(rows))
    ids = pairs[0::2].astype(np.int64)  # node ids are far below 2**53: exact in a double
    ranks = pairs[1::2]
    order = np.lexsort((ids, ranks))
    return _Ranked(ids=ids[order], ranks=np.ascontiguousarray(ranks[order]))
