"""``GraphBackend`` over the index file: neighbours and personalized PageRank.

PageRank runs over the graph made undirected (a file's importers are as related to it as
its imports), each edge weighed down by the degree of the node it leads to (a hub called from
everywhere is no evidence of relatedness), with numpy power iteration over the edge arrays;
the arrays are built once per generation of the index and mapped from their file by every
process (``contextfuse.kb.arrays``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from contextfuse.backends import Edge, SearchHit
from contextfuse.kb import generation
from contextfuse.kb.arrays import load_arrays
from contextfuse.kb.nodes import chunked
from contextfuse.kb.store import Database

__all__ = ["EDGE_KINDS", "SQLiteGraphBackend"]

EDGE_KINDS = ("contains", "imports", "calls", "references", "inherits")
_MAX_ITERATIONS = 50  # the error shrinks by ``damping`` each round: 0.85**50 < 0.0003
_TOLERANCE = 1e-6  # L1 change between rounds
_SPARSE_SHARE = 4  # a round reads only the reached nodes' edges while they are under 1/4


class _Adjacency(NamedTuple):
    """Edges of some kinds as arrays over compact node indices, both directions."""

    ids: npt.NDArray[np.int64]  # compact index -> node id
    source: npt.NDArray[np.int64]
    target: npt.NDArray[np.int64]
    share: npt.NDArray[np.float64]  # each edge's share of its source's outgoing weight
    dangling: npt.NDArray[np.bool_]  # nodes without outgoing weight
    first: npt.NDArray[np.int64]  # node -> its first edge (edges are in order of source)


def _adjacency_arrays(
    conn: sqlite3.Connection, kinds: tuple[str, ...]
) -> dict[str, npt.NDArray[Any]]:
    """The arrays of :class:`_Adjacency` for edges of ``kinds``, read from the index."""
    codes = " ".join(f"WHEN '{kind}' THEN {i}" for i, kind in enumerate(EDGE_KINDS))
    wanted = ",".join(f"'{kind}'" for kind in EDGE_KINDS if kind in kinds) or "NULL"
    rows = conn.execute(
        f"SELECT source, target, CASE kind {codes} ELSE -1 END, weight FROM edges"
        f" WHERE kind IN ({wanted})"
    ).fetchall()
    edges = np.array(rows, dtype=np.float64).reshape(-1, 4)
    source = edges[:, 0].astype(np.int64)
    target = edges[:, 1].astype(np.int64)
    ids = np.unique(np.concatenate([source, target]))
    s = np.searchsorted(ids, source)
    t = np.searchsorted(ids, target)
    weight = edges[:, 3]
    source_all, target_all = np.concatenate([s, t]), np.concatenate([t, s])
    # A walk into a hub (a helper called from everywhere) says little about the seeds:
    # each edge counts less the more edges its receiving node has, so specific names win.
    degree = np.bincount(target_all, minlength=len(ids)).astype(np.float64)
    specific = np.concatenate([weight, weight]) / np.log2(2.0 + degree[target_all])
    out = np.bincount(source_all, weights=specific, minlength=len(ids))
    share = np.divide(
        specific, out[source_all], out=np.zeros_like(specific), where=out[source_all] > 0
    )
    # Edges in order of source, with each node's first edge: a walk's round reads only the
    # edges of the nodes its rank has reached so far.
    order = np.argsort(source_all, kind="stable")
    source_all = source_all[order]
    return {
        "ids": ids,
        "source": source_all,
        "target": target_all[order],
        "share": share[order],
        "dangling": out == 0,
        "first": np.searchsorted(source_all, np.arange(len(ids) + 1)),
    }


def _spread(graph: _Adjacency, rank: npt.NDArray[np.float64]) -> npt.NDArray[Any]:
    """One round of a walk: the rank each node receives along its edges.

    While the rank has reached few nodes (a walk from a few seeds in a large graph), only
    their edges are read; past a quarter of the nodes, every edge is.
    """
    reached = np.flatnonzero(rank)
    if len(reached) * _SPARSE_SHARE >= len(rank):
        return np.bincount(
            graph.target, weights=rank[graph.source] * graph.share, minlength=len(rank)
        )
    edges = _edges_of(graph, reached)
    return np.bincount(
        graph.target[edges],
        weights=rank[graph.source[edges]] * graph.share[edges],
        minlength=len(rank),
    )


def _walk(
    graph: _Adjacency, personal: npt.NDArray[np.float64], damping: float
) -> npt.NDArray[np.float64]:
    """Power iteration of the personalized walk until it settles.

    While the walk has reached few nodes, a round computes only theirs: the rank of a node
    never reached is 0 in every round, so each reached node gets the same value as over
    every node (its edges summed in the same order), and the walk settles in the same
    round, the sums over the reached nodes differing only in their last bits. Past a
    quarter of the nodes, every node is computed.
    """
    rank: npt.NDArray[np.float64] = personal.copy()
    support = np.flatnonzero(personal)  # every node whose rank may be non-zero
    position = np.full(len(rank), -1, dtype=np.int64)  # node -> its place in ``support``
    position[support] = np.arange(len(support))
    for _ in range(_MAX_ITERATIONS):
        if len(support) * _SPARSE_SHARE >= len(rank):
            spread = _spread(graph, rank)
            lost = rank[graph.dangling].sum()  # mass of nodes without edges returns to seeds
            updated = (1.0 - damping) * personal + damping * (spread + lost * personal)
            done = np.abs(updated - rank).sum() < _TOLERANCE
            rank = np.asarray(updated, dtype=np.float64)
        else:
            reached = np.sort(support[rank[support] != 0])
            edges = _edges_of(graph, reached)
            targets = graph.target[edges]
            fresh = np.unique(targets[position[targets] < 0])
            position[fresh] = np.arange(len(support), len(support) + len(fresh))
            support = np.concatenate([support, fresh])
            spread = np.bincount(
                position[targets],
                weights=rank[graph.source[edges]] * graph.share[edges],
                minlength=len(support),
            )
            before = rank[support]
            lost = before[graph.dangling[support]].sum()
            mine = personal[support]
            updated = (1.0 - damping) * mine + damping * (spread + lost * mine)
            done = np.abs(updated - before).sum() < _TOLERANCE
            rank[support] = updated
        if done:
            break
    return rank


def _edges_of(graph: _Adjacency, nodes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Positions of the edges out of ``nodes`` (ascending), in order of source."""
    starts = graph.first[nodes]
    counts = graph.first[nodes + 1] - starts
    ends = np.cumsum(counts)
    return np.repeat(starts - ends + counts, counts) + np.arange(int(ends[-1]) if len(ends) else 0)


class SQLiteGraphBackend:
    """The code graph: containment, imports, calls, references and inheritance."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, ...], _Adjacency] = {}
        self._version = ""

    def neighbors(
        self, uri: str, kinds: Sequence[str] | None = None, direction: str = "both"
    ) -> list[Edge]:
        """Edges touching ``uri`` (``direction``: out, in or both)."""
        if direction not in ("out", "in", "both"):
            raise ValueError(f"direction must be 'out', 'in' or 'both', not {direction!r}")
        sides = {"out": ["source"], "in": ["target"], "both": ["source", "target"]}[direction]
        kind_filter = f" AND e.kind IN ({','.join('?' * len(kinds))})" if kinds else ""
        queries = []
        params: list[object] = []
        for side in sides:
            queries.append(
                "SELECT s.uri, t.uri, e.kind, e.weight FROM edges e "
                "JOIN nodes s ON s.id = e.source JOIN nodes t ON t.id = e.target "
                f"WHERE e.{side} = (SELECT id FROM nodes WHERE uri = ?){kind_filter}"
            )
            params.extend([uri, *(kinds or ())])
        rows = self._db.read(" UNION ".join(queries) + " ORDER BY 3, 1, 2", params)
        return [Edge(s, t, kind, float(w)) for s, t, kind, w in rows]

    def personalized_pagerank(
        self,
        seeds: Mapping[str, float],
        limit: int = 50,
        kinds: Sequence[str] | None = None,
        damping: float = 0.85,
    ) -> list[SearchHit]:
        """Nodes ranked by personalized PageRank from weighted seed nodes, best first.

        Seeds are included in the ranking; unknown seed URIs are ignored.
        """
        if not 0.0 <= damping < 1.0:
            raise ValueError(f"damping must be in [0, 1), not {damping}")
        graph = self._adjacency(tuple(sorted(kinds or EDGE_KINDS)))
        seed_ids = self._ids([u for u, w in seeds.items() if w > 0])
        if not seed_ids or len(graph.ids) == 0:
            return []
        positions = np.searchsorted(graph.ids, np.fromiter(seed_ids.values(), dtype=np.int64))
        personal = np.zeros(len(graph.ids))
        for uri, pos in zip(seed_ids, positions, strict=True):
            if pos < len(graph.ids) and graph.ids[pos] == seed_ids[uri]:
                personal[pos] += float(seeds[uri])
        if personal.sum() <= 0:
            return []
        personal /= personal.sum()
        rank = _walk(graph, personal, damping)
        count = min(limit, int(np.count_nonzero(rank)))
        if count <= 0:
            return []
        top = np.argpartition(-rank, count - 1)[:count]
        top = top[np.argsort(-rank[top], kind="stable")]
        uris = self._uris([int(graph.ids[i]) for i in top])
        return [
            SearchHit(uris[int(graph.ids[i])], float(rank[i]))
            for i in top
            if int(graph.ids[i]) in uris
        ]

    # ---- loading -----------------------------------------------------------------------------

    def _adjacency(self, kinds: tuple[str, ...]) -> _Adjacency:
        version = generation.read_key(self._db)
        with self._lock:
            if version != self._version:
                self._cache.clear()
                self._version = version
            cached = self._cache.get(kinds)
            if cached is None:
                name = "graph-by-source-" + "-".join(kinds)
                key, arrays = load_arrays(
                    self._db, name, lambda conn: _adjacency_arrays(conn, kinds)
                )
                cached = _Adjacency(**arrays)
                if key == version:
                    self._cache[kinds] = cached
            return cached

    def _ids(self, uris: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for chunk in chunked(list(uris)):
            marks = ",".join("?" * len(chunk))
            found.update(self._db.read(f"SELECT uri, id FROM nodes WHERE uri IN ({marks})", chunk))
        return found

    def _uris(self, ids: Sequence[int]) -> dict[int, str]:
        found: dict[int, str] = {}
        for chunk in chunked(list(ids)):
            marks = ",".join("?" * len(chunk))
            found.update(self._db.read(f"SELECT id, uri FROM nodes WHERE id IN ({marks})", chunk))
        return found
