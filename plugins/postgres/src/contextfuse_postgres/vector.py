"""``VectorBackend`` over PostgreSQL with pgvector: cosine distance on an HNSW index.

Vectors are stored once per (project, model, content hash), normalised at insert. An HNSW
index needs a fixed dimension, so each (model, dimension) gets its own partial expression
index, created with the first vectors of that model; searches filtered to one project use
pgvector's iterative index scans, so a shared database still returns ``limit`` hits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from contextfuse.backends import SearchHit
from contextfuse_postgres.connection import translated
from contextfuse_postgres.nodes import Reader

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["PostgresVectorBackend"]


def _index_name(model: str, dims: int) -> str:
    return f"cf_vectors_hnsw_{hashlib.sha256(model.encode()).hexdigest()[:12]}_{dims}"


class PostgresVectorBackend:
    """Vectors of one project's nodes, computed at index time by index contributors."""

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def models(self) -> list[str]:
        """Names of the embedding models that have vectors stored."""
        rows = self._reader.read(
            "SELECT DISTINCT model FROM cf_vectors WHERE project = %s ORDER BY 1",
            (self._reader.project,),
        )
        return [str(row[0]) for row in rows]

    def search(
        self, model: str, vector: npt.NDArray[np.float32], limit: int = 50
    ) -> list[SearchHit]:
        """Nearest nodes by cosine similarity for vectors of ``model``, best first."""
        if limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        stored = self._reader.read(
            "SELECT dims FROM cf_vectors WHERE project = %s AND model = %s LIMIT 1",
            (self._reader.project, model),
        )
        if not stored:
            return []
        dims = int(stored[0][0])
        if query.shape[0] != dims:
            raise ValueError(
                f"query vector has {query.shape[0]} dimensions; {model!r} vectors have {dims}"
            )
        norm = float(np.linalg.norm(query))
        if norm == 0.0:
            return []
        from pgvector import Vector

        # Several nodes can share a content hash: take enough hashes to fill ``limit``.
        sql = (
            "WITH near AS ("
            f" SELECT content_hash, embedding::vector({dims}) <=> %s::vector({dims}) AS distance"
            " FROM cf_vectors WHERE project = %s AND model = %s AND dims = %s"
            f" ORDER BY embedding::vector({dims}) <=> %s::vector({dims}) LIMIT %s)"
            " SELECT n.uri, 1 - near.distance FROM near JOIN cf_nodes n"
            " ON n.project = %s AND n.content_hash = near.content_hash"
            " ORDER BY near.distance, n.id LIMIT %s"
        )
        target = Vector(query / norm)
        project = self._reader.project
        with translated(self._reader.url), self._reader.pool.connection() as conn:
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = conn.execute(
                sql, (target, project, model, dims, target, limit, project, limit)
            ).fetchall()
        return [SearchHit(str(uri), float(score)) for uri, score in rows]

    def missing(self, model: str, items: Mapping[str, str]) -> list[str]:
        """Of ``{uri: content_hash}``, the URIs with no vector cached for that hash."""
        present = {
            str(row[0])
            for row in self._reader.read(
                "SELECT content_hash FROM cf_vectors WHERE project = %s AND model = %s"
                " AND content_hash = ANY(%s)",
                (self._reader.project, model, sorted(set(items.values()))),
            )
        }
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
        if matrix.shape[0] == 0:
            return
        from pgvector import Vector

        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        dims = int(matrix.shape[1])
        project = self._reader.project
        rows = {digest: Vector(matrix[i]) for i, digest in enumerate(content_hashes)}
        index = _index_name(model, dims)
        with (
            translated(self._reader.url),
            self._reader.pool.connection() as conn,
            conn.transaction(),
        ):
            conn.cursor().executemany(
                "INSERT INTO cf_vectors (project, model, content_hash, dims, embedding)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (project, model, content_hash)"
                " DO UPDATE SET dims = excluded.dims, embedding = excluded.embedding",
                [(project, model, digest, dims, vector) for digest, vector in rows.items()],
            )
            # One index per (model, dimension), shared by every project; created once
            # (the lock keeps two writers from racing on the catalogue).
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (index,))
            conn.execute(
                f"CREATE INDEX IF NOT EXISTS {index} ON cf_vectors USING hnsw"
                f" ((embedding::vector({dims})) vector_cosine_ops)"
                f" WHERE model = {_literal(model)} AND dims = {dims}"
            )


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
