"""``VectorBackend`` over the index file: exact cosine search with numpy.

Vectors are stored per ``(model, content_hash)``, normalised at insert, so a node whose text
did not change is never embedded again (and identical texts share one vector). Search
multiplies the matrix of the current nodes' vectors by the query; the matrix is built once per
generation of the index and mapped from its file by every process (``contextfuse.kb.arrays``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from contextfuse.backends import SearchHit
from contextfuse.kb import generation
from contextfuse.kb.arrays import PackedStrings, load_arrays, pack_strings
from contextfuse.kb.nodes import chunked
from contextfuse.kb.store import Database

__all__ = ["SQLiteVectorBackend"]


class SQLiteVectorBackend:
    """Vectors of nodes, computed at index time by index contributors."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[Sequence[str], npt.NDArray[np.float32]]] = {}
        self._version = ""

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
        uris, matrix = self._matrix(model)
        if not uris or limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != matrix.shape[1]:
            raise ValueError(
                f"query vector has {query.shape[0]} dimensions; {model!r} vectors have "
                f"{matrix.shape[1]}"
            )
        norm = float(np.linalg.norm(query))
        if norm == 0.0:
            return []
        scores = matrix @ (query / norm)
        count = min(limit, len(uris))
        top = np.argpartition(-scores, count - 1)[:count]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [SearchHit(uris[i], float(scores[i])) for i in top]

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
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        rows = [
            (model, digest, matrix[i].astype("<f4").tobytes())
            for i, digest in enumerate(content_hashes)
        ]
        conn = self._db.connection()
        own = not conn.in_transaction
        try:
            if own:
                conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT OR REPLACE INTO vectors (model, content_hash, vector) VALUES (?, ?, ?)",
                rows,
            )
            generation.renew(conn)
            if own:
                conn.execute("COMMIT")
        except BaseException:
            if own and conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        with self._lock:  # this process wrote: nothing it cached before is current
            self._cache.clear()

    def _matrix(self, model: str) -> tuple[Sequence[str], npt.NDArray[np.float32]]:
        version = generation.read_key(self._db)
        with self._lock:
            if version != self._version:
                self._cache.clear()
                self._version = version
            cached = self._cache.get(model)
            if cached is None:
                key, arrays = load_arrays(
                    self._db, f"vectors-{model}", lambda conn: _vector_arrays(conn, model)
                )
                cached = (PackedStrings(arrays["uri_data"], arrays["uri_ends"]), arrays["matrix"])
                if key == version:
                    self._cache[model] = cached
            return cached


def _vector_arrays(conn: sqlite3.Connection, model: str) -> dict[str, npt.NDArray[Any]]:
    """The matrix of the current nodes' vectors of ``model``, one row per node in id order,
    and the nodes' URIs."""
    rows = conn.execute(
        "SELECT n.uri, v.vector FROM nodes n JOIN vectors v "
        "ON v.model = ? AND v.content_hash = n.content_hash ORDER BY n.id",
        (model,),
    ).fetchall()
    if rows:
        matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype="<f4")
        # A read-only view of the fetched bytes: no copy on little-endian machines.
        matrix = matrix.reshape(len(rows), -1).astype(np.float32, copy=False)
    else:
        matrix = np.zeros((0, 0), dtype=np.float32)
    uris = pack_strings([row[0] for row in rows])
    return {"matrix": matrix, "uri_data": uris["data"], "uri_ends": uris["ends"]}
