"""``VectorBackend`` over the index file: a compact scan of every node, then rescoring.

Vectors are stored per ``(model, content_hash)``, normalised at insert, so a node whose text
did not change is never embedded again (and identical texts share one vector). Each vector is
kept twice, compactly:

* int8 codes with one scale per vector (a quarter of float32): a search multiplies the codes
  of every current node by the query, in blocks that stay in the processor's cache;
* float16 (half of float32): the best ``_RESCORE`` candidates per hit asked for are rescored
  with these, so the final order and scores are those of the float32 cosine to within 0.001.

The codes of the current nodes (with their scales, URIs and content hashes) are built once per
generation of the index and mapped from their file by every process (``contextfuse.kb.arrays``);
the float16 vectors are read from SQLite only for the candidates of a search.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from contextfuse.backends import SearchHit
from contextfuse.kb import generation
from contextfuse.kb.arrays import PackedStrings, load_arrays, pack_strings
from contextfuse.kb.nodes import chunked
from contextfuse.kb.store import Database

__all__ = ["NodeVector", "SQLiteVectorBackend", "VectorRow", "encoded", "quantize"]

#: A vector as stored: (model, content hash, scale, int8 codes, float16 components).
VectorRow = tuple[str, str, float, bytes, bytes]
#: A node's vector computed with its file: the node's URI and the row to store.
NodeVector = tuple[str, VectorRow]

_RESCORE = 4  # candidates rescored per hit asked for
#: Bytes of float16 vectors a backend keeps between searches, at most (a service's requests
#: rescore many of the same nodes; reading them again was half a search's time). An index
#: with more has its candidates' vectors read for each search.
_HALVES_KEPT = 16 * 1024 * 1024
_UNREAD, _READ, _ABSENT = 0, 1, 2
_SCAN_BLOCK = 2048  # rows converted to float32 at a time (a few hundred kB: cache-sized)
_CODE_MAX = 127


@attrs.frozen
class _Halves:
    """The float16 vectors of the rows of :class:`_Codes`, read as searches rescore them."""

    vectors: npt.NDArray[np.float16]  # (nodes, dimensions)
    state: npt.NDArray[np.int8]  # per row: _UNREAD, _READ or _ABSENT (no vector stored)


@attrs.frozen
class _Codes:
    """The int8 codes of one model's vectors for the current nodes, in node order."""

    uris: PackedStrings
    hashes: PackedStrings
    codes: npt.NDArray[np.int8]  # (nodes, dimensions)
    scales: npt.NDArray[np.float32]  # (nodes,): code * scale = component
    halves: _Halves | None  # None: too many nodes to keep their float16 vectors


def quantize(
    matrix: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Symmetric int8 codes of each row and the scale that turns them back into floats."""
    peaks = np.abs(matrix).max(axis=1) if matrix.size else np.zeros(len(matrix), np.float32)
    scales = (peaks / _CODE_MAX).astype(np.float32)
    divisors = np.where(scales > 0, scales, 1.0).astype(np.float32)
    codes = np.rint(matrix / divisors[:, None]).astype(np.int8)
    return codes, scales


def encoded(matrix: npt.NDArray[np.float32]) -> list[tuple[float, bytes, bytes]]:
    """Each row of ``matrix`` normalised, as stored: its scale, int8 codes and float16 form.

    Row by row: a vector is encoded the same whichever rows come with it.
    """
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    codes, scales = quantize(matrix)
    halves = matrix.astype("<f2")
    return [(float(scales[i]), codes[i].tobytes(), halves[i].tobytes()) for i in range(len(matrix))]


class SQLiteVectorBackend:
    """Vectors of nodes, computed at index time by index contributors."""

    def __init__(self, db: Database, *, write_batch: int = 0) -> None:
        """``write_batch``: with more than 0, :meth:`upsert` keeps rows in memory and writes
        them that many at a time (and at :meth:`flush`), each time in one transaction.

        An index run's contributors upsert a few hundred vectors at a time; their content
        hashes are random keys, so each commit rewrote most pages of the table (Django:
        84 commits, a third of the embedding's time). Rows kept count as stored for
        :meth:`missing`; a search writes them first.
        """
        self._db = db
        self._lock = threading.Lock()
        self._cache: dict[str, _Codes] = {}
        self._version = ""
        self._write_batch = write_batch
        self._pending: dict[tuple[str, str], tuple[float, bytes, bytes]] = {}

    def models(self) -> list[str]:
        """Names of the embedding models that have vectors stored."""
        # One index seek per model: DISTINCT would read every vector (megabytes) to find two.
        rows = self._db.read(
            "WITH RECURSIVE m(model) AS (SELECT min(model) FROM vectors UNION ALL"
            " SELECT (SELECT min(model) FROM vectors WHERE model > m.model) FROM m"
            " WHERE m.model IS NOT NULL) SELECT model FROM m WHERE model IS NOT NULL"
        )
        return [row[0] for row in rows]

    def search(
        self, model: str, vector: npt.NDArray[np.float32], limit: int = 50
    ) -> list[SearchHit]:
        """Nearest nodes by cosine similarity for vectors of ``model``, best first."""
        self.flush()
        stored = self._codes(model)
        if not stored.uris or limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != stored.codes.shape[1]:
            raise ValueError(
                f"query vector has {query.shape[0]} dimensions; {model!r} vectors have "
                f"{stored.codes.shape[1]}"
            )
        norm = float(np.linalg.norm(query))
        if norm == 0.0:
            return []
        query = query / norm
        approximate = _scan(stored.codes, stored.scales, query)
        count = min(limit, len(stored.uris))
        pool = min(len(stored.uris), count * _RESCORE)
        candidates = np.argpartition(-approximate, pool - 1)[:pool]
        scores = self._rescore(model, stored, candidates, query)
        scores = np.where(np.isnan(scores), approximate[candidates], scores)
        # Best first; equal scores in node order, so that a search is reproducible.
        order = np.lexsort((candidates, -scores))[:count]
        uris = stored.uris.take(candidates[order])
        return [
            SearchHit(uri, score) for uri, score in zip(uris, scores[order].tolist(), strict=True)
        ]

    def missing(self, model: str, items: Mapping[str, str]) -> list[str]:
        """Of ``{uri: content_hash}``, the URIs with no vector cached for that hash."""
        hashes = sorted(set(items.values()))
        present: set[str] = set()
        for chunk in chunked(hashes):
            marks = ",".join("?" * len(chunk))
            present.update(
                row[0]
                for row in self._db.read(
                    "SELECT content_hash FROM vectors WHERE model = ? "
                    f"AND content_hash IN ({marks})",
                    [model, *chunk],
                )
            )
        present.update(digest for kept, digest in self._pending if kept == model)
        return [uri for uri, digest in items.items() if digest not in present]

    def upsert(
        self,
        model: str,
        uris: Sequence[str],
        content_hashes: Sequence[str],
        vectors: npt.NDArray[np.float32],
    ) -> None:
        """Store vectors (normalised at insert) for these nodes, in one transaction."""
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or not len(uris) == len(content_hashes) == matrix.shape[0]:
            raise ValueError(
                f"upsert needs one vector per node: {len(uris)} uris, "
                f"{len(content_hashes)} hashes, vectors of shape {matrix.shape}"
            )
        for digest, row in zip(content_hashes, encoded(matrix), strict=True):
            self._pending.pop((model, digest), None)  # a later row replaces an earlier one
            self._pending[model, digest] = row
        if len(self._pending) >= self._write_batch:
            self.flush()

    def flush(self) -> None:
        """Write the rows :meth:`upsert` kept, in one transaction (see ``write_batch``)."""
        if not self._pending:
            return
        rows = [(model, digest, *row) for (model, digest), row in self._pending.items()]
        conn = self._db.connection()
        own = not conn.in_transaction
        try:
            if own:
                conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT OR REPLACE INTO vectors (model, content_hash, scale, codes, vector) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            generation.renew(conn)
            if own:
                conn.execute("COMMIT")
        except BaseException:
            if own and conn.in_transaction:
                conn.execute("ROLLBACK")
            self._pending.clear()
            raise
        self._pending.clear()
        with self._lock:  # this process wrote: nothing it cached before is current
            self._cache.clear()

    def _rescore(
        self,
        model: str,
        stored: _Codes,
        candidates: npt.NDArray[np.intp],
        query: npt.NDArray[np.float32],
    ) -> npt.NDArray[np.float64]:
        """Cosine of each candidate (a row of ``stored``) from its float16 vector (NaN where
        it is gone)."""
        halves = stored.halves
        if halves is None:
            hashes = stored.hashes.take(candidates)
            found = self._read_halves(model, hashes)
            scores = np.full(len(hashes), np.nan)
            rows = [i for i, h in enumerate(hashes) if len(found.get(h, b"")) // 2 == len(query)]
            if rows:
                vectors = np.frombuffer(b"".join(found[hashes[i]] for i in rows), dtype="<f2")
                scores[rows] = vectors.reshape(len(rows), -1).astype(np.float32) @ query
            return scores
        unread = candidates[halves.state[candidates] == _UNREAD]
        if len(unread):
            hashes = stored.hashes.take(unread)
            found = self._read_halves(model, hashes)
            for row, digest in zip(unread.tolist(), hashes, strict=True):
                vector = found.get(digest, b"")
                if len(vector) // 2 == len(query):
                    halves.vectors[row] = np.frombuffer(vector, dtype="<f2")
                    halves.state[row] = _READ  # after the vector: a reader sees it whole
                else:
                    halves.state[row] = _ABSENT
        scores = np.full(len(candidates), np.nan)
        present = halves.state[candidates] == _READ
        scores[present] = halves.vectors[candidates[present]].astype(np.float32) @ query
        return scores

    def _read_halves(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """``{content hash: float16 vector bytes}`` of the stored ones among ``hashes``."""
        found: dict[str, bytes] = {}
        for chunk in chunked(sorted(set(hashes))):
            marks = ",".join("?" * len(chunk))
            found.update(
                self._db.read(
                    "SELECT content_hash, vector FROM vectors WHERE model = ? "
                    f"AND content_hash IN ({marks})",
                    [model, *chunk],
                )
            )
        return found

    def _codes(self, model: str) -> _Codes:
        version = generation.read_key(self._db)
        with self._lock:
            if version != self._version:
                self._cache.clear()
                self._version = version
            cached = self._cache.get(model)
            if cached is None:
                key, arrays = load_arrays(
                    self._db, f"codes-{model}", lambda conn: _code_arrays(conn, model)
                )
                codes = arrays["codes"]
                cached = _Codes(
                    uris=PackedStrings(arrays["uri_data"], arrays["uri_ends"]),
                    hashes=PackedStrings(arrays["hash_data"], arrays["hash_ends"]),
                    codes=codes,
                    scales=arrays["scales"],
                    halves=(
                        _Halves(np.zeros(codes.shape, "<f2"), np.zeros(len(codes), np.int8))
                        if codes.size * 2 <= _HALVES_KEPT
                        else None
                    ),
                )
                if key == version:
                    self._cache[model] = cached
            return cached


def _code_arrays(conn: sqlite3.Connection, model: str) -> dict[str, npt.NDArray[Any]]:
    """The int8 codes and scales of the current nodes' vectors of ``model``, one row per node
    in id order, and the nodes' URIs and content hashes."""
    rows = conn.execute(
        "SELECT n.uri, n.content_hash, v.scale, v.codes FROM nodes n JOIN vectors v "
        "ON v.model = ? AND v.content_hash = n.content_hash ORDER BY n.id",
        (model,),
    ).fetchall()
    if rows:
        codes = np.frombuffer(b"".join(row[3] for row in rows), dtype=np.int8)
        codes = codes.reshape(len(rows), -1)
    else:
        codes = np.zeros((0, 0), dtype=np.int8)
    scales = np.array([row[2] for row in rows], dtype=np.float32)
    uris = pack_strings([row[0] for row in rows])
    hashes = pack_strings([row[1] for row in rows])
    return {
        "codes": codes,
        "scales": scales,
        "uri_data": uris["data"],
        "uri_ends": uris["ends"],
        "hash_data": hashes["data"],
        "hash_ends": hashes["ends"],
    }


def _scan(
    codes: npt.NDArray[np.int8], scales: npt.NDArray[np.float32], query: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """Approximate cosine of every row: int8 codes times the query, a block at a time."""
    scores = np.empty(len(codes), dtype=np.float32)
    block = np.empty((min(_SCAN_BLOCK, len(codes)), codes.shape[1]), dtype=np.float32)
    for start in range(0, len(codes), _SCAN_BLOCK):
        rows = codes[start : start + _SCAN_BLOCK]
        floats = block[: len(rows)]
        np.copyto(floats, rows, casting="unsafe")
        # Not matmul: BLAS wakes its threads for each block, and on a busy machine they wait
        # for a core (a scan of 600,000 rows took seconds instead of 40 ms); einsum's loop
        # stays in this thread. Its sums round differently in the last bits: the candidates
        # are rescored from their float16 vectors anyway.
        np.einsum("ij,j->i", floats, query, out=scores[start : start + len(rows)])
    scores *= scales
    return scores
