"""The plan and decision store: plans (with parent plans) and the decisions taken under them.

It lives in the index file, in tables of its own (``plan_*``) with a schema version of its
own: plans and decisions are what users and agents wrote, not what the repository holds,
so rebuilding the index keeps them. Decisions imported from the repository's ADR files
(``kb/adr.py``) have no plan and are refreshed by every index run.

Every plan and decision is a node: ``plan://<project>/<id>`` and
``decision://<project>/<id>``, with renderings at depths 9 (all of it), 4 (title, status,
links and first paragraph) and 0 (one line), each with its real token count.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from contextfuse.backends import Rendering, SearchHit
from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb.nodes import chunked
from contextfuse.kb.store import Database
from contextfuse.kb.terms import STOPWORDS, parts_text, weighted_query_terms
from contextfuse.models import (
    Decision,
    DecisionStatus,
    DetailDepth,
    Plan,
    PlanContext,
    PlanStatus,
    Tier,
    new_ulid,
    utc_now,
)
from contextfuse.tokenizer import Tokenizer, default_tokenizer

__all__ = [
    "DECISION_STATUSES",
    "PLAN_DEPTHS",
    "PLAN_SCHEMA_VERSION",
    "PLAN_STATUSES",
    "SQLitePlanStore",
    "checked_closing_status",
    "checked_decision",
    "checked_title",
    "decision_tier",
    "dump",
    "ensure_plan_schema",
    "has_plan_schema",
    "index_text",
    "render",
]

#: Bump on any change to the ``plan_*`` tables; :func:`ensure_plan_schema` migrates.
PLAN_SCHEMA_VERSION = 1
PLAN_STATUSES: tuple[PlanStatus, ...] = ("active", "done", "abandoned")
DECISION_STATUSES: tuple[DecisionStatus, ...] = (
    "proposed",
    "accepted",
    "rejected",
    "deprecated",
    "superseded",
)
#: Depths at which plans and decisions are rendered.
PLAN_DEPTHS = (DetailDepth.FULL_SOURCE, DetailDepth.SIGNATURES, DetailDepth.MODULE_LISTING)
_MAX_ANCESTORS = 64  # a parent chain longer than this is cut (and cannot be a cycle)
_SUMMARY_CHARS = 600  # first paragraph shown at depth 4
_MAX_QUERY_TERMS = 24

_SCHEMA = """
CREATE TABLE IF NOT EXISTS plan_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plan_plans (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    parent_id TEXT REFERENCES plan_plans(id),
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS plan_plans_parent ON plan_plans(parent_id);
-- source: the ADR file a decision was imported from ('' for decisions written here),
-- source_sha256: that file's content hash when it was imported.
CREATE TABLE IF NOT EXISTS plan_decisions (
    id TEXT PRIMARY KEY,
    plan_id TEXT REFERENCES plan_plans(id),
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    source_sha256 TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS plan_decisions_plan ON plan_decisions(plan_id);
CREATE INDEX IF NOT EXISTS plan_decisions_source ON plan_decisions(source);
-- newer supersedes older, origin: the decision whose record stated it (re-importing an
-- ADR replaces the links it stated).
CREATE TABLE IF NOT EXISTS plan_links (
    newer TEXT NOT NULL,
    older TEXT NOT NULL,
    origin TEXT NOT NULL,
    PRIMARY KEY (newer, older, origin)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS plan_links_older ON plan_links(older);
CREATE INDEX IF NOT EXISTS plan_links_origin ON plan_links(origin);
CREATE VIRTUAL TABLE IF NOT EXISTS plan_search USING fts5(
    id UNINDEXED, title, body, tokenize="unicode61 tokenchars '_'"
);
"""


def ensure_plan_schema(conn: sqlite3.Connection) -> None:
    """Create the plan store's tables if missing, inside the caller's write transaction.

    :raises KnowledgeBaseError: the tables were written by a newer contextfuse.
    """
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'plan_meta'"
    ).fetchone()
    if exists:
        row = conn.execute("SELECT value FROM plan_meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > PLAN_SCHEMA_VERSION:
            raise KnowledgeBaseError(
                f"the plan store was written by a newer contextfuse (plan schema {version}, "
                f"this one knows {PLAN_SCHEMA_VERSION}); upgrade contextfuse"
            )
        if version == PLAN_SCHEMA_VERSION:
            return
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute(
        "INSERT OR REPLACE INTO plan_meta (key, value) VALUES ('schema_version', ?)",
        (str(PLAN_SCHEMA_VERSION),),
    )


def has_plan_schema(db: Database) -> bool:
    """True when the index file holds the plan store's tables."""
    return bool(db.read("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'plan_meta'"))


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat()


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _first_paragraph(body: str) -> str:
    text = body.strip()
    paragraph = text.split("\n\n", 1)[0].strip()
    if len(paragraph) > _SUMMARY_CHARS:
        paragraph = paragraph[:_SUMMARY_CHARS].rsplit(" ", 1)[0] + " ..."
    return paragraph


def checked_title(title: str, what: str = "plan") -> str:
    """The title without its outer spaces; every store refuses an empty one the same way."""
    title = title.strip()
    if not title:
        raise KnowledgeBaseError(f"a {what} needs a title")
    return title


def checked_closing_status(status: str) -> str:
    """``status`` when a plan may close with it (done or abandoned)."""
    if status not in ("done", "abandoned"):
        raise KnowledgeBaseError(f"a plan closes as 'done' or 'abandoned', not {status!r}")
    return status


def checked_decision(title: str, status: str) -> str:
    """A decision's title, checked with its status (one of ``DECISION_STATUSES``)."""
    title = checked_title(title, "decision")
    if status not in DECISION_STATUSES:
        raise KnowledgeBaseError(
            f"unknown decision status {status!r}; one of {', '.join(DECISION_STATUSES)}"
        )
    return title


class SQLitePlanStore:
    """``PlanStore`` over the index file, with the writes of the ``plan`` command.

    :param db: the index file (shared with the other backends of a set).
    :param project: the project name of the URIs.
    :param tokenizer: counts the renderings' tokens.
    """

    def __init__(self, db: Database, project: str, tokenizer: Tokenizer | None = None) -> None:
        self._db = db
        self._project = project
        self._tokenizer = tokenizer or default_tokenizer()

    @property
    def project(self) -> str:
        """The project name of the URIs."""
        return self._project

    @property
    def database(self) -> Database:
        """The index file."""
        return self._db

    def close(self) -> None:
        """Close the index file."""
        self._db.close()

    # ---- URIs --------------------------------------------------------------------------------

    def plan_uri(self, plan_id: str) -> str:
        """``plan://<project>/<id>``."""
        return f"plan://{self._project}/{plan_id}"

    def decision_uri(self, decision_id: str) -> str:
        """``decision://<project>/<id>``."""
        return f"decision://{self._project}/{decision_id}"

    @staticmethod
    def _id(value: str) -> str:
        """An id from an id or a ``plan://``/``decision://`` URI."""
        return value.rsplit("/", 1)[-1].strip()

    # ---- reads -------------------------------------------------------------------------------

    def _plan(self, row: Sequence[Any]) -> Plan:
        return Plan(
            id=row[0],
            uri=self.plan_uri(row[0]),
            title=row[1],
            body=row[2],
            parent_id=row[3],
            status=row[4],
            created_at=_when(row[5]),
            updated_at=_when(row[6]),
        )

    def _decisions(self, conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> list[Decision]:
        ids = [row[0] for row in rows]
        newer: dict[str, list[str]] = {}
        older: dict[str, list[str]] = {}
        for chunk in chunked(ids):
            marks = ",".join("?" * len(chunk))
            for a, b in conn.execute(
                f"SELECT DISTINCT newer, older FROM plan_links WHERE newer IN ({marks}) "
                f"OR older IN ({marks}) ORDER BY newer, older",
                [*chunk, *chunk],
            ):
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
                created_at=_when(row[6]),
                updated_at=_when(row[7]),
            )
            for row in rows
        ]

    _PLAN_COLUMNS = "id, title, body, parent_id, status, created_at, updated_at"
    _DECISION_COLUMNS = "id, plan_id, title, body, status, source, created_at, updated_at"

    def plan(self, plan_id: str) -> Plan | None:
        """The plan with this id (or URI), or None."""
        rows = self._db.read(
            f"SELECT {self._PLAN_COLUMNS} FROM plan_plans WHERE id = ?", (self._id(plan_id),)
        )
        return self._plan(rows[0]) if rows else None

    def decision(self, decision_id: str) -> Decision | None:
        """The decision with this id (or URI), or None."""
        with self._db.snapshot() as conn:
            rows = conn.execute(
                f"SELECT {self._DECISION_COLUMNS} FROM plan_decisions WHERE id = ?",
                (self._id(decision_id),),
            ).fetchall()
            found = self._decisions(conn, rows)
        return found[0] if found else None

    def list_plans(self, status: str | None = None) -> list[Plan]:
        """Plans, newest first; only those of ``status`` when given."""
        where, params = ("WHERE status = ?", (status,)) if status else ("", ())
        rows = self._db.read(
            f"SELECT {self._PLAN_COLUMNS} FROM plan_plans {where} "
            "ORDER BY created_at DESC, id DESC",
            params,
        )
        return [self._plan(row) for row in rows]

    def list_decisions(
        self, plan_id: str | None = None, *, imported: bool = False
    ) -> list[Decision]:
        """Decisions, newest first: of one plan, or (``imported``) those from ADR files."""
        sql, params = "", []
        if plan_id is not None:
            sql, params = "WHERE plan_id = ?", [self._id(plan_id)]
        elif imported:
            sql = "WHERE source != ''"
        with self._db.snapshot() as conn:
            rows = conn.execute(
                f"SELECT {self._DECISION_COLUMNS} FROM plan_decisions {sql} "
                "ORDER BY created_at DESC, id DESC",
                params,
            ).fetchall()
            return self._decisions(conn, rows)

    def get_plan(self, plan_id: str) -> PlanContext | None:
        """The plan with its ancestors and their decisions, nearest first; None if unknown."""
        with self._db.snapshot() as conn:
            chain: list[Plan] = []
            current: str | None = self._id(plan_id)
            while current is not None and len(chain) < _MAX_ANCESTORS:
                row = conn.execute(
                    f"SELECT {self._PLAN_COLUMNS} FROM plan_plans WHERE id = ?", (current,)
                ).fetchone()
                if row is None or any(p.id == row[0] for p in chain):
                    break
                chain.append(self._plan(row))
                current = row[3]
            if not chain:
                return None
            decisions: list[Decision] = []
            for plan in chain:
                rows = conn.execute(
                    f"SELECT {self._DECISION_COLUMNS} FROM plan_decisions WHERE plan_id = ? "
                    "ORDER BY created_at DESC, id DESC",
                    (plan.id,),
                ).fetchall()
                decisions.extend(self._decisions(conn, rows))
        return PlanContext(
            plan_id=chain[0].id,
            goal=chain[0].title,
            parent_plan_ids=tuple(p.id for p in chain[1:]),
            decisions=tuple(d.id for d in decisions),
            plans=tuple(chain),
            decision_records=tuple(decisions),
        )

    def search(self, query: str, limit: int = 50) -> list[SearchHit]:
        """Plans and decisions whose title or body match ``query``, best first (BM25)."""
        if limit <= 0:
            return []
        weights = weighted_query_terms(query)
        terms = sorted((t for t in weights if t not in STOPWORDS), key=lambda t: -weights[t])
        if not terms:
            return []
        match = " OR ".join(f'"{term}"' for term in terms[:_MAX_QUERY_TERMS])
        rows = self._db.read(
            "SELECT s.id, bm25(plan_search, 0.0, 3.0, 1.0) AS rank, "
            "EXISTS (SELECT 1 FROM plan_plans p WHERE p.id = s.id) "
            "FROM plan_search s WHERE plan_search MATCH ? ORDER BY rank LIMIT ?",
            (match, limit),
        )
        return [
            SearchHit(self.plan_uri(i) if is_plan else self.decision_uri(i), -float(rank))
            for i, rank, is_plan in rows
        ]

    def get_records(self, uris: Sequence[str]) -> dict[str, Plan | Decision]:
        """The plans and decisions with these URIs (missing ones are left out)."""
        plan_ids = [self._id(u) for u in uris if u.startswith("plan://")]
        decision_ids = [self._id(u) for u in uris if u.startswith("decision://")]
        found: dict[str, Plan | Decision] = {}
        with self._db.snapshot() as conn:
            for chunk in chunked(plan_ids):
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(
                    f"SELECT {self._PLAN_COLUMNS} FROM plan_plans WHERE id IN ({marks})", chunk
                ):
                    plan = self._plan(row)
                    found[plan.uri] = plan
            for chunk in chunked(decision_ids):
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT {self._DECISION_COLUMNS} FROM plan_decisions WHERE id IN ({marks})",
                    chunk,
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
        texts: list[tuple[str, int, str]] = []
        for uri, record in records.items():
            for depth in wanted:
                texts.append((uri, depth, render(record, depth, titles)))
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
        titles: dict[str, str] = {}
        for chunk in chunked(sorted(ids)):
            marks = ",".join("?" * len(chunk))
            for table in ("plan_plans", "plan_decisions"):
                for i, title in self._db.read(
                    f"SELECT id, title FROM {table} WHERE id IN ({marks})", chunk
                ):
                    titles[i] = title
        return titles

    # ---- writes ------------------------------------------------------------------------------

    def _write(self) -> sqlite3.Connection:
        """This thread's connection in a write transaction, the plan tables present."""
        conn = self._db.connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:  # e.g. an index run held the lock too long
            raise KnowledgeBaseError(
                f"cannot write to the index {self._db.path} ({exc}); try again when the "
                "running `contextfuse index` has finished"
            ) from exc
        try:
            ensure_plan_schema(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return conn

    def _commit(self, conn: sqlite3.Connection, work: Callable[[], None]) -> None:
        """Run ``work`` in the open write transaction: all of it is committed, or none."""
        try:
            work()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def add_plan(self, title: str, body: str = "", parent: str | None = None) -> Plan:
        """Create an active plan, under ``parent`` (an id or URI) when given.

        :raises KnowledgeBaseError: the parent plan does not exist, or the title is empty.
        """
        title = checked_title(title)
        parent_id = self._id(parent) if parent else None
        now = _iso(utc_now())
        plan_id = new_ulid()
        conn = self._write()

        def work() -> None:
            if (
                parent_id
                and not conn.execute(
                    "SELECT 1 FROM plan_plans WHERE id = ?", (parent_id,)
                ).fetchone()
            ):
                raise KnowledgeBaseError(f"no plan {parent_id!r} to be the parent")
            conn.execute(
                "INSERT INTO plan_plans (id, title, body, parent_id, status, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, 'active', ?, ?)",
                (plan_id, title, body, parent_id, now, now),
            )
            index_text(conn, plan_id, title, body)

        self._commit(conn, work)
        found = self.plan(plan_id)
        assert found is not None
        return found

    def close_plan(self, plan_id: str, status: str = "done") -> Plan:
        """Mark a plan done or abandoned.

        :raises KnowledgeBaseError: no such plan, or ``status`` is not done/abandoned.
        """
        checked_closing_status(status)
        target = self._id(plan_id)
        conn = self._write()

        def work() -> None:
            cursor = conn.execute(
                "UPDATE plan_plans SET status = ?, updated_at = ? WHERE id = ?",
                (status, _iso(utc_now()), target),
            )
            if cursor.rowcount == 0:
                raise KnowledgeBaseError(f"no plan {target!r}")

        self._commit(conn, work)
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
        plan = self._id(plan_id)
        older = [self._id(s) for s in supersedes]
        decision_id = new_ulid()
        now = _iso(utc_now())
        conn = self._write()

        def work() -> None:
            if not conn.execute("SELECT 1 FROM plan_plans WHERE id = ?", (plan,)).fetchone():
                raise KnowledgeBaseError(f"no plan {plan!r}")
            for other in older:
                if not conn.execute(
                    "SELECT 1 FROM plan_decisions WHERE id = ?", (other,)
                ).fetchone():
                    raise KnowledgeBaseError(f"no decision {other!r} to supersede")
            conn.execute(
                "INSERT INTO plan_decisions (id, plan_id, title, body, status, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (decision_id, plan, title, body, status, now, now),
            )
            index_text(conn, decision_id, title, body)
            for other in older:
                conn.execute(
                    "INSERT OR IGNORE INTO plan_links (newer, older, origin) VALUES (?, ?, ?)",
                    (decision_id, other, decision_id),
                )
                conn.execute(
                    "UPDATE plan_decisions SET status = 'superseded', updated_at = ? WHERE id = ?",
                    (now, other),
                )

        self._commit(conn, work)
        found = self.decision(decision_id)
        assert found is not None
        return found


def index_text(conn: sqlite3.Connection, record_id: str, title: str, body: str) -> None:
    """(Re)write the full-text row of a plan or decision."""
    conn.execute("DELETE FROM plan_search WHERE id = ?", (record_id,))
    conn.execute(
        "INSERT INTO plan_search (id, title, body) VALUES (?, ?, ?)",
        (record_id, f"{title}\n{parts_text(title)}", f"{body}\n{parts_text(body)}"),
    )


def render(record: Plan | Decision, depth: int, titles: dict[str, str] | None = None) -> str:
    """The text of a plan or decision at ``depth`` (9 all of it, 4 a summary, 0 one line).

    ``titles`` names the plans and decisions it links to (by id).
    """
    titles = titles or {}

    def named(ids: Iterable[str]) -> str:
        return ", ".join(f"{titles.get(i, i)} ({i})" for i in ids)

    if isinstance(record, Plan):
        line = f"Plan {record.id} [{record.status}]: {record.title}"
        if depth <= DetailDepth.MODULE_LISTING:
            return line
        head = [line]
        if record.parent_id:
            head.append(f"Parent plan: {named([record.parent_id])}")
    else:
        line = f"Decision {record.id} [{record.status}]: {record.title}"
        if depth <= DetailDepth.MODULE_LISTING:
            return line
        head = [line]
        if record.plan_id:
            head.append(f"Plan: {named([record.plan_id])}")
        if record.source:
            head.append(f"Recorded in: {record.source}")
        if record.supersedes:
            head.append(f"Supersedes: {named(record.supersedes)}")
        if record.superseded_by:
            head.append(f"Superseded by: {named(record.superseded_by)}")
    body = (
        record.body.strip() if depth >= DetailDepth.FULL_SOURCE else _first_paragraph(record.body)
    )
    return "\n".join(head) + (f"\n\n{body}" if body else "")


def dump(record: Plan | Decision, plan: Plan | None = None) -> dict[str, Any]:
    """A JSON-ready dict of a plan or decision (the CLI's ``--format json``).

    ``plan`` is a decision's plan: a decision under a closed plan is cold.
    """
    data: dict[str, Any] = json.loads(record.model_dump_json())
    data["tier"] = record.tier if isinstance(record, Plan) else decision_tier(record, plan)
    return data


def decision_tier(decision: Decision, plan: Plan | None) -> Tier:
    """``warm`` for a decision in force under an active plan (or none), else ``cold``."""
    if not decision.in_force:
        return "cold"
    return "cold" if plan is not None and plan.status != "active" else "warm"
