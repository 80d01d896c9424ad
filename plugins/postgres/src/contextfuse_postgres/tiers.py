"""Storage tiers of one project's files in PostgreSQL (see ``contextfuse.kb.tiers``)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from psycopg.types.json import Jsonb

from contextfuse.kb.tiers import TIERS, TierPolicy
from contextfuse_postgres.connection import translated
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
        """Promote these files to hot: they were just read."""
        import psycopg

        stamp = int(now if now is not None else time.time())
        wanted = sorted(set(paths))
        if not wanted:
            return
        try:
            with self._reader.pool.connection() as conn:
                conn.execute(f"SET LOCAL lock_timeout = '{_TOUCH_WAIT}'")
                conn.execute(
                    "INSERT INTO cf_tiers (project, path, tier, last_access, accesses)"
                    " SELECT %s, path, 'hot', %s, 1 FROM unnest(%s::text[]) AS path"
                    " ON CONFLICT (project, path) DO UPDATE SET tier = 'hot',"
                    " last_access = excluded.last_access, accesses = cf_tiers.accesses + 1",
                    (self._reader.project, stamp, wanted),
                )
        except psycopg.errors.LockNotAvailable:  # an index run holds the rows: skip this record
            return

    def apply(self, now: float | None = None) -> dict[str, int]:
        """Admit new files as warm, demote idle ones, drop expired records."""
        policy = self.policy()
        stamp = int(now if now is not None else time.time())
        project = self._reader.project
        counts: list[int] = []
        with translated(self._reader.url), self._reader.pool.connection() as conn:
            for sql, params in (
                (
                    "INSERT INTO cf_tiers (project, path, tier, last_access, accesses)"
                    " SELECT project, path, 'warm', %s, 0 FROM cf_files WHERE project = %s"
                    " ON CONFLICT (project, path) DO NOTHING",
                    (stamp, project),
                ),
                (
                    "UPDATE cf_tiers SET tier = 'warm' WHERE project = %s AND tier = 'hot'"
                    " AND last_access < %s",
                    (project, stamp - policy.hot_days * _DAY),
                ),
                (
                    "UPDATE cf_tiers SET tier = 'cold' WHERE project = %s AND tier != 'cold'"
                    " AND last_access < %s",
                    (project, stamp - policy.warm_days * _DAY),
                ),
                (
                    "DELETE FROM cf_tiers WHERE project = %s AND tier = 'cold'"
                    " AND last_access < %s",
                    (project, stamp - policy.retention_days * _DAY),
                ),
                (
                    "DELETE FROM cf_tiers t WHERE t.project = %s AND NOT EXISTS"
                    " (SELECT 1 FROM cf_files f WHERE f.project = t.project AND f.path = t.path)",
                    (project,),
                ),
            ):
                counts.append(conn.execute(sql, params).rowcount)
        admitted, to_warm, to_cold, dropped, _ = counts
        return {"admitted": admitted, "to_warm": to_warm, "to_cold": to_cold, "dropped": dropped}

    def counts(self) -> dict[str, int]:
        """Indexed files per tier (a file without a record is cold)."""
        found = dict(
            self._reader.read(
                "SELECT coalesce(t.tier, 'cold'), count(*) FROM cf_files f LEFT JOIN cf_tiers t"
                " ON t.project = f.project AND t.path = f.path WHERE f.project = %s GROUP BY 1",
                (self._reader.project,),
            )
        )
        return {tier: int(found.get(tier, 0)) for tier in TIERS}
