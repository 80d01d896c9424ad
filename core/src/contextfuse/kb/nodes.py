"""``NodeStore`` over the index file: nodes and their renderings at depths 9, 4, 2, 0."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

from contextfuse.backends import Node, Rendering
from contextfuse.kb import generation
from contextfuse.kb.compressed import stored_text
from contextfuse.kb.store import Database

__all__ = ["SQLiteNodeStore", "chunked", "source_lines"]

_NODE_COLUMNS = (
    "n.uri, n.path, n.kind, n.name, n.qualname, p.uri, n.language, n.line_start, n.line_end, "
    "n.resource_type, n.summary"
)
_NODE_FROM = "nodes n LEFT JOIN nodes p ON p.id = n.parent_id"
_CHUNK = 500  # bound parameters per query
_LINE_CACHE_FILES = 256  # split files kept per thread between calls
_MEMO_NODES = 200_000  # nodes kept between calls
_MEMO_CHARS = 64_000_000  # characters of renderings kept between calls


def chunked(values: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    """``values`` in slices of at most ``size`` (SQLite limits bound parameters)."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def source_lines(lines: Sequence[str], kind: str, first: int, last: int) -> str:
    """A node's depth-9 text: its lines of the file (a file node: all of it, to the end)."""
    if kind == "file":
        return "\n".join(lines)
    return "\n".join(lines[first - 1 : last])


def _node(row: Sequence[Any]) -> Node:
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


class _Source:
    """A file's text, split into lines on the first slice asked of it."""

    __slots__ = ("_lines", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._lines: list[str] | None = None

    def lines(self, first: int, last: int) -> str:
        """Lines ``first`` to ``last`` (1-based, inclusive), as :func:`source_lines` gives."""
        if self._lines is None:
            self._lines = self.text.split("\n")
        return "\n".join(self._lines[first - 1 : last])


class _Generation:
    """Nodes and renderings read from one generation of the index."""

    __slots__ = ("children", "children_size", "key", "nodes", "renderings", "size")

    def __init__(self, key: str) -> None:
        self.key = key
        self.nodes: dict[str, Node | None] = {}  # None: no such node
        self.children: dict[str, tuple[Node, ...]] = {}  # parent URI -> its children
        self.children_size = 0  # nodes held in ``children``
        self.renderings: dict[tuple[str, Any, Any], dict[int, Rendering]] = {}
        self.size = 0  # characters of the renderings held


class _Memo:
    """What the node store read, kept while the index's content stays the same.

    A service answers many requests about one index: most of their candidates are nodes an
    earlier request read. Shared by the threads (each entry is complete before it is added),
    bounded (emptied past :data:`_MEMO_NODES` nodes, of each kind, or :data:`_MEMO_CHARS`
    characters of renderings), and emptied when the index's generation changes.
    """

    def __init__(self) -> None:
        self._current = _Generation("")

    def of(self, key: str) -> _Generation:
        """The entries of generation ``key`` (empty if another one was current)."""
        current = self._current
        if current.key != key:
            current = self._current = _Generation(key)
        return current

    def add_nodes(self, memo: _Generation, found: dict[str, Node | None]) -> None:
        if len(memo.nodes) + len(found) > _MEMO_NODES:
            memo.nodes.clear()
        memo.nodes.update(found)

    def add_children(self, memo: _Generation, parent: str, children: tuple[Node, ...]) -> None:
        if memo.children_size + len(children) + 1 > _MEMO_NODES:
            memo.children.clear()
            memo.children_size = 0
        memo.children[parent] = children
        memo.children_size += len(children) + 1  # an empty list counts too

    def add_renderings(
        self, memo: _Generation, found: dict[tuple[str, Any, Any], dict[int, Rendering]]
    ) -> None:
        size = sum(len(r.content) for renderings in found.values() for r in renderings.values())
        if memo.size + size > _MEMO_CHARS:
            memo.renderings.clear()
            memo.size = 0
        memo.renderings.update(found)
        memo.size += size


class SQLiteNodeStore:
    """Nodes of one project's index. Depth-9 text is sliced from the stored file content."""

    def __init__(self, db: Database, project: str) -> None:
        self._db = db
        self._project = project
        # Split file text, kept per thread (each thread reads through its own connection).
        self._local = threading.local()
        self._memo = _Memo()

    def _file_lines(self, conn: Any) -> OrderedDict[int, _Source]:
        """This thread's cache of file texts, emptied when the index's content changes."""
        version = generation.cache_key(conn)
        cache: OrderedDict[int, _Source] | None = getattr(self._local, "lines", None)
        if cache is None or getattr(self._local, "version", None) != version:
            cache = self._local.lines = OrderedDict()
            self._local.version = version
        return cache

    @property
    def project(self) -> str:
        """The project name used in ``project://<project>/...`` URIs."""
        return self._project

    @property
    def database(self) -> Database:
        """The index file these backends read."""
        return self._db

    def close(self) -> None:
        """Close the index file (every backend of the set shares it)."""
        self._db.close()

    def get_nodes(self, uris: Sequence[str]) -> dict[str, Node]:
        """The nodes with these URIs (missing ones are left out)."""
        found: dict[str, Node] = {}
        with self._db.snapshot() as conn:
            memo = self._memo.of(generation.cache_key(conn))
            for chunk in chunked(list(dict.fromkeys(uris))):
                read: dict[str, Node] = {}
                wanted = [uri for uri in chunk if uri not in memo.nodes]
                if wanted:
                    marks = ",".join("?" * len(wanted))
                    for row in conn.execute(
                        f"SELECT {_NODE_COLUMNS} FROM {_NODE_FROM} WHERE n.uri IN ({marks})",
                        wanted,
                    ):
                        read[row[0]] = _node(row)
                    self._memo.add_nodes(memo, {uri: read.get(uri) for uri in wanted})
                # In the order a query of the whole chunk gives (by URI, from its index).
                for uri in sorted(chunk):
                    node = read[uri] if uri in read else memo.nodes.get(uri)
                    if node is not None:
                        found[uri] = node
        return found

    def get_renderings(
        self,
        uris: Sequence[str],
        depths: Sequence[int] | None = None,
        max_tokens: int | None = None,
    ) -> dict[str, dict[int, Rendering]]:
        """``{uri: {depth: rendering}}`` for these nodes; all depths when ``depths`` is None.

        ``max_tokens``: renderings of more tokens are left out (their text is never read).
        """
        wanted = None if depths is None else tuple(sorted(set(depths)))
        out: dict[str, dict[int, Rendering]] = {}
        with self._db.snapshot() as conn:
            memo = self._memo.of(generation.cache_key(conn))
            for chunk in chunked(list(dict.fromkeys(uris))):
                missing = [u for u in chunk if (u, wanted, max_tokens) not in memo.renderings]
                read = self._read_renderings(conn, missing, wanted, max_tokens)
                self._memo.add_renderings(
                    memo, {(uri, wanted, max_tokens): read.get(uri, {}) for uri in missing}
                )
                # In the order a query of the whole chunk gives (by URI, from its index).
                for uri in sorted(chunk):
                    found = read.get(uri)
                    if found is None:
                        found = dict(memo.renderings.get((uri, wanted, max_tokens)) or {})
                    if found:
                        out[uri] = found
        return out

    def _read_renderings(
        self,
        conn: Any,
        uris: Sequence[str],
        wanted: Sequence[int] | None,
        max_tokens: int | None,
    ) -> dict[str, dict[int, Rendering]]:
        out: dict[str, dict[int, Rendering]] = {}
        sources = self._file_lines(conn)  # file id -> its text, for depth-9 slices
        for chunk in chunked(uris):
            marks = ",".join("?" * len(chunk))
            depth_filter = ""
            params: list[Any] = list(chunk)
            if wanted is not None:
                depth_filter = f" AND r.depth IN ({','.join('?' * len(wanted))})"
                params.extend(wanted)
            if max_tokens is not None:
                depth_filter += " AND r.token_count <= ?"
                params.append(int(max_tokens))
            rows = conn.execute(
                "SELECT n.uri, n.file_id, n.kind, r.depth, r.content, r.token_count,"
                " r.line_start, r.line_end FROM nodes n JOIN renderings r ON r.node_id = n.id"
                f" WHERE n.uri IN ({marks}){depth_filter}",
                params,
            ).fetchall()
            for uri, file_id, kind, depth, content, tokens, first, last in rows:
                if content is None:  # the node's lines of the file
                    source = sources.get(file_id)
                    if source is None:
                        text = conn.execute(
                            "SELECT content FROM files WHERE id = ?", (file_id,)
                        ).fetchone()[0]
                        source = sources[file_id] = _Source(stored_text(text))
                        if len(sources) > _LINE_CACHE_FILES:
                            sources.popitem(last=False)
                    else:
                        sources.move_to_end(file_id)
                    # A file's depth 9 is its whole text: no split and join again.
                    content = source.text if kind == "file" else source.lines(first, last)
                out.setdefault(uri, {})[depth] = Rendering(depth, content, tokens, first, last)
        return out

    def children(self, uri: str) -> list[Node]:
        """Nodes directly contained in ``uri`` (a file's top-level symbols, a class's methods)."""
        with self._db.snapshot() as conn:
            memo = self._memo.of(generation.cache_key(conn))
            known = memo.children.get(uri)
            if known is None:
                rows = conn.execute(
                    f"SELECT {_NODE_COLUMNS} FROM {_NODE_FROM} WHERE p.uri = ? "
                    "ORDER BY n.line_start, n.id",
                    (uri,),
                ).fetchall()
                known = tuple(_node(row) for row in rows)
                self._memo.add_children(memo, uri, known)
        return list(known)

    def files(self) -> list[Node]:
        """Every file node, ordered by path."""
        rows = self._db.read(
            f"SELECT {_NODE_COLUMNS} FROM {_NODE_FROM} WHERE n.kind = 'file' ORDER BY n.path"
        )
        return [_node(row) for row in rows]

    def find_symbols(self, name: str, limit: int = 20) -> list[Node]:
        """Nodes whose name or dotted qualname equals ``name`` (exact, case-sensitive)."""
        rows = self._db.read(
            f"SELECT {_NODE_COLUMNS} FROM {_NODE_FROM} "
            "WHERE n.kind != 'file' AND (n.name = ? OR n.qualname = ?) "
            "ORDER BY n.path, n.line_start LIMIT ?",
            (name, name, limit),
        )
        return [_node(row) for row in rows]

    def find_paths(self, fragment: str, limit: int = 20) -> list[Node]:
        """File nodes whose path ends with ``fragment`` (``a/b.py`` matches ``x/a/b.py``)."""
        fragment = fragment.strip("/")
        if not fragment:
            return []
        # A file node is named for its path's last part: the name index finds the few
        # candidates, where the suffix test alone read every node.
        rows = self._db.read(
            f"SELECT {_NODE_COLUMNS} FROM {_NODE_FROM} WHERE n.kind = 'file' AND n.name = ? "
            "AND (n.path = ? OR substr(n.path, -length(?) - 1) = '/' || ?) "
            "ORDER BY length(n.path), n.path LIMIT ?",
            (fragment.rsplit("/", 1)[-1], fragment, fragment, fragment, limit),
        )
        return [_node(row) for row in rows]

    def content_hashes(self, uris: Sequence[str]) -> dict[str, str]:
        """``{uri: content_hash}`` (sha256 of the depth-9 text) for these nodes."""
        found: dict[str, str] = {}
        for chunk in chunked(list(dict.fromkeys(uris))):
            marks = ",".join("?" * len(chunk))
            for uri, digest in self._db.read(
                f"SELECT uri, content_hash FROM nodes WHERE uri IN ({marks})", chunk
            ):
                found[uri] = digest
        return found
