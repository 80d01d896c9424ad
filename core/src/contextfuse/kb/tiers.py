"""Storage tiers of indexed files: hot, warm and cold, with a retention policy per tier.

A file is **hot** while agents read it: an assembly that delivers any fragment of a file,
or a read of the whole file (an MCP resource), promotes the file to hot. A file not read
for ``hot_days`` is demoted to **warm**, and after ``warm_days`` to **cold**. A newly
indexed file starts warm. Demotion runs with each ``contextfuse index``; ``contextfuse
index --stats`` shows the tiers.

The tiers move content:

- hot and warm files are stored whole;
- a cold file is **compacted**: its outline, signatures, summaries, search rows and graph
  edges stay as they are, and its full text (from which depth-9 renderings are sliced) is
  kept compressed (``contextfuse.kb.compressed``), decompressed on each read of it;
- a cold file idle for ``retention_days`` is **evicted**: it leaves the index (nodes,
  renderings, search rows, edges) and is remembered among the skipped files by size and
  modification time, so refreshes leave it out while it is unchanged.

Promotion brings content back: a compacted file read by an assembly is stored whole again,
and an evicted file that is touched (or changed on disk) is read again from the source file
by the next index run.

The policy is stored with the index (each store keeps its own), so every indexer and server
of a store applies the same one; the ``[tiers]`` section of ``config.toml`` and the
``contextfuse index`` options change it. This module holds the policy, the protocol every
store's tier table implements, and the SQLite store's (new tables in the index file).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contextfuse.kb.compressed import compress_text, stored_text
from contextfuse.kb.nodes import chunked
from contextfuse.kb.store import Database

__all__ = [
    "EVICTED",
    "TIERS",
    "SQLiteTierStore",
    "TierPolicy",
    "TierStore",
    "file_paths",
    "tier_store_of",
]

TIERS = ("hot", "warm", "cold")
#: The skip reason of an evicted file (the indexers leave it out while it is unchanged).
EVICTED = "evicted (idle past the retention period)"
_DAY = 86_400
#: Access records are best-effort: a touch waits this long for an index run's write lock,
#: then gives up rather than stall an assembly.
_TOUCH_WAIT_MS = 200
_SCHEMA = """
CREATE TABLE IF NOT EXISTS tiers (
    path TEXT PRIMARY KEY,
    tier TEXT NOT NULL,
    last_access INTEGER NOT NULL,
    accesses INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tier_policy (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class TierPolicy(BaseModel):
    """How long a file stays in each tier without being read (days; fractions allowed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hot_days: float = Field(default=7.0, gt=0, description="Hot until idle this long.")
    warm_days: float = Field(default=30.0, gt=0, description="Warm until idle this long.")
    retention_days: float = Field(
        default=180.0, gt=0, description="Evicted from the index when idle this long."
    )

    @model_validator(mode="after")
    def _ordered(self) -> TierPolicy:
        if not self.hot_days <= self.warm_days <= self.retention_days:
            raise ValueError(
                "tier days must grow: hot_days <= warm_days <= retention_days "
                f"(got {self.hot_days}, {self.warm_days}, {self.retention_days})"
            )
        return self


@runtime_checkable
class TierStore(Protocol):
    """The tier table of one store (one project)."""

    def policy(self) -> TierPolicy:
        """The stored policy (the default one if none was set)."""
        ...

    def set_policy(self, policy: TierPolicy) -> None:
        """Store the policy every indexer and server of this store applies."""
        ...

    def touch(self, paths: Iterable[str], now: float | None = None) -> None:
        """Promote these files to hot: they were just read.

        A compacted file is stored whole again; an evicted one is read again from its source
        by the next index run.
        """
        ...

    def apply(self, now: float | None = None) -> dict[str, int]:
        """Admit new files as warm, demote idle ones, compact cold ones, evict expired ones.

        Returns how many files moved: ``{"admitted", "to_warm", "to_cold", "compacted",
        "restored", "evicted"}`` (``restored``: compacted files no longer cold, stored whole).
        """
        ...

    def counts(self) -> dict[str, int]:
        """Files per tier, ``{"hot": n, "warm": n, "cold": n, "evicted": n}``."""
        ...

    def storage(self) -> dict[str, int]:
        """The compacted files: ``{"files", "source_bytes", "stored_bytes"}``."""
        ...

    def tiers_of(self, paths: Iterable[str]) -> dict[str, tuple[str, float]]:
        """Each of these indexed files' tier and the time its content last changed.

        ``{path: (tier, seconds since the epoch)}``; a file without a tier record (never
        admitted by an index run) is ``warm``, the tier a new file starts in; files not
        indexed are left out.
        """
        ...


def file_paths(uris: Iterable[str], project: str) -> set[str]:
    """Repository paths of the files these node URIs belong to (other projects left out)."""
    prefix = f"project://{project}/"
    return {u.split("#", 1)[0][len(prefix) :] for u in uris if u.startswith(prefix)}


def tier_store_of(backends: Any) -> TierStore | None:
    """The tier table of a backend set's store, if the store has one."""
    nodes = getattr(backends, "nodes", None)
    own = getattr(nodes, "tiers", None)
    if own is not None:
        return own  # type: ignore[no-any-return]
    database = getattr(nodes, "database", None)
    return SQLiteTierStore(database) if isinstance(database, Database) else None


class SQLiteTierStore:
    """Tiers in the index file (tables ``tiers`` and ``tier_policy``, created on first use).

    A compacted file's ``files.content`` holds its compressed text (a BLOB); an evicted file
    is a row of ``skipped`` with the reason :data:`EVICTED`.
    """

    def __init__(self, db: Database) -> None:
        self._db = db

    @contextmanager
    def _transaction(self, wait_ms: int | None = None) -> Iterator[sqlite3.Connection]:
        """A short write transaction, the tier tables present.

        ``wait_ms`` bounds the wait for the write lock (default: the connection's).
        """
        conn = self._db.connection()
        if not self._ready(conn):
            conn.executescript(_SCHEMA)
        previous = conn.execute("PRAGMA busy_timeout").fetchone()[0]
        try:
            if wait_ms is not None:
                conn.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
            conn.execute("BEGIN IMMEDIATE")
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(previous)}")

    @staticmethod
    def _ready(conn: sqlite3.Connection) -> bool:
        return bool(
            conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tier_policy'"
            ).fetchone()
        )

    def policy(self) -> TierPolicy:
        """The stored policy (the default one if none was set)."""
        conn = self._db.connection()
        if not self._ready(conn):
            return TierPolicy()
        row = conn.execute("SELECT value FROM tier_policy WHERE key = 'policy'").fetchone()
        return TierPolicy.model_validate(json.loads(row[0])) if row else TierPolicy()

    def set_policy(self, policy: TierPolicy) -> None:
        """Store the policy every indexer and server of this index applies."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO tier_policy (key, value) VALUES ('policy', ?)",
                (policy.model_dump_json(),),
            )

    def touch(self, paths: Iterable[str], now: float | None = None) -> None:
        """Promote these files to hot: they were just read (see :class:`TierStore`)."""
        stamp = int(now if now is not None else time.time())
        wanted = sorted(set(paths))
        if not wanted:
            return
        try:
            with self._transaction(wait_ms=_TOUCH_WAIT_MS) as conn:
                conn.executemany(
                    "INSERT INTO tiers (path, tier, last_access, accesses)"
                    " VALUES (?, 'hot', ?, 1) ON CONFLICT (path) DO UPDATE SET tier = 'hot',"
                    " last_access = excluded.last_access, accesses = accesses + 1",
                    [(path, stamp) for path in wanted],
                )
                _restore(conn, wanted)
                conn.executemany(
                    "DELETE FROM skipped WHERE path = ? AND reason = ?",
                    [(path, EVICTED) for path in wanted],
                )
        except sqlite3.OperationalError:  # an index run holds the lock: this record is skipped
            return

    def apply(self, now: float | None = None) -> dict[str, int]:
        """Admit new files as warm, demote idle ones, compact cold ones, evict expired ones."""
        policy = self.policy()
        stamp = int(now if now is not None else time.time())
        with self._transaction() as conn:
            admitted = conn.execute(
                "INSERT INTO tiers (path, tier, last_access, accesses)"
                " SELECT path, 'warm', ?, 0 FROM files WHERE path NOT IN"
                " (SELECT path FROM tiers)",
                (stamp,),
            ).rowcount
            to_warm = conn.execute(
                "UPDATE tiers SET tier = 'warm' WHERE tier = 'hot' AND last_access < ?",
                (stamp - policy.hot_days * _DAY,),
            ).rowcount
            to_cold = conn.execute(
                "UPDATE tiers SET tier = 'cold' WHERE tier != 'cold' AND last_access < ?",
                (stamp - policy.warm_days * _DAY,),
            ).rowcount
            expired = [
                str(row[0])
                for row in conn.execute(
                    "SELECT path FROM tiers WHERE tier = 'cold' AND last_access < ?",
                    (stamp - policy.retention_days * _DAY,),
                )
            ]
            evicted = _evict(conn, expired)
            restored = _restore(
                conn,
                [
                    str(row[0])
                    for row in conn.execute(
                        "SELECT f.path FROM files f JOIN tiers t ON t.path = f.path"
                        " WHERE t.tier != 'cold' AND typeof(f.content) = 'blob'"
                    )
                ],
            )
            compacted = _compact(conn)
            conn.execute("DELETE FROM tiers WHERE path NOT IN (SELECT path FROM files)")
        return {
            "admitted": admitted,
            "to_warm": to_warm,
            "to_cold": to_cold,
            "compacted": compacted,
            "restored": restored,
            "evicted": evicted,
        }

    def counts(self) -> dict[str, int]:
        """Files per tier (an indexed file without a record is cold), and evicted files."""
        conn = self._db.connection()
        evicted = conn.execute("SELECT count(*) FROM skipped WHERE reason = ?", (EVICTED,))
        found = {"evicted": int(evicted.fetchone()[0])}
        if not self._ready(conn):
            total = conn.execute("SELECT count(*) FROM files").fetchone()[0]
            return {"hot": 0, "warm": 0, "cold": int(total), **found}
        found.update(
            conn.execute(
                "SELECT coalesce(t.tier, 'cold'), count(*) FROM files f"
                " LEFT JOIN tiers t ON t.path = f.path GROUP BY 1"
            ).fetchall()
        )
        return {tier: int(found.get(tier, 0)) for tier in (*TIERS, "evicted")}

    def storage(self) -> dict[str, int]:
        """The compacted files: how many, their source size and their stored size, in bytes."""
        files, source, stored = (
            self._db.connection()
            .execute(
                "SELECT count(*), coalesce(sum(size), 0), coalesce(sum(length(content)), 0)"
                " FROM files WHERE typeof(content) = 'blob'"
            )
            .fetchone()
        )
        return {"files": int(files), "source_bytes": int(source), "stored_bytes": int(stored)}

    def tiers_of(self, paths: Iterable[str]) -> dict[str, tuple[str, float]]:
        """Each of these indexed files' tier and modification time (see :class:`TierStore`)."""
        wanted = sorted(set(paths))
        found: dict[str, tuple[str, float]] = {}
        with self._db.snapshot() as conn:
            ready = self._ready(conn)
            for chunk in chunked(wanted):
                marks = ",".join("?" * len(chunk))
                sql = (
                    "SELECT f.path, coalesce(t.tier, 'warm'), f.mtime_ns FROM files f"
                    " LEFT JOIN tiers t ON t.path = f.path"
                    if ready
                    else "SELECT f.path, 'warm', f.mtime_ns FROM files f"
                )
                for path, tier, mtime_ns in conn.execute(f"{sql} WHERE f.path IN ({marks})", chunk):
                    found[str(path)] = (str(tier), int(mtime_ns) / 1e9)
        return found


def _compact(conn: sqlite3.Connection) -> int:
    """Compress the text of every cold file still stored whole; returns how many."""
    rows = conn.execute(
        "SELECT f.id, f.content FROM files f JOIN tiers t ON t.path = f.path"
        " WHERE t.tier = 'cold' AND typeof(f.content) = 'text'"
    ).fetchall()
    conn.executemany(
        "UPDATE files SET content = ? WHERE id = ?",
        [(compress_text(text), file_id) for file_id, text in rows],
    )
    return len(rows)


def _restore(conn: sqlite3.Connection, paths: Iterable[str]) -> int:
    """Store these files' text whole again where it was compacted; returns how many."""
    restored = 0
    for chunk in chunked(list(paths)):  # one query for an assembly's files, not one each
        marks = ",".join("?" * len(chunk))
        for file_id, content in conn.execute(
            f"SELECT id, content FROM files WHERE path IN ({marks}) AND typeof(content) = 'blob'",
            chunk,
        ).fetchall():
            conn.execute(
                "UPDATE files SET content = ? WHERE id = ?", (stored_text(content), file_id)
            )
            restored += 1
    return restored


def _evict(conn: sqlite3.Connection, paths: Sequence[str]) -> int:
    """Take these files out of the index, remembered as skipped; returns how many."""
    rows = []
    for chunk in chunked(list(paths)):
        marks = ",".join("?" * len(chunk))
        rows += conn.execute(
            f"SELECT id, path, size, mtime_ns FROM files WHERE path IN ({marks})", chunk
        ).fetchall()
    if not rows:
        return 0
    from contextfuse.kb.writer import IndexWriter  # here: assemblies only promote files

    writer = IndexWriter(conn)
    writer.delete_files([row[0] for row in rows])
    writer.rebuild_edges()
    writer.rebuild_vocabulary()
    conn.execute("DELETE FROM vectors WHERE content_hash NOT IN (SELECT content_hash FROM nodes)")
    conn.executemany(
        "INSERT OR REPLACE INTO skipped (path, size, mtime_ns, reason) VALUES (?, ?, ?, ?)",
        [(path, size, mtime_ns, EVICTED) for _, path, size, mtime_ns in rows],
    )
    conn.executemany("DELETE FROM tiers WHERE path = ?", [(row[1],) for row in rows])
    return len(rows)
