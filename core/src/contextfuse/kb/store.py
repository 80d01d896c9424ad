"""The index file: one SQLite database per project, its schema and its safety rules.

* WAL journal: readers never block the writer and always see a committed snapshot.
* Every index run writes in one transaction, so a run killed at any moment (``kill -9``)
  leaves the previous index as it was; SQLite rolls the torn transaction back on next open.
* ``application_id`` marks the file as a contextfuse index and ``user_version`` is the schema
  version; anything else (a foreign database, a corrupt file, an older schema) is reported
  as :class:`~contextfuse.errors.KnowledgeBaseError` naming the file and the way out.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contextfuse.deadline import expired
from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb import generation
from contextfuse.kb.diskspace import disk_full_error, is_disk_full

__all__ = [
    "APPLICATION_ID",
    "DB_NAME",
    "KEPT_PREFIX",
    "SCHEMA_VERSION",
    "Database",
    "create_schema",
    "remove_index",
    "reset_schema",
]

APPLICATION_ID = 0x43465553  # "CFUS"
#: Bump on any change to the tables or to what full-text search indexes (``terms``, ``render``):
#: deletions from the contentless FTS table replay the indexed text. Version 3: history and
#: files redacted more thoroughly (an index of version 2 may hold secrets: it is rebuilt).
#: Version 4: compact vectors (int8 codes and float16, ``kb/vector.py``).
#: Version 5: files decoded by their declared encoding or byte-order mark (``kb/decode``);
#: an older index holds them garbled, or skipped as binary with that reason cached.
SCHEMA_VERSION = 5
DB_NAME = "index.db"
#: Tables whose name starts with this belong to the plan store, which has its own schema
#: version (``kb/plans.py``); a rebuild of the index keeps them.
KEPT_PREFIX = "plan_"
_BUSY_TIMEOUT_MS = 30_000
#: SQLite virtual-machine steps between two checks of whether the index was closed or the
#: reading thread's deadline (``contextfuse.deadline``) has passed.
_PROGRESS_STEPS = 10_000

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    language TEXT NOT NULL,
    parser TEXT NOT NULL,
    content TEXT NOT NULL,
    facts TEXT NOT NULL,
    redactions TEXT NOT NULL DEFAULT '{}',
    note TEXT NOT NULL DEFAULT ''
);
CREATE TABLE skipped (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    reason TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE nodes (
    id INTEGER PRIMARY KEY,
    uri TEXT NOT NULL UNIQUE,
    file_id INTEGER NOT NULL REFERENCES files(id),
    path TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    qualname TEXT NOT NULL,
    parent_id INTEGER,
    language TEXT NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    resource_type TEXT NOT NULL,
    summary TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
CREATE INDEX nodes_file ON nodes(file_id);
CREATE INDEX nodes_parent ON nodes(parent_id);
CREATE INDEX nodes_name ON nodes(name);
CREATE INDEX nodes_qualname ON nodes(qualname);
CREATE INDEX nodes_hash ON nodes(content_hash);
-- NULL content: the node's lines of files.content, sliced on read (depth 9, and any
-- depth whose text is the same).
CREATE TABLE renderings (
    node_id INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    content TEXT,
    token_count INTEGER NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    PRIMARY KEY (node_id, depth)
) WITHOUT ROWID;
CREATE TABLE edges (
    source INTEGER NOT NULL,
    target INTEGER NOT NULL,
    kind TEXT NOT NULL,
    weight REAL NOT NULL
);
CREATE INDEX edges_source ON edges(source);
CREATE INDEX edges_target ON edges(target);
-- Contentless (the text lives in files.content), rowid = nodes.id.
CREATE VIRTUAL TABLE fts USING fts5(
    name, path, body, parts,
    content='', tokenize="unicode61 tokenchars '_'"
);
CREATE VIRTUAL TABLE fts_vocab USING fts5vocab(fts, 'row');
-- Document frequency of every term, copied from fts_vocab after each change: fts_vocab
-- counts by reading posting lists (0.1 ms a term), too slow for a 300-term query.
CREATE TABLE vocabulary (term TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE commits (
    id INTEGER PRIMARY KEY,
    sha TEXT NOT NULL UNIQUE,
    timestamp INTEGER NOT NULL,
    author TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX commits_time ON commits(timestamp);
-- added, removed: lines. symbols: the names of the hunk headers, space-separated.
CREATE TABLE commit_files (
    commit_id INTEGER NOT NULL,
    path TEXT NOT NULL,
    added INTEGER NOT NULL DEFAULT 0,
    removed INTEGER NOT NULL DEFAULT 0,
    symbols TEXT NOT NULL DEFAULT ''
);
CREATE INDEX commit_files_path ON commit_files(path);
CREATE INDEX commit_files_commit ON commit_files(commit_id);
-- Contentless, rowid = commits.id: message, paths touched, identifiers of the changed lines.
CREATE VIRTUAL TABLE commit_fts USING fts5(
    message, paths, diff,
    content='', tokenize="unicode61 tokenchars '_'"
);
CREATE VIRTUAL TABLE commit_vocab USING fts5vocab(commit_fts, 'row');
CREATE TABLE renames (
    commit_id INTEGER NOT NULL,
    old TEXT NOT NULL,
    new TEXT NOT NULL
);
CREATE INDEX renames_old ON renames(old);
CREATE TABLE cochange (
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (a, b)
) WITHOUT ROWID;
CREATE INDEX cochange_b ON cochange(b);
-- Compact (kb/vector.py): codes, int8 times scale, are what a search scans, vector (float16)
-- what it rescores its best candidates with: a row stays well inside a page (no overflow).
CREATE TABLE vectors (
    model TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    scale REAL NOT NULL,
    codes BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, content_hash)
) WITHOUT ROWID;
"""


class Database:
    """The index file, with one connection per thread (strategies run in threads).

    Reads go through :meth:`read` so that a corrupt file surfaces as KnowledgeBaseError.

    A connection belongs to the thread that opened it. :meth:`close` closes the calling
    thread's connection at once; another thread's is interrupted (a query it runs stops with
    an error) and closed when that thread lets go of it, never under its feet: closing a
    SQLite connection while another thread steps a statement on it crashes the interpreter,
    and a strategy that outlived its deadline may still be reading when a refresh closes
    the index.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._connections: list[tuple[threading.Thread, sqlite3.Connection]] = []  # (owner, conn)
        self._lock = threading.Lock()
        self._closed = False
        # Checked by every connection's progress handler: a statement that starts (or runs)
        # after close() stops within a few thousand SQLite instructions.
        self._closing = threading.Event()

    # ---- connections -----------------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use).

        :raises KnowledgeBaseError: the index is closed, or this thread's deadline passed
            (a strategy past its time stops reading here).
        """
        if expired():
            raise _time_is_up(self.path)
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise KnowledgeBaseError(f"the index {self.path} is closed")
            conn = _connect(self.path)
            conn.set_progress_handler(self._should_stop, _PROGRESS_STEPS)
            self._local.conn = conn
            with self._lock:
                # An ended thread's connection is let go (closed with its last reference), or
                # a long-lived process with a thread per request would keep every one open.
                self._connections = [(o, c) for o, c in self._connections if o.is_alive()]
                self._connections.append((threading.current_thread(), conn))
        return conn

    def close(self) -> None:
        """Close this thread's connection; stop and release the other threads' ones.

        Another thread's connection is interrupted (``sqlite3_interrupt`` is safe across
        threads) and this object drops its references: the connection is closed when its
        thread is done with it (the last reference goes), not while it runs a statement.
        """
        me = threading.current_thread()
        self._closing.set()
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
            local, self._local = self._local, threading.local()
        for owner, conn in connections:
            if owner is me:
                conn.close()
            else:
                conn.interrupt()
        # Idle threads' connections go with their thread-local slot, here and now.
        del local, connections

    def _should_stop(self) -> bool:
        # SQLite calls this every _PROGRESS_STEPS steps of a statement, in the thread that
        # runs it: true interrupts the statement.
        return self._closing.is_set() or expired()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Run a query and return all rows."""
        try:
            return self.connection().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self.error(exc) from exc

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees the same committed state."""
        conn = self.connection()
        if conn.in_transaction:  # already inside a snapshot (or a write) of this thread
            yield conn
            return
        try:
            conn.execute("BEGIN")
            setattr(conn, generation.SEEN_ATTRIBUTE, generation.Unseen.NOT_READ)
            try:
                yield conn
            finally:
                setattr(conn, generation.SEEN_ATTRIBUTE, generation.Unseen.OUTSIDE_SNAPSHOT)
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self.error(exc) from exc

    def data_version(self) -> int:
        """Changes when another connection commits (used to refresh caches)."""
        return int(self.read("PRAGMA data_version")[0][0])

    def error(self, exc: BaseException) -> KnowledgeBaseError:
        """A KnowledgeBaseError naming the file, the cause and the way out."""
        if self._closed:  # interrupted by close(), or a statement on a closed connection
            return KnowledgeBaseError(f"the index {self.path} was closed while it was read")
        if expired():  # interrupted by the progress handler: this thread's time is up
            return _time_is_up(self.path)
        if is_disk_full(exc):
            return disk_full_error(self.path.parent)
        return KnowledgeBaseError(
            f"the index {self.path} cannot be read ({exc}); "
            "rebuild it with `contextfuse index --rebuild`"
        )

    # ---- schema ----------------------------------------------------------------------------

    def check(self, *, create: bool) -> str:
        """Verify (or with ``create``, initialise) the schema.

        Returns ``"ok"``, ``"created"`` or ``"outdated"`` (an older or newer schema of ours);
        raises KnowledgeBaseError for a foreign or corrupt file.
        """
        conn = self.connection()
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise _unusable(self.path, exc) from exc
        if app_id == 0 and tables == 0:  # a new file, or one killed before its first commit
            if not create:
                raise KnowledgeBaseError(
                    f"{self.path} holds no index yet; build it with `contextfuse index`"
                )
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    create_schema(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:  # SQLite may have rolled back already
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise self.error(exc) from exc
            return "created"
        if app_id != APPLICATION_ID:
            raise KnowledgeBaseError(
                f"{self.path} is not a contextfuse index (a foreign SQLite database); "
                "move it away or replace it with `contextfuse index --rebuild`"
            )
        return "ok" if version == SCHEMA_VERSION else "outdated"


def _time_is_up(path: Path) -> KnowledgeBaseError:
    return KnowledgeBaseError(
        f"stopped reading the index {path}: the time allowed for this work ran out"
    )


def create_schema(conn: sqlite3.Connection) -> None:
    """Create every table inside the caller's transaction (DDL is transactional in SQLite)."""
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def reset_schema(conn: sqlite3.Connection) -> None:
    """Drop every derived table and create the current schema, in the caller's transaction.

    Used for ``--rebuild`` and for an index of an older schema: readers keep seeing the
    old index until the rebuild commits. The plan store's tables (``KEPT_PREFIX``) hold
    what users wrote, not what the repository holds, so they are kept.
    """
    # The vocabulary reads ``fts``, and dropping an FTS table drops its shadow tables.
    conn.execute("DROP TABLE IF EXISTS fts_vocab")
    conn.execute("DROP TABLE IF EXISTS fts")
    conn.execute("DROP TABLE IF EXISTS commit_vocab")
    conn.execute("DROP TABLE IF EXISTS commit_fts")
    tables = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    for (name,) in tables:
        if not name.startswith(KEPT_PREFIX):
            conn.execute(f'DROP TABLE IF EXISTS "{name}"')
    create_schema(conn)


class _Connection(sqlite3.Connection):
    """A connection that closes itself when its last reference goes.

    :meth:`Database.close` drops other threads' connections instead of closing them under a
    running statement (a cursor holds its connection): the last reference is the end of their
    use, where they are closed rather than left unclosed to the finalizer (Python 3.13 warns).
    """

    #: The generation the current snapshot sees, once read (``kb/generation.py``).
    seen_generation: str | generation.Unseen | None = generation.Unseen.OUTSIDE_SNAPSHOT

    def __del__(self) -> None:
        self.close()


def _connect(path: Path) -> sqlite3.Connection:
    # Autocommit mode: transactions are explicit (BEGIN ... COMMIT) where they matter.
    conn = sqlite3.connect(
        path,
        timeout=_BUSY_TIMEOUT_MS / 1000,
        isolation_level=None,
        check_same_thread=False,
        factory=_Connection,
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise sqlite3.DatabaseError(f"cannot use WAL journal mode (got {mode})")
        conn.execute("PRAGMA synchronous = NORMAL")
        # Deleted rows and freed pages are overwritten with zeros (whatever the SQLite build's
        # default): text that leaves the index, a secret's included, leaves the file too.
        conn.execute("PRAGMA secure_delete = ON")
        # After a checkpoint, a big run's WAL shrinks back to this size (bytes).
        conn.execute("PRAGMA journal_size_limit = 67108864")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise _unusable(path, exc) from exc
    return conn


def _unusable(path: Path, exc: sqlite3.Error) -> KnowledgeBaseError:
    """The error of an index file that cannot be opened: no room, or not an index of ours."""
    if is_disk_full(exc):
        return disk_full_error(path.parent)
    return KnowledgeBaseError(
        f"{path} is not a contextfuse index or is corrupt ({exc}); "
        "rebuild it with `contextfuse index --rebuild`"
    )


def remove_index(path: Path) -> None:
    """Delete an index file and its WAL and shared-memory files (``--rebuild`` of a bad file)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        target = Path(f"{path}{suffix}")
        if target.exists():
            os.remove(target)
