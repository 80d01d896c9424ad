"""Storage tiers of one project's files in PostgreSQL (see ``contextfuse.kb.tiers``).

The same tiers as the SQLite store's: a compacted (cold) file's text is compressed into
``cf_files.cold`` and its ``content`` emptied; an evicted file leaves the index and is a row
of ``cf_skipped`` with the reason ``EVICTED``. Demotion, compaction and eviction run under
the project's index lock, so they never interleave with an index run of the project.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from psycopg.types.json import Jsonb

from contextfuse.kb.compressed import compress_text, stored_text
from contextfuse.kb.tiers import EVICTED, TIERS, TierPolicy
from contextfuse_postgres.connection import translated
from contextfuse_postgres.indexer import (
    delete_files,
    project_lock_key,
    rebuild_edges,
    rebuild_vocabulary,
)
from contextfuse_postgres.nodes import Reader

__all__ = ["PostgresTierStore"]

_DAY = 86_400
#: A touch waits this long for locks, then gives up: access records are best-effort.
_TOUCH_WAIT = "200ms"


class PostgresTierStore:
    """The tier table of one project (``cf_tiers``, policy in ``cf_tier_policy``)."""

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def policy(self) -> TierPolicy:
        """The stored policy (the default one if none was set)."""
        rows = self._reader.read(
            "SELECT policy FROM cf_tier_policy WHERE project = %s", (self._reader.project,)
        )
        return TierPolicy.model_validate(rows[0][0]) if rows else TierPolicy()

    def set_policy(self, policy: TierPolicy) -> None:
        """Store the policy every indexer and server of this project applies."""
        with translated(self._reader.url), self._reader.pool.connection() as conn:
            conn.execute(
                "INSERT INTO cf_tier_policy (project, policy) VALUES (%s, %s)"
                " ON CONFLICT (project) DO UPDATE SET policy = excluded.policy",
                (self._reader.project, Jsonb(policy.model_dump())),
            )

    def touch(self, paths: Iterable[str], now: float | None = None) -> None:
        """Promote these files to hot: they were just read (see ``TierStore``)."""
        import psycopg

        stamp = int(now if now is not None else time.time())
        wanted = sorted(set(paths))
        if not wanted:
            return
        project = self._reader.project
        try:
            with self._reader.pool.connection() as conn:
                conn.execute(f"SET LOCAL lock_timeout = '{_TOUCH_WAIT}'")
                conn.execute(
                    "INSERT INTO cf_tiers (project, path, tier, last_access, accesses)"
                    " SELECT %s, path, 'hot', %s, 1 FROM unnest(%s::text[]) AS path"
                    " ON CONFLICT (project, path) DO UPDATE SET tier = 'hot',"
                    " last_access = excluded.last_access, accesses = cf_tiers.accesses + 1",
                    (project, stamp, wanted),
                )
                _restore(conn, project, wanted)
                conn.execute(
                    "DELETE FROM cf_skipped WHERE project = %s AND path = ANY(%s) AND reason = %s",
                    (project, wanted, EVICTED),
                )
        except psycopg.errors.LockNotAvailable:  # an index run holds the rows: skip this record
            return

    def apply(self, now: float | None = None) -> dict[str, int]:
        """Admit new files as warm, demote idle ones, compact cold ones, evict expired ones."""
        policy = self.policy()
        stamp = int(now if now is not None else time.time())
        project = self._reader.project
        with translated(self._reader.url), self._reader.pool.connection() as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (project_lock_key(project),),
            )
            admitted = conn.execute(
                "INSERT INTO cf_tiers (project, path, tier, last_access, accesses)"
                " SELECT project, path, 'warm', %s, 0 FROM cf_files WHERE project = %s"
                " ON CONFLICT (project, path) DO NOTHING",
                (stamp, project),
            ).rowcount
            to_warm = conn.execute(
                "UPDATE cf_tiers SET tier = 'warm' WHERE project = %s AND tier = 'hot'"
                " AND last_access < %s",
                (project, stamp - policy.hot_days * _DAY),
            ).rowcount
            to_cold = conn.execute(
                "UPDATE cf_tiers SET tier = 'cold' WHERE project = %s AND tier != 'cold'"
                " AND last_access < %s",
                (project, stamp - policy.warm_days * _DAY),
            ).rowcount
            expired = [
                str(row[0])
                for row in conn.execute(
                    "SELECT path FROM cf_tiers WHERE project = %s AND tier = 'cold'"
                    " AND last_access < %s",
                    (project, stamp - policy.retention_days * _DAY),
                )
            ]
            evicted = _evict(conn, project, expired)
            warm_again = [
                str(row[0])
                for row in conn.execute(
                    "SELECT f.path FROM cf_files f JOIN cf_tiers t ON t.project = f.project"
                    " AND t.path = f.path WHERE f.project = %s AND t.tier != 'cold'"
                    " AND f.cold IS NOT NULL",
                    (project,),
                )
            ]
            restored = _restore(conn, project, warm_again)
            compacted = _compact(conn, project)
            conn.execute(
                "DELETE FROM cf_tiers t WHERE t.project = %s AND NOT EXISTS"
                " (SELECT 1 FROM cf_files f WHERE f.project = t.project AND f.path = t.path)",
                (project,),
            )
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
        project = self._reader.project
        found = dict(
            self._reader.read(
                "SELECT coalesce(t.tier, 'cold'), count(*) FROM cf_files f LEFT JOIN cf_tiers t"
                " ON t.project = f.project AND t.path = f.path WHERE f.project = %s GROUP BY 1"
                " UNION ALL SELECT 'evicted', count(*) FROM cf_skipped"
                " WHERE project = %s AND reason = %s",
                (project, project, EVICTED),
            )
        )
        return {tier: int(found.get(tier, 0)) for tier in (*TIERS, "evicted")}

    def storage(self) -> dict[str, int]:
        """The compacted files: how many, their source size and their stored size, in bytes."""
        files, source, stored = self._reader.read(
            "SELECT count(*), coalesce(sum(size), 0), coalesce(sum(octet_length(cold)), 0)"
            " FROM cf_files WHERE project = %s AND cold IS NOT NULL",
            (self._reader.project,),
        )[0]
        return {"files": int(files), "source_bytes": int(source), "stored_bytes": int(stored)}

    def tiers_of(self, paths: Iterable[str]) -> dict[str, tuple[str, float]]:
        """Each of these indexed files' tier and modification time (see ``TierStore``)."""
        wanted = sorted(set(paths))
        if not wanted:
            return {}
        rows = self._reader.read(
            "SELECT f.path, coalesce(t.tier, 'warm'), f.mtime_ns FROM cf_files f"
            " LEFT JOIN cf_tiers t ON t.project = f.project AND t.path = f.path"
            " WHERE f.project = %s AND f.path = ANY(%s)",
            (self._reader.project, wanted),
        )
        return {str(path): (str(tier), int(mtime) / 1e9) for path, tier, mtime in rows}


def _compact(conn: Any, project: str) -> int:
    """Compress the text of every cold file still stored whole; returns how many."""
    rows = conn.execute(
        "SELECT f.id, f.content FROM cf_files f JOIN cf_tiers t ON t.project = f.project"
        " AND t.path = f.path WHERE f.project = %s AND t.tier = 'cold' AND f.cold IS NULL",
        (project,),
    ).fetchall()
    conn.cursor().executemany(
        "UPDATE cf_files SET cold = %s, content = '' WHERE id = %s",
        [(compress_text(text), file_id) for file_id, text in rows],
    )
    return len(rows)


def _restore(conn: Any, project: str, paths: Sequence[str]) -> int:
    """Store these files' text whole again where it was compacted; returns how many."""
    rows = conn.execute(
        "SELECT id, cold FROM cf_files WHERE project = %s AND path = ANY(%s) AND cold IS NOT NULL",
        (project, list(paths)),
    ).fetchall()
    conn.cursor().executemany(
        "UPDATE cf_files SET content = %s, cold = NULL WHERE id = %s",
        [(stored_text(cold), file_id) for file_id, cold in rows],
    )
    return len(rows)


def _evict(conn: Any, project: str, paths: Sequence[str]) -> int:
    """Take these files out of the index, remembered as skipped; returns how many."""
    rows = conn.execute(
        "SELECT id, path, size, mtime_ns FROM cf_files WHERE project = %s AND path = ANY(%s)",
        (project, list(paths)),
    ).fetchall()
    if not rows:
        return 0
    delete_files(conn, [row[0] for row in rows])
    rebuild_edges(conn, project)
    rebuild_vocabulary(conn, project)
    conn.cursor().executemany(
        "INSERT INTO cf_skipped (project, path, size, mtime_ns, reason)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (project, path) DO UPDATE"
        " SET size = excluded.size, mtime_ns = excluded.mtime_ns, reason = excluded.reason",
        [(project, path, size, mtime_ns, EVICTED) for _, path, size, mtime_ns in rows],
    )
    conn.execute(
        "DELETE FROM cf_tiers WHERE project = %s AND path = ANY(%s)",
        (project, [row[1] for row in rows]),
    )
    conn.execute(
        "DELETE FROM cf_vectors v WHERE v.project = %s AND NOT EXISTS (SELECT 1 FROM cf_nodes n"
        " WHERE n.project = v.project AND n.content_hash = v.content_hash)",
        (project,),
    )
    return len(rows)
