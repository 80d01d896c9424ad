"""Writes to the index file, always inside the caller's one transaction.

Full-text search is a contentless FTS5 table: removing a node replays the exact values it
was indexed with, recomputed from the stored file content (:func:`fts_row` is the single
definition of those values, used for both insert and delete).
"""

from __future__ import annotations

import json
import posixpath
import sqlite3
from collections.abc import Collection, Iterable, Mapping, Sequence
from sys import intern
from typing import Any

import attrs

from contextfuse.kb import generation
from contextfuse.kb.compressed import stored_text
from contextfuse.kb.links import FileFacts, NodeKey, go_module, iter_edges
from contextfuse.kb.nodes import chunked
from contextfuse.kb.render import DEPTHS, NodeDraft, own_text
from contextfuse.kb.term_stats import store_search_units
from contextfuse.kb.terms import name_terms, parts_text, path_terms
from contextfuse.kb.vector import NodeVector

__all__ = ["FileRecord", "IndexWriter", "SearchRow", "fts_rows"]

#: (name, path, body, parts) columns of the full-text table for one node.
SearchRow = tuple[str, str, str, str]
_PARTS_LANGUAGES = frozenset(
    {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "markdown", "rst"}
)


@attrs.define(slots=True)
class FileRecord:
    """One parsed file, ready to be written."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    language: str
    resource_type: str
    plan: str  # the parser planned for it (see ``parse.planned_parser``)
    content: str
    facts: dict[str, Any]
    redactions: dict[str, int]  # secret kind -> spans redacted
    note: str
    drafts: list[NodeDraft]
    search: list[SearchRow]  # one per draft
    token_counts: list[int] | None = None  # 4 per draft (depths 9, 4, 2, 0), when counted
    vectors: list[NodeVector] | None = None  # its nodes' vectors, when computed with it


def fts_rows(
    path: str, language: str, full_text: str, nodes: Sequence[tuple[str, str, str, str]]
) -> list[SearchRow]:
    """The ``(name, path, body, parts)`` full-text search indexes for each node of a file.

    ``nodes`` are ``(kind, name, qualname, own_text)`` in id order, the file first. A
    symbol's body is its own text; the file's body is all of it, and its parts column is
    its nodes' parts together (computed once). Identifier parts are left out for prose and
    data (translations, HTML): they would add nothing but index size. A file is found by
    its whole path, a symbol by its file's name only, so that a query naming ``query.py``
    lifts that file's symbols without lifting every symbol under ``django/``.
    """
    file_name = path_terms(path.rsplit("/", 1)[-1])
    with_parts = language in _PARTS_LANGUAGES
    parts = [parts_text(own) if with_parts else "" for *_, own in nodes]
    rows: list[SearchRow] = []
    for (kind, name, qualname, own), node_parts in zip(nodes, parts, strict=True):
        if kind == "file":
            rows.append(
                (
                    name_terms(name, qualname),
                    path_terms(path),
                    full_text,
                    " ".join(p for p in parts if p),
                )
            )
        else:
            rows.append((name_terms(name, qualname), file_name, own, node_parts))
    return rows


class IndexWriter:
    """Inserts and deletes files with their nodes, renderings, search rows and edges."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        row = conn.execute(
            "SELECT coalesce(max(id), 0) FROM nodes"
            " UNION ALL SELECT coalesce(max(id), 0) FROM files"
        ).fetchall()
        self._next_node = int(row[0][0]) + 1
        self._next_file = int(row[1][0]) + 1
        self.inserted: dict[str, int] = {}  # URI -> id of the nodes of the last insert

    def delete_files(self, file_ids: Sequence[int]) -> dict[str, tuple[int, str, str]]:
        """Remove files with everything derived from them.

        Returns the removed nodes as ``{uri: (id, kind, path)}``, so that a new version of a
        file can give its surviving nodes their old ids (edges into them stay valid).
        """
        removed: dict[str, tuple[int, str, str]] = {}
        if file_ids:
            generation.renew(self.conn)
        for chunk in chunked(list(file_ids)):
            marks = ",".join("?" * len(chunk))
            contents = {
                file_id: (stored_text(content), language)
                for file_id, content, language in self.conn.execute(
                    f"SELECT id, content, language FROM files WHERE id IN ({marks})", chunk
                )
            }
            rows = self.conn.execute(
                "SELECT id, file_id, uri, kind, name, qualname, path, parent_id, line_start,"
                f" line_end FROM nodes WHERE file_id IN ({marks}) ORDER BY id",
                chunk,
            ).fetchall()
            holes: dict[int, list[tuple[int, int]]] = {}
            by_file: dict[int, list[Any]] = {}
            for row in rows:
                if row[7] is not None:
                    holes.setdefault(row[7], []).append((row[8], row[9]))
                by_file.setdefault(row[1], []).append(row)
                removed[row[2]] = (row[0], row[3], row[6])
            deletes: list[tuple[int, str, str, str, str]] = []
            for file_id, file_rows in by_file.items():
                content, language = contents[file_id]
                lines = content.split("\n")
                nodes = [
                    (kind, name, qualname, own_text(lines, first, last, holes.get(node_id, [])))
                    for node_id, _, _, kind, name, qualname, _, _, first, last in file_rows
                ]
                rows_of_file = fts_rows(file_rows[0][6], language, content, nodes)
                deletes.extend(
                    (row[0], *search) for row, search in zip(file_rows, rows_of_file, strict=True)
                )
            self.conn.executemany(
                "INSERT INTO fts (fts, rowid, name, path, body, parts) "
                "VALUES ('delete', ?, ?, ?, ?, ?)",
                deletes,
            )
            self.conn.execute(
                "DELETE FROM renderings WHERE node_id IN "
                f"(SELECT id FROM nodes WHERE file_id IN ({marks}))",
                chunk,
            )
            self.conn.execute(f"DELETE FROM nodes WHERE file_id IN ({marks})", chunk)
            self.conn.execute(f"DELETE FROM files WHERE id IN ({marks})", chunk)
        return removed

    def insert(self, records: Sequence[FileRecord], reuse: Mapping[str, int] | None = None) -> int:
        """Write files with their nodes (every record's ``token_counts`` filled in).

        A node whose URI is in ``reuse`` gets that id back (see :meth:`delete_files`).
        """
        reuse = reuse or {}
        self.inserted = {}
        if records:
            generation.renew(self.conn)
        files_rows = []
        node_rows = []
        rendering_rows = []
        search_rows: list[tuple[int, str, str, str, str]] = []
        written = 0
        for record in records:
            if record.token_counts is None:
                raise ValueError(f"{record.path}: tokens not counted")
            counts = iter(record.token_counts)
            file_id = self._next_file
            self._next_file += 1
            files_rows.append(
                (
                    file_id,
                    record.path,
                    record.size,
                    record.mtime_ns,
                    record.sha256,
                    record.language,
                    record.plan,
                    record.content,
                    json.dumps(record.facts),
                    json.dumps(record.redactions, sort_keys=True),
                    record.note,
                )
            )
            ids: dict[str, int] = {}
            for draft, search in zip(record.drafts, record.search, strict=True):
                node_id = reuse.get(draft.uri, 0)
                if not node_id:
                    node_id = self._next_node
                    self._next_node += 1
                ids[draft.uri] = self.inserted[draft.uri] = node_id
                parent = ids.get(draft.parent_uri) if draft.parent_uri else None
                node_rows.append(
                    (
                        node_id,
                        draft.uri,
                        file_id,
                        record.path,
                        draft.kind,
                        draft.name,
                        draft.qualname,
                        parent,
                        record.language,
                        draft.line_start,
                        draft.line_end,
                        record.resource_type,
                        draft.summary,
                        draft.content_hash,
                    )
                )
                full = draft.texts[0]
                sliced = draft.source_depths
                for depth, text in zip(DEPTHS, draft.texts, strict=True):
                    # NULL: the node's lines of the file (depth 9, or a depth equal to it).
                    if sliced:
                        stored = None if depth in sliced else text
                    else:
                        stored = None if depth == 9 or text == full else text
                    rendering_rows.append(
                        (node_id, depth, stored, next(counts), draft.line_start, draft.line_end)
                    )
                search_rows.append((node_id, *search))
                written += 1
        self.conn.executemany(
            "INSERT INTO files (id, path, size, mtime_ns, sha256, language, parser, content,"
            " facts, redactions, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            files_rows,
        )
        self.conn.executemany(
            "INSERT INTO nodes (id, uri, file_id, path, kind, name, qualname, parent_id,"
            " language, line_start, line_end, resource_type, summary, content_hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            node_rows,
        )
        self.conn.executemany(
            "INSERT INTO renderings (node_id, depth, content, token_count, line_start, line_end)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            rendering_rows,
        )
        self.conn.executemany(
            "INSERT INTO fts (rowid, name, path, body, parts) VALUES (?, ?, ?, ?, ?)",
            search_rows,
        )
        return written

    def touch(self, updates: Iterable[tuple[int, int, str]]) -> None:
        """Record a new size and mtime for files whose content did not change."""
        self.conn.executemany(
            "UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", list(updates)
        )

    def replace_skipped(self, rows: Sequence[tuple[str, int, int, str]]) -> None:
        """The files left out, with their stat (to skip them again without reading)."""
        self.conn.execute("DELETE FROM skipped")
        self.conn.executemany(
            "INSERT OR REPLACE INTO skipped (path, size, mtime_ns, reason) VALUES (?, ?, ?, ?)",
            rows,
        )

    def rebuild_edges(self, paths: Collection[str] | None = None) -> int:
        """Resolve files' facts into edges again (names resolve repository-wide).

        With ``paths``, only the edges out of those files are replaced: right when every other
        file's edges still hold (no file added or removed, no symbol added or removed).
        """
        generation.renew(self.conn)
        rows: Iterable[tuple[str, str, str]]
        if paths is None:
            self.conn.execute("DELETE FROM edges")
            # Read as the edges are written: the facts of every file are never all in memory.
            rows = self.conn.execute("SELECT path, language, facts FROM files ORDER BY id")
        else:
            rows = chosen = []
            for chunk in chunked(sorted(paths)):
                marks = ",".join("?" * len(chunk))
                chosen += self.conn.execute(
                    f"SELECT path, language, facts FROM files WHERE path IN ({marks})", chunk
                ).fetchall()
                self.conn.execute(
                    "DELETE FROM edges WHERE source IN (SELECT n.id FROM nodes n JOIN files f"
                    f" ON f.id = n.file_id WHERE f.path IN ({marks}))",
                    chunk,
                )
        files = (FileFacts(path, language, json.loads(facts)) for path, language, facts in rows)
        # One string object per path and kind, shared by the nodes (a file has many).
        nodes = [
            NodeKey(node_id, intern(path), qualname, intern(kind), name, parent)
            for node_id, path, qualname, kind, name, parent in self.conn.execute(
                "SELECT id, path, qualname, kind, name, parent_id FROM nodes"
            )
        ]
        go_modules = {}
        for path, content in self.conn.execute(
            "SELECT path, content FROM files WHERE path = 'go.mod' OR path LIKE '%/go.mod'"
        ):
            declared = go_module(stored_text(content))
            if declared:
                go_modules[declared] = posixpath.dirname(path)
        edges = iter_edges(files, nodes, only=paths, go_modules=go_modules)
        before = self.conn.total_changes
        self.conn.executemany(
            "INSERT INTO edges (source, target, kind, weight) VALUES (?, ?, ?, ?)", edges
        )
        return self.conn.total_changes - before

    def rebuild_vocabulary(self) -> None:
        """Copy every term's document frequency out of the full-text index, with the count
        of nodes it is a share of (``contextfuse.kb.term_stats``)."""
        self.conn.execute("DELETE FROM vocabulary")
        self.conn.execute("INSERT INTO vocabulary (term, docs) SELECT term, doc FROM fts_vocab")
        store_search_units(self.conn)

    def set_meta(self, values: dict[str, str]) -> None:
        """Store index-wide facts (project, tokenizer, last HEAD...)."""
        self.conn.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", list(values.items())
        )
