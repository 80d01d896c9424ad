"""Building and refreshing one project's index in PostgreSQL with the core's pipeline.

Discovery, parsing, rendering, token counting, secret redaction and link resolution are the
core's (``contextfuse.kb``: ``discover``, ``process_file``, ``build_edges``); this module
writes their records to PostgreSQL instead of the index file. A run is one transaction
under an advisory lock per project: indexers of the same project queue, those of other
projects run side by side, and servers keep reading the last committed index meanwhile.
Index contributors (embeddings) run after the commit, as with the SQLite store.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import attrs
from psycopg import sql
from psycopg.types.json import Jsonb

from contextfuse.backends import BackendSet
from contextfuse.kb import files as discovery
from contextfuse.kb.compressed import stored_text
from contextfuse.kb.indexer import DEFAULT_INDEX_DIR, IndexStats, ProgressCallback
from contextfuse.kb.links import FileFacts, NodeKey, build_edges, go_module
from contextfuse.kb.nodes import source_lines
from contextfuse.kb.parse import detect, planned_parser
from contextfuse.kb.process import (
    Outcome,
    Todo,
    Unchanged,
    paused_gc,
    process_batch,
    process_file,
)
from contextfuse.kb.render import DEPTHS
from contextfuse.kb.tiers import EVICTED
from contextfuse.kb.tokens import count_renderings
from contextfuse.kb.vendored import is_vendored
from contextfuse.kb.writer import FileRecord
from contextfuse.tokenizer import Tokenizer
from contextfuse_postgres.adr import import_adrs
from contextfuse_postgres.history import update_history
from contextfuse_postgres.text import tsvector_literal

__all__ = [
    "PostgresIndexSession",
    "delete_files",
    "index_project",
    "project_lock_key",
    "rebuild_edges",
    "rebuild_vocabulary",
]

_CHUNK_FILES = 200
_BATCH_FILES = 40  # files per task of a worker process
_PARALLEL_MIN_FILES = 400  # fewer files are parsed here (workers take a second to start)
_MAX_WORKERS = 4
_PAGE = 2000


def project_lock_key(project: str) -> str:
    """The text whose hash is the advisory lock key of one project's index runs."""
    return f"contextfuse:index:{project}"


@attrs.frozen(slots=True)
class _Old:
    id: int
    size: int
    mtime_ns: int
    sha256: str
    plan: str


@attrs.define
class PostgresIndexSession:
    """What an index contributor receives (the same shape as ``contextfuse.kb.IndexSession``)."""

    project: str
    root: Path
    backends: BackendSet
    changed_uris: frozenset[str]
    removed_uris: frozenset[str]
    _pool: Any
    _progress: ProgressCallback | None = None

    def iter_node_texts(
        self, depth: int = 9, kinds: Sequence[str] | None = None
    ) -> Iterator[tuple[str, str, str]]:
        """``(uri, content_hash, text)`` of every current node at ``depth``, in index order."""
        last = 0
        kind_filter = " AND n.kind = ANY(%s)" if kinds else ""
        while True:
            params: list[Any] = [depth, self.project, last]
            if kinds:
                params.append(list(kinds))
            with self._pool.connection() as conn:
                rows = conn.execute(
                    "SELECT n.id, n.uri, n.content_hash, n.kind, r.content, r.line_start,"
                    " r.line_end, CASE WHEN r.content IS NULL THEN f.content END,"
                    " CASE WHEN r.content IS NULL THEN f.cold END"
                    " FROM cf_nodes n JOIN cf_renderings r ON r.node_id = n.id AND r.depth = %s"
                    " JOIN cf_files f ON f.id = n.file_id"
                    f" WHERE n.project = %s AND n.id > %s{kind_filter} ORDER BY n.id LIMIT {_PAGE}",
                    params,
                ).fetchall()
            if not rows:
                return
            for node_id, uri, digest, kind, content, first, end, source, cold in rows:
                last = node_id
                if content is None:
                    text = stored_text(source if cold is None else cold)
                    content = source_lines(text.split("\n"), kind, first, end)
                yield uri, digest, content

    def count_without_vectors(self, model: str, kinds: Sequence[str] | None = None) -> int:
        """How many current nodes (of ``kinds``) have no vector of ``model`` for their content."""
        kind_filter = " AND n.kind = ANY(%s)" if kinds else ""
        params: list[Any] = [self.project, model, self.project]
        if kinds:
            params.append(list(kinds))
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT count(*) FROM cf_nodes n LEFT JOIN cf_vectors v ON v.project = %s"
                " AND v.model = %s AND v.content_hash = n.content_hash"
                f" WHERE n.project = %s AND v.content_hash IS NULL{kind_filter}",
                params,
            ).fetchone()
        return int(row[0]) if row else 0

    def progress(self, description: str, done: int, total: int) -> None:
        """Report a contributor's progress (shown by the CLI's progress bar)."""
        if self._progress is not None:
            self._progress(description, done, total)


class _Run:
    """One index run of one project, inside one transaction on ``conn``."""

    def __init__(
        self,
        conn: Any,
        root: Path,
        project: str,
        tokenizer: Tokenizer,
        progress: ProgressCallback,
        max_file_size: int,
    ) -> None:
        self.conn = conn
        self.root = root
        self.project = project
        self.tokenizer = tokenizer
        self.progress = progress
        self.max_file_size = max_file_size
        self.changed: list[str] = []
        self.removed: list[str] = []
        self.notes: list[str] = []

    def execute(self, found: discovery.Discovery, stats: IndexStats, rebuild: bool) -> None:
        conn = self.conn
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (project_lock_key(self.project),),
        )
        row = conn.execute(
            "SELECT meta FROM cf_projects WHERE project = %s", (self.project,)
        ).fetchone()
        meta: dict[str, str] = dict(row[0]) if row else {}
        full = rebuild or meta.get("tokenizer", self.tokenizer.name) != self.tokenizer.name
        if rebuild:
            self.clear()
            meta = {}
            stats.rebuilt = True
        skipped = self.update_files(found, stats, full)
        stats.notes.extend(self.notes)
        changed = bool(self.changed or self.removed) or full
        if changed:
            self.progress("Linking symbols", 0, 1)
            rebuild_edges(conn, self.project)
            rebuild_vocabulary(conn, self.project)
            self.progress("Linking symbols", 1, 1)
        conn.execute("DELETE FROM cf_skipped WHERE project = %s", (self.project,))
        with conn.cursor().copy(
            "COPY cf_skipped (project, path, size, mtime_ns, reason) FROM STDIN"
        ) as copy:
            for path, size, mtime_ns, reason in dict((row[0], row) for row in skipped).values():
                copy.write_row((self.project, path, size, mtime_ns, reason))
        self.progress("Reading history", 0, 1)
        head, added = update_history(conn, self.project, self.root, meta.get("head") or None)
        self.progress("Reading history", 1, 1)
        stats.commits_added = added
        stats.decisions_imported = import_adrs(conn, self.project)
        meta.update(
            project=self.project,
            root=str(self.root),
            tokenizer=self.tokenizer.name,
            head=head,
            git="1" if found.git else "0",
            indexed_at=str(int(time.time())),
        )
        conn.execute(
            "INSERT INTO cf_projects (project, meta) VALUES (%s, %s)"
            " ON CONFLICT (project) DO UPDATE SET meta = excluded.meta",
            (self.project, Jsonb(meta)),
        )

    def clear(self) -> None:
        """Remove every row of the project (``--rebuild``)."""
        for table in (
            "cf_edges",
            "cf_vocabulary",
            "cf_skipped",
            "cf_commits",
            "cf_commit_files",
            "cf_vectors",
            "cf_files",  # nodes and renderings go with their files
        ):
            self.conn.execute(
                sql.SQL("DELETE FROM {} WHERE project = %s").format(sql.Identifier(table)),
                (self.project,),
            )

    def update_files(
        self, found: discovery.Discovery, stats: IndexStats, full: bool
    ) -> list[tuple[str, int, int, str]]:
        """Write new and changed files, delete removed ones; returns the skipped files."""
        conn = self.conn
        old = {
            row[0]: _Old(*row[1:])
            for row in conn.execute(
                "SELECT path, id, size, mtime_ns, sha256, parser FROM cf_files WHERE project = %s",
                (self.project,),
            )
        }
        old_skipped = {
            row[0]: (row[1], row[2], row[3])
            for row in conn.execute(
                "SELECT path, size, mtime_ns, reason FROM cf_skipped WHERE project = %s",
                (self.project,),
            )
        }
        skipped = [(s.path, 0, 0, s.reason) for s in found.skipped]
        todo: list[Todo] = []
        kept: set[str] = set()
        plans: dict[tuple[str, bool], str] = {}
        for candidate in found.candidates:
            language, resource_type = detect(candidate.path)
            key = (language, is_vendored(candidate.path))
            plan = plans.get(key) or plans.setdefault(key, planned_parser(language, candidate.path))
            stat = (candidate.size, candidate.mtime_ns)
            previous = old.get(candidate.path)
            if full or (previous is not None and previous.plan != plan):
                previous = None
            if previous is not None and (previous.size, previous.mtime_ns) == stat:
                kept.add(candidate.path)
                continue
            cached = old_skipped.get(candidate.path)
            if not full and cached is not None and cached[:2] == stat and _cacheable(cached[2]):
                skipped.append((candidate.path, *stat, cached[2]))
                continue
            digest = previous.sha256 if previous is not None else None
            todo.append(Todo(candidate, language, resource_type, plan, digest))
        written: set[str] = set()
        touched: list[tuple[int, int, str, str]] = []
        records: list[FileRecord] = []
        total = len(todo)
        self.progress("Indexing files", 0, total)
        with paused_gc():
            for done, (item, outcome) in enumerate(zip(todo, self.outcomes(todo), strict=True), 1):
                if isinstance(outcome, discovery.Skip):
                    candidate = item.candidate
                    skipped.append(
                        (candidate.path, candidate.size, candidate.mtime_ns, outcome.reason)
                    )
                elif isinstance(outcome, Unchanged):
                    touched.append((outcome.size, outcome.mtime_ns, self.project, outcome.path))
                    kept.add(outcome.path)
                    stats.bytes_read += outcome.size
                else:
                    if outcome.token_counts is None:  # parsed by a worker without a tokenizer
                        outcome.token_counts = count_renderings(self.tokenizer, outcome.drafts)
                    records.append(outcome)
                    written.add(outcome.path)
                    stats.bytes_read += outcome.size
                if len(records) >= _CHUNK_FILES or (done == total and records):
                    self.write(records, [old[r.path].id for r in records if r.path in old], stats)
                    records = []
                if done % 50 == 0 or done == total:
                    self.progress("Indexing files", done, total)
        conn.cursor().executemany(
            "UPDATE cf_files SET size = %s, mtime_ns = %s WHERE project = %s AND path = %s",
            touched,
        )
        gone = [o.id for path, o in old.items() if path not in kept and path not in written]
        if gone:
            self.removed.extend(delete_files(conn, gone))
        stats.files_removed = len(gone)
        stats.files_unchanged = len(kept)
        return skipped

    def outcomes(self, todo: list[Todo]) -> Iterator[Outcome]:
        """The outcome of each file of ``todo``, in order; in worker processes when many.

        Workers start from a fork server: this process runs the connection pool's threads,
        and forking a process with threads is unsafe.
        """
        workers = min(os.cpu_count() or 1, _MAX_WORKERS)
        if workers <= 1 or len(todo) < _PARALLEL_MIN_FILES:
            for item in todo:
                yield process_file(
                    self.root, self.project, item, self.max_file_size, self.tokenizer
                )
            return
        try:  # workers count tokens too, if the tokenizer can travel to them
            tokenizer: Tokenizer | None = pickle.loads(pickle.dumps(self.tokenizer))
        except Exception:
            tokenizer = None
        batches = [todo[i : i + _BATCH_FILES] for i in range(0, len(todo), _BATCH_FILES)]
        context = multiprocessing.get_context("forkserver")
        done = 0
        try:
            with ProcessPoolExecutor(workers, mp_context=context) as pool:
                count = len(batches)
                for results in pool.map(
                    process_batch,
                    [self.root] * count,
                    [self.project] * count,
                    batches,
                    [self.max_file_size] * count,
                    [tokenizer] * count,
                ):
                    for outcome in results:
                        yield outcome
                        done += 1
        except BrokenProcessPool as exc:
            # E.g. a script without ``if __name__ == "__main__":`` that the workers re-ran.
            self.notes.append(f"worker processes stopped ({exc}); the rest was parsed here")
        for item in todo[done:]:
            yield process_file(self.root, self.project, item, self.max_file_size, self.tokenizer)

    def write(self, records: list[FileRecord], stale: list[int], stats: IndexStats) -> None:
        """Insert files with their nodes, renderings and search vectors (COPY)."""
        conn = self.conn
        if stale:
            self.removed.extend(delete_files(self.conn, stale))
        node_count = sum(len(r.drafts) for r in records)
        file_ids = [
            row[0]
            for row in conn.execute(
                "SELECT nextval('cf_files_id_seq') FROM generate_series(1, %s)", (len(records),)
            )
        ]
        node_ids = iter(
            [
                row[0]
                for row in conn.execute(
                    "SELECT nextval('cf_nodes_id_seq') FROM generate_series(1, %s)",
                    (node_count,),
                )
            ]
        )
        cursor = conn.cursor()
        with cursor.copy(
            "COPY cf_files (id, project, path, size, mtime_ns, sha256, language, parser,"
            " content, facts, redactions, note) FROM STDIN"
        ) as copy:
            for file_id, record in zip(file_ids, records, strict=True):
                copy.write_row(
                    (
                        file_id,
                        self.project,
                        record.path,
                        record.size,
                        record.mtime_ns,
                        record.sha256,
                        record.language,
                        record.plan,
                        record.content.replace("\0", ""),
                        Jsonb(record.facts),
                        Jsonb(record.redactions),
                        record.note,
                    )
                )
        node_rows: list[tuple[Any, ...]] = []
        rendering_rows: list[tuple[Any, ...]] = []
        for file_id, record in zip(file_ids, records, strict=True):
            if record.token_counts is None:
                raise ValueError(f"{record.path}: tokens not counted")
            counts = iter(record.token_counts)
            ids: dict[str, int] = {}
            for draft, search in zip(record.drafts, record.search, strict=True):
                node_id = ids[draft.uri] = next(node_ids)
                parent = ids.get(draft.parent_uri) if draft.parent_uri else None
                node_rows.append(
                    (
                        node_id,
                        self.project,
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
                        tsvector_literal(*search),
                    )
                )
                full_text = draft.texts[0]
                for depth, text in zip(DEPTHS, draft.texts, strict=True):
                    stored = None if depth == 9 or text == full_text else text.replace("\0", "")
                    rendering_rows.append(
                        (node_id, depth, stored, next(counts), draft.line_start, draft.line_end)
                    )
                self.changed.append(draft.uri)
        with cursor.copy(
            "COPY cf_nodes (id, project, uri, file_id, path, kind, name, qualname, parent_id,"
            " language, line_start, line_end, resource_type, summary, content_hash, tsv)"
            " FROM STDIN"
        ) as copy:
            for node_row in node_rows:
                copy.write_row(node_row)
        with cursor.copy(
            "COPY cf_renderings (node_id, depth, content, token_count, line_start, line_end)"
            " FROM STDIN"
        ) as copy:
            for rendering_row in rendering_rows:
                copy.write_row(rendering_row)
        stats.files_parsed += len(records)
        stats.nodes_written += len(node_rows)


def delete_files(conn: Any, file_ids: Sequence[int]) -> list[str]:
    """Remove files with their nodes and renderings; returns the removed node URIs."""
    removed = [
        str(row[0])
        for row in conn.execute(
            "DELETE FROM cf_nodes WHERE file_id = ANY(%s) RETURNING uri", (list(file_ids),)
        )
    ]
    conn.execute("DELETE FROM cf_files WHERE id = ANY(%s)", (list(file_ids),))
    return removed


def rebuild_edges(conn: Any, project: str) -> None:
    """Resolve every file's facts into edges again (names resolve project-wide)."""
    conn.execute("DELETE FROM cf_edges WHERE project = %s", (project,))
    files = [
        FileFacts(path, language, facts)
        for path, language, facts in conn.execute(
            "SELECT path, language, facts FROM cf_files WHERE project = %s", (project,)
        )
    ]
    nodes = list(
        map(
            NodeKey._make,
            conn.execute(
                "SELECT id, path, qualname, kind, name, parent_id FROM cf_nodes"
                " WHERE project = %s ORDER BY id",
                (project,),
            ),
        )
    )
    go_modules = {}
    for path, content, cold in conn.execute(
        "SELECT path, content, cold FROM cf_files WHERE project = %s"
        " AND (path = 'go.mod' OR path LIKE '%%/go.mod')",
        (project,),
    ):
        declared = go_module(stored_text(content if cold is None else cold))
        if declared:
            go_modules[declared] = path.rpartition("/")[0]
    edges = build_edges(files, nodes, go_modules=go_modules)
    with conn.cursor().copy(
        "COPY cf_edges (project, source, target, kind, weight) FROM STDIN"
    ) as copy:
        for source, target, kind, weight in edges:
            copy.write_row((project, source, target, kind, weight))


def rebuild_vocabulary(conn: Any, project: str) -> None:
    """Every term's document frequency in the project (what ``select_terms`` reads)."""
    conn.execute("DELETE FROM cf_vocabulary WHERE project = %s", (project,))
    inner = sql.SQL("SELECT tsv FROM cf_nodes WHERE project = {}").format(sql.Literal(project))
    conn.execute(
        "INSERT INTO cf_vocabulary (project, term, docs) SELECT %s, word, ndoc FROM ts_stat(%s)",
        (project, inner.as_string(conn)),
    )


def _cacheable(reason: str) -> bool:
    """Skip reasons worth remembering by size and mtime (as the SQLite store's)."""
    return reason in ("binary", EVICTED) or reason.startswith("minified")


def index_project(
    pool: Any,
    root: Path,
    project: str,
    *,
    location: str,
    tokenizer: Tokenizer,
    rebuild: bool = False,
    progress: ProgressCallback | None = None,
    max_file_size: int = discovery.DEFAULT_MAX_FILE_SIZE,
) -> tuple[IndexStats, list[str], list[str]]:
    """Index ``root`` as ``project``; returns the stats and the changed and removed URIs.

    ``location`` is what the stats show as the index path (the URL without credentials).
    """
    report = progress or (lambda description, done, total: None)
    found = discovery.discover(root, exclude_dirs=(root / DEFAULT_INDEX_DIR,))
    stats = IndexStats(project=project, root=str(root), index_path=location, git=found.git)
    with pool.connection() as conn, conn.transaction():
        run = _Run(conn, root, project, tokenizer, report, max_file_size)
        run.execute(found, stats, rebuild)
    return stats, run.changed, run.removed


def fill_totals(pool: Any, project: str, stats: IndexStats) -> None:
    """The totals of the stats, from the committed index."""
    with pool.connection() as conn:
        stats.files, stats.bytes = conn.execute(
            "SELECT count(*), coalesce(sum(size), 0)::bigint FROM cf_files WHERE project = %s",
            (project,),
        ).fetchone()
        secrets: Counter[str] = Counter()
        for (redactions,) in conn.execute(
            "SELECT redactions FROM cf_files WHERE project = %s AND redactions != '{}'",
            (project,),
        ):
            secrets.update(redactions)
            stats.files_redacted += 1
        stats.secrets_redacted = sum(secrets.values())
        stats.secret_kinds = dict(secrets)
        stats.nodes = conn.execute(
            "SELECT count(*) FROM cf_nodes WHERE project = %s", (project,)
        ).fetchone()[0]
        stats.edges = conn.execute(
            "SELECT count(*) FROM cf_edges WHERE project = %s", (project,)
        ).fetchone()[0]
        stats.tokens = conn.execute(
            "SELECT coalesce(sum(r.token_count), 0)::bigint FROM cf_nodes n JOIN cf_renderings r"
            " ON r.node_id = n.id AND r.depth = 9 WHERE n.project = %s AND n.kind = 'file'",
            (project,),
        ).fetchone()[0]
        stats.languages = {
            str(language): int(count)
            for language, count in conn.execute(
                "SELECT language, count(*) FROM cf_files WHERE project = %s"
                " GROUP BY 1 ORDER BY 2 DESC, 1",
                (project,),
            )
        }
        stats.commits = conn.execute(
            "SELECT count(*) FROM cf_commits WHERE project = %s", (project,)
        ).fetchone()[0]
        rows = conn.execute(
            'SELECT path, reason FROM cf_skipped WHERE project = %s ORDER BY path COLLATE "C"',
            (project,),
        ).fetchall()
    stats.skipped_files = [(str(p), str(r)) for p, r in rows]
    stats.skipped = dict(Counter(_reason_group(r) for _, r in rows).most_common())


def _reason_group(reason: str) -> str:
    return reason.split(" (", 1)[0] if reason.startswith(("secret file", "unreadable")) else reason


def run_contributors(
    session: PostgresIndexSession, contributors: Sequence[Any], stats: IndexStats
) -> None:
    """Run each index contributor; a failure is reported by name and the index stays usable."""
    for contributor in contributors:
        name = str(getattr(contributor, "name", type(contributor).__name__))
        try:
            result = contributor.contribute(session)
        except Exception as exc:  # a plugin's failure must not cost the user the index
            stats.contributors[name] = f"failed: {type(exc).__name__}: {exc}"
            stats.notes.append(f"index contributor {name!r} failed: {exc}")
        else:
            details = ""
            if isinstance(result, Mapping) and result:
                details = " (" + ", ".join(f"{k} {v}" for k, v in result.items()) + ")"
            stats.contributors[name] = "ok" + details
