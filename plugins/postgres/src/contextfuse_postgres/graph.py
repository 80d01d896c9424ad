"""``GraphBackend`` over PostgreSQL: an edges table; PageRank over the fetched subgraph.

A shared server holds many large graphs, so PageRank does not load a whole graph: it
fetches the edges within a few hops of the seeds (a breadth-first walk, one query a hop, up
to a node cap), takes each node's degree from the whole graph, and runs the same power
iteration as the SQLite store (undirected, edges weighed down by the degree of the node they
lead to). On a graph the walk covers entirely, both stores rank alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from contextfuse.backends import Edge, SearchHit
from contextfuse.kb.graph import EDGE_KINDS
from contextfuse_postgres.nodes import Reader

__all__ = ["PostgresGraphBackend"]

_MAX_ITERATIONS = 50
_TOLERANCE = 1e-6
#: Hops walked from the seeds; rank beyond them is negligible after the damping.
_HOPS = 3
#: Nodes fetched at most (the walk stops widening once it has this many).
_MAX_NODES = 50_000


class PostgresGraphBackend:
    """The code graph of one project: containment, imports, calls, references, inheritance."""

    def __init__(self, reader: Reader, hops: int = _HOPS, max_nodes: int = _MAX_NODES) -> None:
        self._reader = reader
        self._hops = hops
        self._max_nodes = max_nodes

    def neighbors(
        self, uri: str, kinds: Sequence[str] | None = None, direction: str = "both"
    ) -> list[Edge]:
        """Edges touching ``uri`` (``direction``: out, in or both)."""
        if direction not in ("out", "in", "both"):
            raise ValueError(f"direction must be 'out', 'in' or 'both', not {direction!r}")
        sides = {"out": ["source"], "in": ["target"], "both": ["source", "target"]}[direction]
        kind_filter = " AND e.kind = ANY(%s)" if kinds else ""
        queries = []
        params: list[object] = []
        for side in sides:
            queries.append(
                "SELECT s.uri AS s_uri, t.uri AS t_uri, e.kind, e.weight FROM cf_edges e"
                " JOIN cf_nodes s ON s.id = e.source JOIN cf_nodes t ON t.id = e.target"
                f" WHERE e.{side} = (SELECT id FROM cf_nodes WHERE project = %s AND uri = %s)"
                f"{kind_filter}"
            )
            params.extend([self._reader.project, uri])
            if kinds:
                params.append(list(kinds))
        rows = self._reader.read(
            "SELECT * FROM (" + " UNION ".join(queries) + ") found"
            ' ORDER BY kind COLLATE "C", s_uri COLLATE "C", t_uri COLLATE "C"',
            params,
        )
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
        wanted = sorted(set(kinds) if kinds else set(EDGE_KINDS))
        seed_ids = self._ids([u for u, w in seeds.items() if w > 0])
        if not seed_ids:
            return []
        source, target, weight = self._subgraph(set(seed_ids.values()), wanted)
        if len(source) == 0:
            return []
        ids = np.unique(np.concatenate([source, target]))
        s = np.searchsorted(ids, source)
        t = np.searchsorted(ids, target)
        source_all, target_all = np.concatenate([s, t]), np.concatenate([t, s])
        degree = self._degrees(ids, wanted)
        specific = np.concatenate([weight, weight]) / np.log2(2.0 + degree[target_all])
        out = np.bincount(source_all, weights=specific, minlength=len(ids))
        share = np.divide(
            specific, out[source_all], out=np.zeros_like(specific), where=out[source_all] > 0
        )
        dangling = out == 0
        personal = np.zeros(len(ids))
        positions = np.searchsorted(ids, np.fromiter(seed_ids.values(), dtype=np.int64))
        for uri, pos in zip(seed_ids, positions, strict=True):
            if pos < len(ids) and ids[pos] == seed_ids[uri]:
                personal[pos] += float(seeds[uri])
        if personal.sum() <= 0:
            return []
        personal /= personal.sum()
        rank = personal.copy()
        for _ in range(_MAX_ITERATIONS):
            spread = np.bincount(target_all, weights=rank[source_all] * share, minlength=len(rank))
            lost = rank[dangling].sum()
            updated = (1.0 - damping) * personal + damping * (spread + lost * personal)
            done = np.abs(updated - rank).sum() < _TOLERANCE
            rank = updated
            if done:
                break
        count = min(limit, int(np.count_nonzero(rank)))
        if count <= 0:
            return []
        top = np.argpartition(-rank, count - 1)[:count]
        top = top[np.argsort(-rank[top], kind="stable")]
        uris = self._uris([int(ids[i]) for i in top])
        return [SearchHit(uris[int(ids[i])], float(rank[i])) for i in top if int(ids[i]) in uris]

    # ---- fetching ------------------------------------------------------------------------------

    def _subgraph(
        self, seeds: set[int], kinds: list[str]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The edges within ``hops`` of the seeds, as (source, target, weight) arrays."""
        seen = set(seeds)
        frontier = sorted(seeds)
        edges: dict[tuple[int, int, str], float] = {}
        for _ in range(self._hops):
            if not frontier:
                break
            rows = self._reader.read(
                "SELECT source, target, kind, weight FROM cf_edges WHERE kind = ANY(%s)"
                " AND (source = ANY(%s) OR target = ANY(%s))",
                (kinds, frontier, frontier),
            )
            following: set[int] = set()
            for src, dst, kind, w in rows:
                edges[(int(src), int(dst), str(kind))] = float(w)
                following.update((int(src), int(dst)))
            frontier = sorted(following - seen)
            seen |= following
            if len(seen) >= self._max_nodes:
                break
        if not edges:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0)
        keys = list(edges)
        return (
            np.fromiter((k[0] for k in keys), dtype=np.int64, count=len(keys)),
            np.fromiter((k[1] for k in keys), dtype=np.int64, count=len(keys)),
            np.fromiter(edges.values(), dtype=np.float64, count=len(keys)),
        )

    def _degrees(self, ids: np.ndarray, kinds: list[str]) -> np.ndarray:
        """Each node's number of edge ends in the whole graph (edges of ``kinds``)."""
        node_ids = [int(i) for i in ids]
        rows = self._reader.read(
            "SELECT node, count(*) FROM ("
            " SELECT source AS node FROM cf_edges WHERE kind = ANY(%s) AND source = ANY(%s)"
            " UNION ALL"
            " SELECT target FROM cf_edges WHERE kind = ANY(%s) AND target = ANY(%s)"
            ") ends GROUP BY node",
            (kinds, node_ids, kinds, node_ids),
        )
        degree = np.zeros(len(ids))
        found = dict(rows)
        for i, node in enumerate(node_ids):
            degree[i] = float(found.get(node, 0))
        return degree

    def _ids(self, uris: Sequence[str]) -> dict[str, int]:
        rows = self._reader.read(
            "SELECT uri, id FROM cf_nodes WHERE project = %s AND uri = ANY(%s)",
            (self._reader.project, list(uris)),
        )
        return {str(uri): int(node_id) for uri, node_id in rows}

    def _uris(self, ids: Sequence[int]) -> dict[int, str]:
        rows = self._reader.read("SELECT id, uri FROM cf_nodes WHERE id = ANY(%s)", (list(ids),))
        return {int(node_id): str(uri) for node_id, uri in rows}
