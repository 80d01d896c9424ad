"""``PlanStore`` over PostgreSQL: one project's plans and the decisions taken under them.

The same records, URIs, renderings and ordering as the SQLite store
(``contextfuse.kb.plans``): plans with a parent plan, decisions under a plan or imported
from ADR files (no plan), ``supersedes`` links between decisions, and full-text search over
titles and bodies. Search rows are the core's code-aware terms written as a ``tsvector``
(title weight A, body weight C) with a GIN index, ranked by ``ts_rank`` with the title
counting three times the body, as the SQLite store's BM25 column weights do.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

from contextfuse.backends import Rendering, SearchHit
from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb.plans import (
    PLAN_DEPTHS,
    checked_closing_status,
    checked_decision,
    checked_title,
    render,
)
from contextfuse.kb.terms import STOPWORDS, parts_text, weighted_query_terms
from contextfuse.models import Decision, Plan, PlanContext, new_ulid, utc_now
from contextfuse.tokenizer import Tokenizer, default_tokenizer
from contextfuse_postgres.connection import translated
from contextfuse_postgres.nodes import Reader
from contextfuse_postgres.text import tsvector_literal

__all__ = ["PostgresPlanStore", "plan_search_vector"]

_MAX_ANCESTORS = 64  # as the SQLite store: a longer chain is cut (and cannot be a cycle)
_MAX_QUERY_TERMS = 24
#: ts_rank weights {D, C, B, A}: body C, title A, in the SQLite store's BM25 ratio 1 : 3.
_RANK_WEIGHTS = "{0, 0.333333, 0, 1.0}"
_PLAN_COLUMNS = "id, title, body, parent_id, status, created_at, updated_at"
_DECISION_COLUMNS = "id, plan_id, title, body, status, source, created_at, updated_at"


def plan_search_vector(title: str, body: str) -> str:
    """The ``tsvector`` literal of a plan or decision: its words and identifier parts."""
    return tsvector_literal(f"{title}\n{parts_text(title)}", "", f"{body}\n{parts_text(body)}", "")


def _tsquery(terms: Sequence[str]) -> str:
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat()


def _record_id(value: str) -> str:
    """An id from an id or a ``plan://``/``decision://`` URI."""
    return value.rsplit("/", 1)[-1].strip()


class PostgresPlanStore:
    """Plans and decisions of one project, with the writes of the SQLite store's API.

    :param reader: the project's connection pool (shared with the other backends).
    :param tokenizer: counts the renderings' tokens.
    """

    def __init__(self, reader: Reader, tokenizer: Tokenizer | None = None) -> None:
        self._reader = reader
        self._tokenizer = tokenizer or default_tokenizer()

    @property
    def project(self) -> str:
        """The project name of the URIs."""
        return self._reader.project

    def plan_uri(self, plan_id: str) -> str:
        """``plan://<project>/<id>``."""
        return f"plan://{self.project}/{plan_id}"

    def decision_uri(self, decision_id: str) -> str:
        """``decision://<project>/<id>``."""
        return f"decision://{self.project}/{decision_id}"

    # ---- reads -------------------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """One pooled connection (one transaction), errors without secrets."""
        with translated(self._reader.url), self._reader.pool.connection() as conn:
            yield conn

    def _plan(self, row: Sequence[Any]) -> Plan:
        return Plan(
            id=row[0],
            uri=self.plan_uri(row[0]),
            title=row[1],
            body=row[2],
            parent_id=row[3],
            status=row[4],
            created_at=datetime.fromisoformat(row[5]),
            updated_at=datetime.fromisoformat(row[6]),
        )

    def _decisions(self, conn: Any, rows: Sequence[Sequence[Any]]) -> list[Decision]:
        ids = [row[0] for row in rows]
        newer: dict[str, list[str]] = {}
        older: dict[str, list[str]] = {}
        if ids:
            for a, b in conn.execute(
                'SELECT DISTINCT newer COLLATE "C" AS a, older COLLATE "C" AS b'
                " FROM cf_plan_links WHERE project = %s AND (newer = ANY(%s) OR older = ANY(%s))"
                " ORDER BY a, b",
                (self.project, ids, ids),
            ).fetchall():
                older.setdefault(a, []).append(b)
                newer.setdefault(b, []).append(a)
        return [
            Decision(
                id=row[0],
                uri=self.decision_uri(row[0]),
                plan_id=row[1],
                title=row[2],
                body=row[3],
                status=row[4],
                source=row[5],
                supersedes=tuple(older.get(row[0], ())),
                superseded_by=tuple(newer.get(row[0], ())),
                created_at=datetime.fromisoformat(row[6]),
                updated_at=datetime.fromisoformat(row[7]),
            )
            for row in rows
        ]

    def plan(self, plan_id: str) -> Plan | None:
        """The plan with this id (or URI), or None."""
        rows = self._reader.read(
            f"SELECT {_PLAN_COLUMNS} FROM cf_plan_plans WHERE project = %s AND id = %s",
            (self.project, _record_id(plan_id)),
        )
        return self._plan(rows[0]) if rows else None

    def decision(self, decision_id: str) -> Decision | None:
        """The decision with this id (or URI), or None."""
        with self._connection() as conn:
            rows = conn.execute(
                f"SELECT {_DECISION_COLUMNS} FROM cf_plan_decisions WHERE project = %s AND id = %s",
                (self.project, _record_id(decision_id)),
            ).fetchall()
            found = self._decisions(conn, rows)
        return found[0] if found else None

    def list_plans(self, status: str | None = None) -> list[Plan]:
        """Plans, newest first; only those of ``status`` when given."""
        rows = self._reader.read(
            f"SELECT {_PLAN_COLUMNS} FROM cf_plan_plans WHERE project = %s"
            " AND (%s::text IS NULL OR status = %s)"
            ' ORDER BY created_at DESC, id COLLATE "C" DESC',
            (self.project, status, status),
        )
        return [self._plan(row) for row in rows]

    def list_decisions(
        self, plan_id: str | None = None, *, imported: bool = False
    ) -> list[Decision]:
        """Decisions, newest first: of one plan, or (``imported``) those from ADR files."""
        where, params = "", [self.project]
        if plan_id is not None:
            where, params = " AND plan_id = %s", [self.project, _record_id(plan_id)]
        elif imported:
            where = " AND source != ''"
        with self._connection() as conn:
            rows = conn.execute(
                f"SELECT {_DECISION_COLUMNS} FROM cf_plan_decisions WHERE project = %s{where}"
                ' ORDER BY created_at DESC, id COLLATE "C" DESC',
                params,
            ).fetchall()
            return self._decisions(conn, rows)

    def get_plan(self, plan_id: str) -> PlanContext | None:
        """The plan with its ancestors and their decisions, nearest first; None if unknown."""
        with self._connection() as conn:
            chain: list[Plan] = []
            current: str | None = _record_id(plan_id)
            while current is not None and len(chain) < _MAX_ANCESTORS:
                row = conn.execute(
                    f"SELECT {_PLAN_COLUMNS} FROM cf_plan_plans WHERE project = %s AND id = %s",
                    (self.project, current),
                ).fetchone()
                if row is None or any(p.id == row[0] for p in chain):
                    break
                chain.append(self._plan(row))
                current = row[3]
            if not chain:
                return None
            rows = conn.execute(
                f"SELECT {_DECISION_COLUMNS} FROM cf_plan_decisions WHERE project = %s"
                ' AND plan_id = ANY(%s) ORDER BY created_at DESC, id COLLATE "C" DESC',
                (self.project, [p.id for p in chain]),
            ).fetchall()
            found = self._decisions(conn, rows)
        by_plan: dict[str | None, list[Decision]] = {}
        for decision in found:
            by_plan.setdefault(decision.plan_id, []).append(decision)
        decisions = [d for plan in chain for d in by_plan.get(plan.id, [])]
        return PlanContext(
            plan_id=chain[0].id,
            goal=chain[0].title,
            parent_plan_ids=tuple(p.id for p in chain[1:]),
            decisions=tuple(d.id for d in decisions),
            plans=tuple(chain),
            decision_records=tuple(decisions),
        )

    def search(self, query: str, limit: int = 50) -> list[SearchHit]:
        """Plans and decisions whose title or body match ``query``, best first."""
        if limit <= 0:
            return []
        weights = weighted_query_terms(query)
        terms = sorted((t for t in weights if t not in STOPWORDS), key=lambda t: -weights[t])
        if not terms:
            return []
        rows = self._reader.read(
            f"SELECT id COLLATE \"C\" AS id, ts_rank('{_RANK_WEIGHTS}', tsv, q, 1) AS rank, true"
            " FROM cf_plan_plans, CAST(%s AS tsquery) AS q WHERE project = %s AND tsv @@ q"
            f" UNION ALL SELECT id, ts_rank('{_RANK_WEIGHTS}', tsv, q, 1), false"
            " FROM cf_plan_decisions, CAST(%s AS tsquery) AS q WHERE project = %s AND tsv @@ q"
            " ORDER BY rank DESC, id LIMIT %s",
            (
                _tsquery(terms[:_MAX_QUERY_TERMS]),
                self.project,
                _tsquery(terms[:_MAX_QUERY_TERMS]),
                self.project,
                limit,
            ),
        )
        return [
            SearchHit(self.plan_uri(i) if is_plan else self.decision_uri(i), float(rank))
            for i, rank, is_plan in rows
        ]

    def get_records(self, uris: Sequence[str]) -> dict[str, Plan | Decision]:
        """The plans and decisions with these URIs (missing ones are left out)."""
        plan_ids = [_record_id(u) for u in uris if u.startswith("plan://")]
        decision_ids = [_record_id(u) for u in uris if u.startswith("decision://")]
        found: dict[str, Plan | Decision] = {}
        with self._connection() as conn:
            if plan_ids:
                for row in conn.execute(
                    f"SELECT {_PLAN_COLUMNS} FROM cf_plan_plans WHERE project = %s"
                    " AND id = ANY(%s)",
                    (self.project, plan_ids),
                ).fetchall():
                    plan = self._plan(row)
                    found[plan.uri] = plan
            if decision_ids:
                rows = conn.execute(
                    f"SELECT {_DECISION_COLUMNS} FROM cf_plan_decisions WHERE project = %s"
                    " AND id = ANY(%s)",
                    (self.project, decision_ids),
                ).fetchall()
                for decision in self._decisions(conn, rows):
                    found[decision.uri] = decision
        return found

    def get_renderings(
        self, uris: Sequence[str], depths: Sequence[int] | None = None
    ) -> dict[str, dict[int, Rendering]]:
        """``{uri: {depth: rendering}}`` of plans and decisions (depths 9, 4, 0)."""
        wanted = [d for d in PLAN_DEPTHS if depths is None or d in depths]
        records = self.get_records(uris)
        titles = self._titles(records.values())
        texts = [
            (uri, depth, render(record, depth, titles))
            for uri, record in records.items()
            for depth in wanted
        ]
        counts = self._tokenizer.count_many([text for _, _, text in texts])
        out: dict[str, dict[int, Rendering]] = {}
        for (uri, depth, text), tokens in zip(texts, counts, strict=True):
            out.setdefault(uri, {})[depth] = Rendering(depth, text, tokens)
        return out

    def _titles(self, records: Iterable[Plan | Decision]) -> dict[str, str]:
        """Titles of the plans and decisions the records refer to, by id."""
        ids: set[str] = set()
        for record in records:
            if isinstance(record, Plan):
                ids.update([record.parent_id] if record.parent_id else [])
            else:
                ids.update([*record.supersedes, *record.superseded_by])
                ids.update([record.plan_id] if record.plan_id else [])
        if not ids:
            return {}
        rows = self._reader.read(
            "SELECT id, title FROM cf_plan_plans WHERE project = %s AND id = ANY(%s)"
            " UNION ALL SELECT id, title FROM cf_plan_decisions WHERE project = %s"
            " AND id = ANY(%s)",
            (self.project, sorted(ids), self.project, sorted(ids)),
        )
        return {str(i): str(title) for i, title in rows}

    # ---- writes ------------------------------------------------------------------------------

    def add_plan(self, title: str, body: str = "", parent: str | None = None) -> Plan:
        """Create an active plan, under ``parent`` (an id or URI) when given.

        :raises KnowledgeBaseError: the parent plan does not exist, or the title is empty.
        """
        title = checked_title(title)
        parent_id = _record_id(parent) if parent else None
        now = _iso(utc_now())
        plan_id = new_ulid()
        with self._connection() as conn:
            if parent_id and not self._exists(conn, "cf_plan_plans", parent_id):
                raise KnowledgeBaseError(f"no plan {parent_id!r} to be the parent")
            conn.execute(
                "INSERT INTO cf_plan_plans (project, id, title, body, parent_id, status,"
                " created_at, updated_at, tsv) VALUES (%s, %s, %s, %s, %s, 'active', %s, %s,"
                " %s::tsvector)",
                (self.project, plan_id, title, body, parent_id, now, now,
                 plan_search_vector(title, body)),
            )  # fmt: skip
        found = self.plan(plan_id)
        assert found is not None
        return found

    def close_plan(self, plan_id: str, status: str = "done") -> Plan:
        """Mark a plan done or abandoned.

        :raises KnowledgeBaseError: no such plan, or ``status`` is not done/abandoned.
        """
        checked_closing_status(status)
        target = _record_id(plan_id)
        with self._connection() as conn:
            updated = conn.execute(
                "UPDATE cf_plan_plans SET status = %s, updated_at = %s"
                " WHERE project = %s AND id = %s",
                (status, _iso(utc_now()), self.project, target),
            ).rowcount
        if updated == 0:
            raise KnowledgeBaseError(f"no plan {target!r}")
        found = self.plan(target)
        assert found is not None
        return found

    def decide(
        self,
        plan_id: str,
        title: str,
        body: str = "",
        *,
        status: str = "accepted",
        supersedes: Sequence[str] = (),
    ) -> Decision:
        """Record a decision under a plan; the decisions it supersedes become ``superseded``.

        :raises KnowledgeBaseError: no such plan or superseded decision, a bad status, or
            an empty title.
        """
        title = checked_decision(title, status)
        plan = _record_id(plan_id)
        older = [_record_id(s) for s in supersedes]
        decision_id = new_ulid()
        now = _iso(utc_now())
        with self._connection() as conn:
            if not self._exists(conn, "cf_plan_plans", plan):
                raise KnowledgeBaseError(f"no plan {plan!r}")
            for other in older:
                if not self._exists(conn, "cf_plan_decisions", other):
                    raise KnowledgeBaseError(f"no decision {other!r} to supersede")
            conn.execute(
                "INSERT INTO cf_plan_decisions (project, id, plan_id, title, body, status,"
                " created_at, updated_at, tsv) VALUES (%s, %s, %s, %s, %s, %s, %s, %s,"
                " %s::tsvector)",
                (self.project, decision_id, plan, title, body, status, now, now,
                 plan_search_vector(title, body)),
            )  # fmt: skip
            for other in older:
                conn.execute(
                    "INSERT INTO cf_plan_links (project, newer, older, origin)"
                    " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (self.project, decision_id, other, decision_id),
                )
                conn.execute(
                    "UPDATE cf_plan_decisions SET status = 'superseded', updated_at = %s"
                    " WHERE project = %s AND id = %s",
                    (now, self.project, other),
                )
        found = self.decision(decision_id)
        assert found is not None
        return found

    def _exists(self, conn: Any, table: str, record_id: str) -> bool:
        return (
            conn.execute(
                f"SELECT 1 FROM {table} WHERE project = %s AND id = %s",
                (self.project, record_id),
            ).fetchone()
            is not None
        )
