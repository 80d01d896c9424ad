"""Storage tiers of indexed files: hot, warm and cold, with a retention policy per tier.

A file is **hot** while agents read it: an assembly that delivers any fragment of a file
promotes the file to hot. A file not read for ``hot_days`` is demoted to **warm**, and after
``warm_days`` to **cold**; its access record is kept for ``retention_days`` after that, then
dropped (a file without a record is cold). A newly indexed file starts warm. Demotion runs
with each ``contextfuse index``; ``contextfuse index --stats`` shows the tiers.

The policy is stored with the index (each store keeps its own), so every indexer and server
of a store applies the same one. This module holds the policy, the protocol every store's
tier table implements, and the SQLite store's (new tables in the index file).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contextfuse.kb.store import Database

__all__ = [
    "TIERS",
    "SQLiteTierStore",
    "TierPolicy",
    "TierStore",
    "file_paths",
    "tier_store_of",
]

TIERS = ("hot", "warm", "cold")
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
        default=180.0, gt=0, description="A cold file's access record is kept this long."
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
        """Promote these files to hot: they were just read."""
        ...

    def apply(self, now: float | None = None) -> dict[str, int]:
        """Admit new files as warm, demote idle ones, drop expired records.

        Returns how many files moved: ``{"admitted", "to_warm", "to_cold", "dropped"}``.
        """
        ...

    def counts(self) -> dict[str, int]:
        """Indexed files per tier, ``{"hot": n, "warm": n, "cold": n}``."""
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
    """Tiers in the index file (tables ``tiers`` and ``tier_policy``, created on first use)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _write(self, statements: list[tuple[str, Any]], wait_ms: int | None = None) -> list[int]:
        """Run statements in one short transaction; returns each one's row count.

        ``wait_ms`` bounds the wait for the write lock (default: the connection's).
        """
        conn = self._db.connection()
        if not self._ready(conn):
            conn.executescript(_SCHEMA)
        counts: list[int] = []
        previous = conn.execute("PRAGMA busy_timeout").fetchone()[0]
        try:
            if wait_ms is not None:
                conn.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
            conn.execute("BEGIN IMMEDIATE")
            for sql, params in statements:
                many = isinstance(params, list)
                cursor = conn.executemany(sql, params) if many else conn.execute(sql, params)
                counts.append(cursor.rowcount)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(previous)}")
        return counts

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
        self._write(
            [
                (
                    "INSERT OR REPLACE INTO tier_policy (key, value) VALUES ('policy', ?)",
                    (policy.model_dump_json(),),
                )
            ]
        )

    def touch(self, paths: Iterable[str], now: float | None = None) -> None:
        """Promote these files to hot: they were just read."""
        stamp = int(now if now is not None else time.time())
        rows = [(path, stamp) for path in sorted(set(paths))]
        if not rows:
            return
        try:
            self._write(
                [
                    (
                        "INSERT INTO tiers (path, tier, last_access, accesses)"
                        " VALUES (?, 'hot', ?, 1) ON CONFLICT (path) DO UPDATE SET tier = 'hot',"
                        " last_access = excluded.last_access, accesses = accesses + 1",
                        rows,
                    )
                ],
                wait_ms=_TOUCH_WAIT_MS,
            )
        except sqlite3.OperationalError:  # an index run holds the lock: this record is skipped
            return

    def apply(self, now: float | None = None) -> dict[str, int]:
        """Admit new files as warm, demote idle ones, drop expired records."""
        policy = self.policy()
        stamp = int(now if now is not None else time.time())
        admitted, to_warm, to_cold, dropped, _ = self._write(
            [
                (
                    "INSERT INTO tiers (path, tier, last_access, accesses)"
                    " SELECT path, 'warm', ?, 0 FROM files WHERE path NOT IN"
                    " (SELECT path FROM tiers)",
                    (stamp,),
                ),
                (
                    "UPDATE tiers SET tier = 'warm' WHERE tier = 'hot' AND last_access < ?",
                    (stamp - policy.hot_days * _DAY,),
                ),
                (
                    "UPDATE tiers SET tier = 'cold' WHERE tier != 'cold' AND last_access < ?",
                    (stamp - policy.warm_days * _DAY,),
                ),
                (
                    "DELETE FROM tiers WHERE tier = 'cold' AND last_access < ?",
                    (stamp - policy.retention_days * _DAY,),
                ),
                ("DELETE FROM tiers WHERE path NOT IN (SELECT path FROM files)", ()),
            ]
        )
        return {"admitted": admitted, "to_warm": to_warm, "to_cold": to_cold, "dropped": dropped}

    def counts(self) -> dict[str, int]:
        """Indexed files per tier (a file without a record is cold)."""
        conn = self._db.connection()
        if not self._ready(conn):
            total = conn.execute("SELECT count(*) FROM files").fetchone()[0]
            return {"hot": 0, "warm": 0, "cold": int(total)}
        found = dict(
            conn.execute(
                "SELECT coalesce(t.tier, 'cold'), count(*) FROM files f"
                " LEFT JOIN tiers t ON t.path = f.path GROUP BY 1"
            ).fetchall()
        )
        return {tier: int(found.get(tier, 0)) for tier in TIERS}
