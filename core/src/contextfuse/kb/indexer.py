"""Building and refreshing an index.

One run: discover the files, keep the unchanged ones (same size and mtime, or same content
hash), parse and render the others, write them, resolve the graph again, read new commits,
and commit, all in one transaction. Index contributors (embeddings, extra edges) run after
that commit, each in its own transactions, so one that fails leaves the index usable.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import pickle
import shutil
import sqlite3
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import attrs

from contextfuse.backends import BackendSet
from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb import files as discovery
from contextfuse.kb import freshness, generation
from contextfuse.kb.adr import ADR_FOLDERS, import_adrs
from contextfuse.kb.compressed import stored_text
from contextfuse.kb.diskspace import disk_full_error, full_disk, is_disk_full
from contextfuse.kb.graph import SQLiteGraphBackend
from contextfuse.kb.history import SQLiteTemporalBackend, update_history
from contextfuse.kb.layout import DEFAULT_INDEX_DIR
from contextfuse.kb.nodes import SQLiteNodeStore, source_lines
from contextfuse.kb.parse import TREE_SITTER_LANGUAGES, detect, planned_parser
from contextfuse.kb.parse_treesitter import missing_reason
from contextfuse.kb.plans import SQLitePlanStore, ensure_plan_schema
from contextfuse.kb.process import (
    Outcome,
    Todo,
    Unchanged,
    index_lock,
    paused_gc,
    process_batch,
    process_files,
    worker_started,
)
from contextfuse.kb.project_name import check_project_name, rename_project
from contextfuse.kb.store import DB_NAME, Database, remove_index, reset_schema
from contextfuse.kb.text import SQLiteTextBackend
from contextfuse.kb.tiers import EVICTED
from contextfuse.kb.tokens import count_renderings
from contextfuse.kb.vector import SQLiteVectorBackend
from contextfuse.kb.vectorizers import (
    NodeVectorizer,
    ParsedVectors,
    picklable,
    vectorizers_of,
)
from contextfuse.kb.vendored import is_vendored
from contextfuse.kb.writer import FileRecord, IndexWriter
from contextfuse.tokenizer import Tokenizer, default_tokenizer

__all__ = [
    "DEFAULT_INDEX_DIR",
    "IndexSession",
    "IndexStats",
    "ProgressCallback",
    "build_index",
    "prepare_index_dir",
]

#: ``progress(description, done, total)``
ProgressCallback = Callable[[str, int, int], None]
_CHUNK_FILES = 200  # files counted and written together
_BATCH_FILES = 40  # files per task of a worker process
_PARALLEL_MIN_FILES = 400  # fewer files are parsed in this process (workers take time to start)
_MAX_WORKERS = 4
_MAX_FILE_NOTES = 20  # per-file notes listed in the stats (parse failures)
_PAGE = 2000  # nodes per page when contributors read node texts
_VECTOR_WRITE_BATCH = 8192  # vectors a contributor's upserts write per transaction (~7 MB)


@attrs.define
class IndexStats:
    """What an index run did and what the index now holds."""

    project: str
    root: str
    index_path: str
    git: bool
    files: int = 0  # files in the index
    files_parsed: int = 0  # parsed in this run (new or changed)
    files_unchanged: int = 0
    files_removed: int = 0
    nodes: int = 0
    nodes_written: int = 0
    edges: int = 0
    tokens: int = 0  # real tokens of all indexed files (depth 9)
    bytes: int = 0  # bytes of all indexed files
    bytes_read: int = 0  # bytes read in this run
    seconds: float = 0.0
    skipped: dict[str, int] = attrs.field(factory=dict)  # reason -> files
    skipped_files: list[tuple[str, str]] = attrs.field(factory=list)  # (path, reason)
    secrets_redacted: int = 0  # secrets replaced by [REDACTED:<kind>] in the indexed files
    secret_kinds: dict[str, int] = attrs.field(factory=dict)  # kind -> secrets redacted
    files_redacted: int = 0
    languages: dict[str, int] = attrs.field(factory=dict)
    commits: int = 0
    commits_added: int = 0
    decisions_imported: int = 0  # ADR files imported, updated or removed in this run
    contributors: dict[str, str] = attrs.field(factory=dict)  # name -> "ok" or the error
    notes: list[str] = attrs.field(factory=list)
    rebuilt: bool = False

    @property
    def files_per_second(self) -> float:
        """Files examined per second in this run."""
        examined = self.files_parsed + self.files_unchanged + sum(self.skipped.values())
        return examined / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the CLI's ``--format json``)."""
        data = attrs.asdict(self)
        data["skipped_files"] = [{"path": p, "reason": r} for p, r in self.skipped_files]
        data["files_per_second"] = round(self.files_per_second, 1)
        data["seconds"] = round(self.seconds, 3)
        return data


@attrs.define
class IndexSession:
    """What an index contributor receives: the fresh index, writable vectors, progress.

    ``changed_uris`` are the nodes written in this run, ``removed_uris`` those deleted;
    ``vectorized`` counts, per model, the vectors stored while the files were parsed (see
    ``contextfuse.kb.vectorizers``).
    """

    project: str
    root: Path
    backends: BackendSet
    changed_uris: frozenset[str]
    removed_uris: frozenset[str]
    _db: Database
    _progress: ProgressCallback | None = None
    vectorized: Mapping[str, int] = attrs.field(factory=dict)
    #: Vector checks known complete: nothing changed since a contributor last completed them.
    _complete: frozenset[str] = frozenset()
    #: Vector checks made in this run (marked complete when their contributor succeeds).
    checked: set[str] = attrs.field(factory=set)

    def iter_node_texts(
        self, depth: int = 9, kinds: Sequence[str] | None = None
    ) -> Iterator[tuple[str, str, str]]:
        """``(uri, content_hash, text)`` of every current node at ``depth``, in index order."""
        kind_filter = f" AND n.kind IN ({','.join('?' * len(kinds))})" if kinds else ""
        last = 0
        current_file = -1
        lines: list[str] = []
        while True:
            # A page at a time, fully fetched: no cursor stays open while the caller writes.
            rows = self._db.read(
                "SELECT n.id, n.uri, n.content_hash, n.file_id, n.kind, r.content, r.line_start,"
                " r.line_end FROM nodes n JOIN renderings r ON r.node_id = n.id AND r.depth = ?"
                f" WHERE n.id > ?{kind_filter} ORDER BY n.id LIMIT {_PAGE}",
                [depth, last, *(kinds or ())],
            )
            if not rows:
                return
            for node_id, uri, digest, file_id, kind, content, first, end in rows:
                last = node_id
                if content is None:
                    if file_id != current_file:
                        text = self._db.read("SELECT content FROM files WHERE id = ?", (file_id,))
                        lines = stored_text(text[0][0]).split("\n") if text else []
                        current_file = file_id
                    content = source_lines(lines, kind, first, end)
                yield uri, digest, content

    def count_without_vectors(self, model: str, kinds: Sequence[str] | None = None) -> int:
        """How many current nodes (of ``kinds``) have no vector of ``model`` for their content.

        One query: a contributor whose vectors are complete can return without reading every
        node's text (a no-change refresh then costs milliseconds, not a scan of the index).
        """
        key = _vectors_key(model, kinds)
        self.checked.add(key)
        if key in self._complete:
            # The join probes the vector table once per node (0.3 s on 20,000 nodes); a
            # refresh that changed nothing after a complete run need not pay it.
            return 0
        flush = getattr(self.backends.vector, "flush", None)
        if flush is not None:  # the vectors the run's backend keeps count as stored
            flush()
        kind_filter = f" AND n.kind IN ({','.join('?' * len(kinds))})" if kinds else ""
        rows = self._db.read(
            "SELECT count(*) FROM nodes n LEFT JOIN vectors v ON v.model = ? "
            f"AND v.content_hash = n.content_hash WHERE v.content_hash IS NULL{kind_filter}",
            [model, *(kinds or ())],
        )
        return int(rows[0][0])

    def progress(self, description: str, done: int, total: int) -> None:
        """Report a contributor's progress (shown by the CLI's progress bar)."""
        if self._progress is not None:
            self._progress(description, done, total)


#: Prefix of the meta keys that mark a vector check complete (see ``count_without_vectors``).
_VECTORS_COMPLETE = "vectors-complete:"


def _vectors_key(model: str, kinds: Sequence[str] | None) -> str:
    return f"{_VECTORS_COMPLETE}{model}:{','.join(kinds or ())}"


@attrs.frozen(slots=True)
class _Old:
    id: int
    size: int
    mtime_ns: int
    sha256: str
    plan: str


def build_index(
    root: Path,
    *,
    index_dir: Path | None = None,
    rebuild: bool = False,
    progress: ProgressCallback | None = None,
    contributors: Sequence[Any] = (),
    tokenizer: Tokenizer | None = None,
    max_file_size: int = discovery.DEFAULT_MAX_FILE_SIZE,
    workers: int | None = None,
    project: str | None = None,
) -> IndexStats:
    """Build or refresh the index of ``root``; see :func:`contextfuse.kb.index`."""
    started = time.perf_counter()
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # A spawned worker is importing a script that indexes at import time: indexing here
        # would wait forever for the parent's lock.
        raise KnowledgeBaseError(
            "index() was called while a worker process imported the main script; "
            "guard the script with `if __name__ == '__main__':`"
        )
    root = root.resolve()
    if not root.is_dir():
        raise KnowledgeBaseError(f"{root} is not a directory")
    if project is not None:
        check_project_name(project)
    index_dir = (index_dir or root / DEFAULT_INDEX_DIR).resolve()
    prepare_index_dir(index_dir, root)
    tokenizer = tokenizer or default_tokenizer()
    lock_notes: list[str] = []
    with index_lock(index_dir / "index.lock", lock_notes):
        db = _open_for_write(index_dir / DB_NAME, rebuild)
        try:
            run = _Run(root, index_dir, db, tokenizer, progress, max_file_size, workers)
            run.wanted_name = project
            run.vectorizers = vectorizers_of(contributors)
            stats = run.execute(rebuild)
            stats.notes[:0] = lock_notes
            run.contribute(stats, contributors)
            run.finish(stats)
        except sqlite3.DatabaseError as exc:  # e.g. a page of the file is damaged
            raise db.error(exc) from exc
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full_error(index_dir) from exc
            raise
        finally:
            db.close()
    stats.seconds = time.perf_counter() - started
    return stats


def prepare_index_dir(index_dir: Path, root: Path) -> None:
    """Create the index directory; inside the repository, with a ``.gitignore`` of ``*``."""
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KnowledgeBaseError(f"cannot create the index directory {index_dir}: {exc}") from exc
    ignore = index_dir / ".gitignore"
    if index_dir.is_relative_to(root) and not ignore.exists():
        try:
            ignore.write_text(
                "# created by contextfuse: the index is not part of the repository\n*\n"
            )
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full_error(index_dir) from exc
            raise KnowledgeBaseError(f"cannot write {ignore}: {exc}") from exc


def _open_for_write(path: Path, rebuild: bool) -> Database:
    db = Database(path)
    try:
        db.check(create=True)
    except KnowledgeBaseError:
        db.close()
        if not rebuild:
            raise
        remove_index(path)  # a foreign or corrupt file: --rebuild replaces it
        db = Database(path)
        db.check(create=True)
    return db


class _Run:
    def __init__(
        self,
        root: Path,
        index_dir: Path,
        db: Database,
        tokenizer: Tokenizer,
        progress: ProgressCallback | None,
        max_file_size: int,
        workers: int | None,
    ) -> None:
        self.root = root
        self.index_dir = index_dir
        self.db = db
        self.conn = db.connection()
        self.conn.execute("PRAGMA cache_size = -65536")  # 64 MB: big writes spill less
        self.tokenizer = tokenizer
        self.progress = progress or (lambda description, done, total: None)
        self.max_file_size = max_file_size
        self.workers = workers
        # Before discovery stats any file: the moment mtimes are judged against.
        self.started_ns = freshness.clock(index_dir, root)
        self.racy: set[str] = set()  # read in this run, too close to their last change
        self.racy_before: set[str] = set()  # so read by the previous run
        self.project = root.name
        self.wanted_name: str | None = None  # the name asked for; None: keep the stored one
        self.changed: list[str] = []
        self.removed: list[str] = []
        self.written: list[str] = []  # paths parsed and written in this run
        self.vectorizers: list[NodeVectorizer] = []  # the contributors' (see ``vectorizers``)
        self.parsed = ParsedVectors(self.conn, [])  # their vectors, stored with the files
        self.vectorized: Mapping[str, int] = {}  # model -> vectors stored with the files
        self.notes: list[str] = []  # for the stats
        # True while no file was added or removed and every changed file kept its symbols:
        # then only the changed files' own edges need resolving again.
        self.same_shape = True

    def meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    # ---- the transaction ---------------------------------------------------------------------

    def execute(self, rebuild: bool) -> IndexStats:
        found = discovery.discover(self.root, exclude_dirs=(self.index_dir,))
        stats = IndexStats(
            project=self.project,
            root=str(self.root),
            index_path=str(self.db.path),
            git=found.git,
        )
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            meta = self.meta()
            outdated = self.db.check(create=False) == "outdated"
            full = (
                rebuild
                or outdated
                or meta.get("tokenizer", self.tokenizer.name) != self.tokenizer.name
            )
            if rebuild or outdated:
                reset_schema(conn)
                meta = {}
                stats.rebuilt = True
            self.name_project(meta, stats)
            if outdated and not rebuild:
                stats.notes.append("the index was built by another version and was rebuilt")
            self.racy_before = set(json.loads(meta.get(freshness.RACY_KEY) or "[]"))
            self.update_files(found, stats, full)
            stats.notes.extend(self.notes)
            writer = IndexWriter(conn)
            changed = bool(self.changed or self.removed) or full
            if changed:
                self.progress("Linking symbols", 0, 1)
                writer.rebuild_edges(None if full or not self.same_shape else self.written)
                self.progress("Linking symbols", 1, 1)
            self.progress("Reading history", 0, 1)
            history = update_history(conn, self.root, meta.get("head") or None)
            self.progress("Reading history", 1, 1)
            stats.commits_added = history.added
            ensure_plan_schema(conn)
            stats.decisions_imported = import_adrs(conn, self.adr_files())
            writer.set_meta(
                {
                    "project": self.project,
                    "root": str(self.root),
                    "tokenizer": self.tokenizer.name,
                    "head": history.head or "",
                    "git": "1" if found.git else "0",
                    "indexed_at": str(int(time.time())),
                    freshness.RACY_KEY: json.dumps(sorted(self.racy)),
                }
            )
            if changed and (len(self.changed) > 1000 or stats.files_removed):
                # Merge the FTS segments: faster search after a big change, and the words of
                # files that left the index leave its file (a deletion is only a marker).
                conn.execute("INSERT INTO fts (fts) VALUES ('optimize')")
            if changed:
                writer.rebuild_vocabulary()
            if generation.GENERATION_KEY not in meta:  # an index from before generations
                generation.renew(conn)
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.DatabaseError):
                raise self.db.error(exc) from exc
            raise
        return stats

    def name_project(self, meta: Mapping[str, str], stats: IndexStats) -> None:
        """The name asked for, else the stored one, else the folder's; a stored index of
        another name is renamed (see ``contextfuse.kb.project_name``)."""
        stored = meta.get("project")
        name = self.wanted_name or stored or self.root.name
        if stored is not None and stored != name:
            if rename_project(self.conn, stored, name):
                generation.renew(self.conn)  # the mapped arrays hold the old URIs
            stats.notes.append(f"the project {stored!r} was renamed {name!r}")
        self.project = stats.project = name

    def adr_files(self) -> dict[str, str]:
        """``{path: sha256}`` of the indexed files under an ADR folder."""
        clauses = " OR ".join("path LIKE ?" for _ in ADR_FOLDERS)
        patterns = [f"%{folder}%" for folder in ADR_FOLDERS]
        rows = self.conn.execute(f"SELECT path, sha256 FROM files WHERE {clauses}", patterns)
        return {str(path): str(sha) for path, sha in rows}

    def update_files(self, found: discovery.Discovery, stats: IndexStats, full: bool) -> None:
        """Write new and changed files, delete removed ones; unchanged files are not read."""
        conn = self.conn
        old = {
            row[0]: _Old(*row[1:])
            for row in conn.execute("SELECT path, id, size, mtime_ns, sha256, parser FROM files")
        }
        old_skipped = {
            row[0]: (row[1], row[2], row[3])
            for row in conn.execute("SELECT path, size, mtime_ns, reason FROM skipped")
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
                previous = None  # parse it whatever its content
            unsure = candidate.path in self.racy_before
            if previous is not None and (previous.size, previous.mtime_ns) == stat and not unsure:
                kept.add(candidate.path)
                continue
            cached = old_skipped.get(candidate.path)
            if (
                not full
                and not unsure
                and cached is not None
                and cached[:2] == stat
                and _cacheable(cached[2])
            ):
                skipped.append((candidate.path, *stat, cached[2]))
                continue
            digest = previous.sha256 if previous is not None else None
            todo.append(Todo(candidate, language, resource_type, plan, digest))
        writer = IndexWriter(conn)
        self.vectorizers = self.usable(self.vectorizers, empty=not old)
        self.parsed = ParsedVectors(conn, self.vectorizers)
        with paused_gc():
            written = self.parse_files(writer, todo, old, skipped, kept, stats)
        self.parsed.settle()
        self.vectorized = self.parsed.added
        # Files gone from the repository, or skipped now, leave the index.
        gone = [o.id for path, o in old.items() if path not in kept and path not in written]
        if gone:
            self.removed.extend(writer.delete_files(gone))
            self.same_shape = False
        stats.files_removed = len(gone)
        stats.files_unchanged = len(kept)
        writer.replace_skipped(skipped)

    def usable(self, vectorizers: list[NodeVectorizer], empty: bool) -> list[NodeVectorizer]:
        """The vectorizers whose vectors the parse may store: where the index has no node
        yet, or had a vector for every node of the vectorizer's kinds after the last run (a
        content whose vector is missing may belong to a node not parsed now, whose vector
        the contributor's rule could pick: its ``contribute`` embeds those)."""
        if empty:
            return vectorizers
        done = set(self.meta())
        return [v for v in vectorizers if _vectors_key(v.model, v.kinds) in done]

    def parse_files(
        self,
        writer: IndexWriter,
        todo: list[Todo],
        old: dict[str, _Old],
        skipped: list[tuple[str, int, int, str]],
        kept: set[str],
        stats: IndexStats,
    ) -> set[str]:
        """Read, parse and write ``todo``; returns the paths written.

        Files are written in chunks. Tokens are counted by the worker processes, or, when
        parsing here, in a thread (tiktoken releases the GIL) while the next chunk is parsed.
        """
        written: set[str] = set()
        touched: list[tuple[int, int, str]] = []
        records: list[FileRecord] = []
        stale: list[int] = []
        pending: tuple[list[FileRecord], list[int], Future[None]] | None = None
        total = len(todo)
        self.progress("Indexing files", 0, total)
        with ThreadPoolExecutor(max_workers=1) as counter:
            for done, outcome in enumerate(self.outcomes(todo), 1):
                if isinstance(outcome, discovery.Skip):
                    item = todo[done - 1].candidate
                    self.read(item.path, item.mtime_ns)
                    skipped.append((item.path, item.size, item.mtime_ns, outcome.reason))
                elif isinstance(outcome, Unchanged):
                    self.read(outcome.path, outcome.mtime_ns)
                    touched.append((outcome.size, outcome.mtime_ns, outcome.path))
                    kept.add(outcome.path)
                    stats.bytes_read += outcome.size
                else:
                    previous = old.get(outcome.path)
                    if previous is not None:
                        stale.append(previous.id)
                    self.read(outcome.path, outcome.mtime_ns)
                    records.append(outcome)
                    written.add(outcome.path)
                    stats.bytes_read += outcome.size
                if len(records) >= _CHUNK_FILES or done == total:
                    future = counter.submit(self.count, records)
                    if pending is not None:
                        self.write(writer, *pending, stats)
                    pending = (records, stale, future)
                    records, stale = [], []
                if done % 50 == 0 or done == total:
                    self.progress("Indexing files", done, total)
            if pending is not None:
                self.write(writer, *pending, stats)
        writer.touch(touched)
        return written

    def read(self, path: str, mtime_ns: int) -> None:
        """Note a file read in this run; one whose mtime is not before the run's start is
        read again by the next run (see ``contextfuse.kb.freshness.RACY_KEY``)."""
        if freshness.trusted(mtime_ns, self.started_ns) != mtime_ns:
            self.racy.add(path)

    def count(self, records: list[FileRecord]) -> None:
        """Count the tokens of records that were parsed without counting."""
        for record in records:
            if record.token_counts is None:
                record.token_counts = count_renderings(self.tokenizer, record.drafts)

    def outcomes(self, todo: list[Todo]) -> Iterator[Outcome]:
        """The outcome of each file of ``todo``, in order; in worker processes when many."""
        context = _pool_context()
        workers = self.workers if self.workers is not None else (os.cpu_count() or 1)
        automatic = self.workers is None
        # Automatic workers only where they fork: spawned ones re-import the caller's script.
        if workers <= 1 or (
            automatic and (len(todo) < _PARALLEL_MIN_FILES or context.get_start_method() != "fork")
        ):
            yield from self.here(todo)
            return
        try:  # workers count tokens too, if the tokenizer can travel to them
            tokenizer: Tokenizer | None = pickle.loads(pickle.dumps(self.tokenizer))
        except Exception:
            tokenizer = None
        batches = iter([todo[i : i + _BATCH_FILES] for i in range(0, len(todo), _BATCH_FILES)])
        workers = min(workers, _MAX_WORKERS)
        # Forked workers inherit them; spawned ones get pickled copies, where there are any.
        forked = context.get_start_method() == "fork"
        vectorizers = self.vectorizers if forked else picklable(self.vectorizers)
        done = 0
        try:
            with ProcessPoolExecutor(
                workers,
                mp_context=context,
                initializer=worker_started,
                initargs=(os.getpid(), vectorizers),
            ) as pool:
                queue: deque[Future[list[Outcome]]] = deque()

                def submit() -> None:
                    batch = next(batches, None)
                    if batch is not None:
                        queue.append(
                            pool.submit(
                                process_batch,
                                self.root,
                                self.project,
                                batch,
                                self.max_file_size,
                                tokenizer,
                            )
                        )

                for _ in range(2 * workers):  # a bounded queue keeps memory flat
                    submit()
                while queue:
                    results = queue.popleft().result()
                    submit()
                    for outcome in results:
                        yield outcome
                        done += 1
        except BrokenProcessPool as exc:
            # E.g. a script without ``if __name__ == "__main__":`` that spawned workers re-run.
            self.notes.append(f"worker processes stopped ({exc}); the rest was parsed here")
        yield from self.here(todo[done:])

    def here(self, todo: list[Todo]) -> Iterator[Outcome]:
        """The outcome of each file of ``todo`` parsed in this process (tokens are counted
        by ``count``), with the vectors of the contributors' vectorizers, a batch at a time."""
        for start in range(0, len(todo), _BATCH_FILES):
            yield from process_files(
                self.root,
                self.project,
                todo[start : start + _BATCH_FILES],
                self.max_file_size,
                vectorizers=self.vectorizers,
            )

    def write(
        self,
        writer: IndexWriter,
        records: list[FileRecord],
        stale: list[int],
        counted: Future[None],
        stats: IndexStats,
    ) -> None:
        counted.result()
        # The old version of a changed file goes first: paths and URIs are unique.
        freed = writer.delete_files(stale) if stale else {}
        self.removed.extend(freed)
        before: dict[str, set[tuple[str, str]]] = {}
        for uri, (_, kind, path) in freed.items():
            before.setdefault(path, set()).add((uri, kind))
        for record in records:
            if before.get(record.path) != {(d.uri, d.kind) for d in record.drafts}:
                self.same_shape = False  # a new file, or symbols added, removed or retyped
            self.written.append(record.path)
        written = writer.insert(records, reuse={uri: found[0] for uri, found in freed.items()})
        self.parsed.write(
            [(writer.inserted[uri], row) for record in records for uri, row in record.vectors or ()]
        )
        stats.files_parsed += len(records)
        stats.nodes_written += written
        self.changed.extend(d.uri for record in records for d in record.drafts)

    # ---- after the commit --------------------------------------------------------------------

    def backends(self, git: bool) -> BackendSet:
        return BackendSet(
            nodes=SQLiteNodeStore(self.db, self.project),
            text=SQLiteTextBackend(self.db),
            vector=SQLiteVectorBackend(self.db, write_batch=_VECTOR_WRITE_BATCH),
            graph=SQLiteGraphBackend(self.db),
            temporal=SQLiteTemporalBackend(self.db, self.project) if git else None,
            plans=SQLitePlanStore(self.db, self.project, self.tokenizer),
            tokenizer=self.tokenizer,
        )

    def contribute(self, stats: IndexStats, contributors: Sequence[Any]) -> None:
        """Run each index contributor; a failure is reported by name and rolled back."""
        if not contributors:
            return
        removed = frozenset(self.removed) - frozenset(self.changed)
        complete: frozenset[str] = frozenset()
        if self.changed or removed:
            self._write_meta("DELETE FROM meta WHERE key LIKE ?", [(f"{_VECTORS_COMPLETE}%",)])
        else:
            complete = frozenset(k for k in self.meta() if k.startswith(_VECTORS_COMPLETE))
        session = IndexSession(
            project=self.project,
            root=self.root,
            backends=self.backends(stats.git),
            changed_uris=frozenset(self.changed),
            removed_uris=removed,
            db=self.db,
            progress=self.progress,
            complete=complete,
            vectorized=dict(self.vectorized),
        )
        vectors = session.backends.vector
        for contributor in contributors:
            name = str(getattr(contributor, "name", type(contributor).__name__))
            session.checked.clear()
            try:
                result = contributor.contribute(session)
                vectors.flush()
            except Exception as exc:  # a plugin's failure must not cost the user the index
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                # What it stored before it failed stays (a full disk loses those rows too).
                with contextlib.suppress(sqlite3.Error, OSError):
                    vectors.flush()
                stats.contributors[name] = f"failed: {type(exc).__name__}: {exc}"
                stats.notes.append(f"index contributor {name!r} failed: {exc}")
            else:
                details = ""
                if isinstance(result, Mapping) and result:  # e.g. {"embedded": 10}
                    details = " (" + ", ".join(f"{k} {v}" for k, v in result.items()) + ")"
                stats.contributors[name] = "ok" + details
                new = sorted(session.checked - complete)
                if new:
                    self._write_meta(
                        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, '1')",
                        [(key,) for key in new],
                    )

    def _write_meta(self, sql: str, rows: list[tuple[str]]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.executemany(sql, rows)
        self.conn.execute("COMMIT")

    def finish(self, stats: IndexStats) -> None:
        """Drop vectors no node uses any more, and fill in the totals of the stats."""
        conn = self.conn
        if self.removed:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "DELETE FROM vectors WHERE content_hash NOT IN (SELECT content_hash FROM nodes)"
            )
            generation.renew(conn)
            conn.execute("COMMIT")
        with self.db.snapshot():
            _totals(conn, stats)
        stats.notes[:0] = _notes(conn, stats.git)
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.OperationalError as exc:
            if not is_disk_full(exc):
                raise
            # The run is committed (in the write-ahead log, which readers use); copying it
            # into the index file needs room the disk lacks. A later run copies it.
            stats.notes.append(
                f"{full_disk(self.index_dir)} is full: the index was written to its "
                "write-ahead log and is used from there; free some space so that it can be "
                "moved into the index file"
            )


def _pool_context() -> multiprocessing.context.BaseContext:
    """How worker processes start.

    ``fork`` starts at once and never imports the caller's ``__main__``, but is safe only in a
    process with a single thread, and only where it is the platform's habit (Linux);
    elsewhere ``spawn``.
    """
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _cacheable(reason: str) -> bool:
    """Skip reasons worth remembering by size and mtime: found by reading the file, or an
    eviction (see ``contextfuse.kb.tiers``)."""
    return reason in ("binary", EVICTED) or reason.startswith("minified")


def _totals(conn: sqlite3.Connection, stats: IndexStats) -> None:
    stats.files, stats.bytes = conn.execute(
        "SELECT count(*), coalesce(sum(size), 0) FROM files"
    ).fetchone()
    secrets: Counter[str] = Counter()
    for (redactions,) in conn.execute("SELECT redactions FROM files WHERE redactions != '{}'"):
        secrets.update(json.loads(redactions))
        stats.files_redacted += 1
    stats.secrets_redacted = sum(secrets.values())
    stats.secret_kinds = dict(secrets)
    stats.nodes = conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
    stats.edges = conn.execute("SELECT count(*) FROM edges").fetchone()[0]
    stats.tokens = conn.execute(
        "SELECT coalesce(sum(r.token_count), 0) FROM nodes n JOIN renderings r "
        "ON r.node_id = n.id AND r.depth = 9 WHERE n.kind = 'file'"
    ).fetchone()[0]
    stats.languages = dict(
        conn.execute("SELECT language, count(*) FROM files GROUP BY 1 ORDER BY 2 DESC, 1")
    )
    stats.commits = conn.execute("SELECT count(*) FROM commits").fetchone()[0]
    rows = conn.execute("SELECT path, reason FROM skipped ORDER BY path").fetchall()
    stats.skipped_files = [(str(p), str(r)) for p, r in rows]
    stats.skipped = dict(Counter(_reason_group(r) for _, r in rows).most_common())


def _reason_group(reason: str) -> str:
    # ``secret file (.env)`` and ``secret file (*.pem)`` count as one reason.
    return reason.split(" (", 1)[0] if reason.startswith(("secret file", "unreadable")) else reason


def _notes(conn: sqlite3.Connection, git: bool) -> list[str]:
    notes: list[str] = []
    if not git:
        notes.append(
            "not a git repository: no history; .gitignore files were applied directly"
            if shutil.which("git")
            else "git is not installed: no history; .gitignore files were applied directly"
        )
    plain = Counter(
        language
        for language, plan in conn.execute("SELECT language, parser FROM files")
        if language in TREE_SITTER_LANGUAGES and not plan.startswith("treesitter")
    )
    for language, count in sorted(plain.items()):
        notes.append(
            f"{count} {language} file(s) indexed as plain text: {missing_reason(language)}"
        )
    noted = conn.execute("SELECT path, note FROM files WHERE note != '' ORDER BY path").fetchall()
    notes.extend(f"{path}: {note}" for path, note in noted[:_MAX_FILE_NOTES])
    if len(noted) > _MAX_FILE_NOTES:
        notes.append(f"... and {len(noted) - _MAX_FILE_NOTES} more file(s) with notes")
    return notes
