"""``PlanStore`` over PostgreSQL: plans and the decisions taken under them, per project.

This implements the core's ``PlanStore`` protocol as it stands (``get_plan``) plus
``put_plan`` to write one.
"""

from __future__ import annotations

from psycopg.types.json import Jsonb

from contextfuse.models import PlanContext
from contextfuse_postgres.connection import translated
from contextfuse_postgres.nodes import Reader

__all__ = ["PostgresPlanStore"]


class PostgresPlanStore:
    """Plans of one project."""

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def get_plan(self, plan_id: str) -> PlanContext | None:
        """The plan with this id, or None."""
        rows = self._reader.read(
            "SELECT goal, parent_plan_ids, decisions, metadata FROM cf_plans"
            " WHERE project = %s AND plan_id = %s",
            (self._reader.project, plan_id),
        )
        if not rows:
            return None
        goal, parents, decisions, metadata = rows[0]
        return PlanContext(
            plan_id=plan_id,
            goal=goal,
            parent_plan_ids=tuple(parents),
            decisions=tuple(decisions),
            metadata=dict(metadata),
        )

    def put_plan(self, plan: PlanContext) -> None:
        """Store ``plan`` (replacing a plan with the same id)."""
        if not plan.plan_id:
            raise ValueError("a plan needs a plan_id to be stored")
        with translated(self._reader.url), self._reader.pool.connection() as conn:
            conn.execute(
                "INSERT INTO cf_plans (project, plan_id, goal, parent_plan_ids, decisions,"
                " metadata) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (project, plan_id)"
                " DO UPDATE SET goal = excluded.goal, parent_plan_ids = excluded.parent_plan_ids,"
                " decisions = excluded.decisions, metadata = excluded.metadata",
                (
                    self._reader.project,
                    plan.plan_id,
                    plan.goal,
                    list(plan.parent_plan_ids),
                    list(plan.decisions),
                    Jsonb(plan.metadata),
                ),
            )
