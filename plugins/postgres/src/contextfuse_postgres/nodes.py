"""``NodeStore`` over PostgreSQL: one project's nodes and renderings.

The store owns the connection pool that the other backends of the same ``BackendSet`` share;
closing it closes the pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from contextfuse.backends import Node, Rendering
from contextfuse.kb.compressed import stored_text
from contextfuse.kb.nodes import source_lines
from contextfuse_postgres.connection import translated

if TYPE_CHECKING:
    from contextfuse_postgres.tiers import PostgresTierStore

__all__ = ["NODE_COLUMNS", "NODE_FROM", "PostgresNodeStore", "Reader", "node_from_row"]

NODE_COLUMNS = (
    "n.uri, n.path, n.kind, n.name, n.qualname, p.uri, n.language, n.line_start, n.line_end, "
    "n.resource_type, n.summary"
)
NODE_FROM = "cf_nodes n LEFT JOIN cf_nodes p ON p.id = n.parent_id"


def node_from_row(row: Sequence[Any]) -> Node:
    """A ``Node`` from the columns of :data:`NODE_COLUMNS`."""
    return Node(
        uri=row[0],
        path=row[1],
        kind=row[2],
        name=row[3],
        qualname=row[4],
        parent=row[5],
        language=row[6],
        line_start=row[7],
        line_end=row[8],
        resource_type=row[9],
        summary=row[10],
    )


class Reader:
    """Runs read queries of one project on a pool, errors without secrets."""

    def __init__(self, pool: Any, url: str, project: str) -> None:
        self.pool = pool
        self.url = url
        self.project = project

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Every row of one query, in a transaction of its own."""
        with translated(self.url), self.pool.connection() as conn:
            return list(conn.execute(sql, params).fetchall())


class PostgresNodeStore:
    """Nodes of one project. Depth-9 text is sliced from the stored file content."""

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    @property
    def tiers(self) -> PostgresTierStore:
        """The project's storage tiers (see ``contextfuse.kb.tiers``)."""
        from contextfuse_postgres.tiers import PostgresTierStore

        return PostgresTierStore(self._reader)

    @property
    def project(self) -> str:
        """The project name used in ``project://<project>/...`` URIs."""
        return self._reader.project

    def close(self) -> None:
        """Close the connection pool (shared by the other backends of this set)."""
        self._reader.pool.close()

    def get_nodes(self, uris: Sequence[str]) -> dict[str, Node]:
        """The nodes with these URIs (missing ones are left out)."""
        rows = self._reader.read(
            f"SELECT {NODE_COLUMNS} FROM {NODE_FROM} WHERE n.project = %s AND n.uri = ANY(%s)",
            (self.project, list(dict.fromkeys(uris))),
        )
        return {row[0]: node_from_row(row) for row in rows}

    def get_renderings(
        self,
        uris: Sequence[str],
        depths: Sequence[int] | None = None,
        max_tokens: int | None = None,
    ) -> dict[str, dict[int, Rendering]]:
        """``{uri: {depth: rendering}}`` for these nodes; all depths when ``depths`` is None.

        ``max_tokens``: renderings of more tokens are left out (their text is never read).
        """
        sql = (
            "SELECT n.uri, n.path, n.kind, r.depth, r.content, r.token_count, r.line_start,"
            " r.line_end, CASE WHEN r.content IS NULL THEN f.content END,"
            " CASE WHEN r.content IS NULL THEN f.cold END"
            " FROM cf_nodes n JOIN cf_renderings r ON r.node_id = n.id"
            " JOIN cf_files f ON f.id = n.file_id"
            " WHERE n.project = %s AND n.uri = ANY(%s)"
        )
        params: list[Any] = [self.project, list(dict.fromkeys(uris))]
        if depths is not None:
            sql += " AND r.depth = ANY(%s)"
            params.append(sorted(set(depths)))
        if max_tokens is not None:
            sql += " AND r.token_count <= %s"
            params.append(int(max_tokens))
        out: dict[str, dict[int, Rendering]] = {}
        split: dict[str, list[str]] = {}
        for uri, path, kind, depth, content, tokens, first, last, source, cold in self._reader.read(
            sql, params
        ):
            if content is None:  # the node's lines of the file (compressed when it is cold)
                lines = split.get(path)
                if lines is None:
                    lines = split[path] = stored_text(source if cold is None else cold).split("\n")
                content = source_lines(lines, kind, first, last)
            out.setdefault(uri, {})[depth] = Rendering(depth, content, tokens, first, last)
        return out

    def children(self, uri: str) -> list[Node]:
        """Nodes directly contained in ``uri`` (a file's top-level symbols, a class's methods)."""
        rows = self._reader.read(
            f"SELECT {NODE_COLUMNS} FROM {NODE_FROM} WHERE p.project = %s AND p.uri = %s"
            " ORDER BY n.line_start, n.id",
            (self.project, uri),
        )
        return [node_from_row(row) for row in rows]

    def files(self) -> list[Node]:
        """Every file node, ordered by path."""
        rows = self._reader.read(
            f"SELECT {NODE_COLUMNS} FROM {NODE_FROM} WHERE n.project = %s AND n.kind = 'file'"
            ' ORDER BY n.path COLLATE "C"',
            (self.project,),
        )
        return [node_from_row(row) for row in rows]

    def find_symbols(self, name: str, limit: int = 20) -> list[Node]:
        """Nodes whose name or dotted qualname equals ``name`` (exact, case-sensitive)."""
        rows = self._reader.read(
            f"SELECT {NODE_COLUMNS} FROM {NODE_FROM} WHERE n.project = %s AND n.kind != 'file'"
            " AND (n.name = %s OR n.qualname = %s)"
            ' ORDER BY n.path COLLATE "C", n.line_start LIMIT %s',
            (self.project, name, name, limit),
        )
        return [node_from_row(row) for row in rows]

    def find_paths(self, fragment: str, limit: int = 20) -> list[Node]:
        """File nodes whose path ends with ``fragment`` (``a/b.py`` matches ``x/a/b.py``)."""
        fragment = fragment.strip("/")
        if not fragment:
            return []
        # A file node is named for its path's last part: the name index finds the candidates.
        rows = self._reader.read(
            f"SELECT {NODE_COLUMNS} FROM {NODE_FROM} WHERE n.project = %s AND n.kind = 'file'"
            " AND n.name = %s AND (n.path = %s OR right(n.path, length(%s) + 1) = '/' || %s)"
            ' ORDER BY length(n.path), n.path COLLATE "C" LIMIT %s',
            (self.project, fragment.rsplit("/", 1)[-1], fragment, fragment, fragment, limit),
        )
        return [node_from_row(row) for row in rows]

    def content_hashes(self, uris: Sequence[str]) -> dict[str, str]:
        """``{uri: content_hash}`` (sha256 of the depth-9 text) for these nodes."""
        rows = self._reader.read(
            "SELECT uri, content_hash FROM cf_nodes WHERE project = %s AND uri = ANY(%s)",
            (self.project, list(dict.fromkeys(uris))),
        )
        return {str(uri): str(digest) for uri, digest in rows}
