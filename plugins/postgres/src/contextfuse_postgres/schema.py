"""The tables, created and upgraded by numbered migrations recorded in a version table.

Every row belongs to a project (``project`` column): many repositories share one database
without seeing each other's rows, and every query of a backend filters by its project.
Migrations run under a transaction-scoped advisory lock, so servers and indexers starting
together apply each migration once.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate", "schema_version"]

#: Key of the advisory lock held while migrating (any constant unlikely to clash).
_MIGRATION_LOCK = 0x43465553_0001

MIGRATIONS: tuple[str, ...] = (
    # 1: the knowledge base of every project.
    """
    CREATE EXTENSION IF NOT EXISTS vector;
    CREATE TABLE cf_projects (
        project text PRIMARY KEY,
        meta jsonb NOT NULL DEFAULT '{}'
    );
    CREATE TABLE cf_files (
        id bigserial PRIMARY KEY,
        project text NOT NULL,
        path text NOT NULL,
        size bigint NOT NULL,
        mtime_ns bigint NOT NULL,
        sha256 text NOT NULL,
        language text NOT NULL,
        parser text NOT NULL,
        content text NOT NULL,
        facts jsonb NOT NULL,
        redactions jsonb NOT NULL DEFAULT '{}',
        note text NOT NULL DEFAULT '',
        UNIQUE (project, path)
    );
    CREATE TABLE cf_skipped (
        project text NOT NULL,
        path text NOT NULL,
        size bigint NOT NULL,
        mtime_ns bigint NOT NULL,
        reason text NOT NULL,
        PRIMARY KEY (project, path)
    );
    CREATE TABLE cf_nodes (
        id bigserial PRIMARY KEY,
        project text NOT NULL,
        uri text NOT NULL,
        file_id bigint NOT NULL REFERENCES cf_files(id) ON DELETE CASCADE,
        path text NOT NULL,
        kind text NOT NULL,
        name text NOT NULL,
        qualname text NOT NULL,
        parent_id bigint,
        language text NOT NULL,
        line_start integer NOT NULL,
        line_end integer NOT NULL,
        resource_type text NOT NULL,
        summary text NOT NULL,
        content_hash text NOT NULL,
        tsv tsvector NOT NULL,
        UNIQUE (project, uri)
    );
    CREATE INDEX cf_nodes_file ON cf_nodes (file_id);
    CREATE INDEX cf_nodes_parent ON cf_nodes (parent_id);
    CREATE INDEX cf_nodes_name ON cf_nodes (project, name);
    CREATE INDEX cf_nodes_qualname ON cf_nodes (project, qualname);
    CREATE INDEX cf_nodes_hash ON cf_nodes (project, content_hash);
    CREATE INDEX cf_nodes_tsv ON cf_nodes USING gin (tsv);
    -- NULL content: the node's lines of cf_files.content, sliced on read.
    CREATE TABLE cf_renderings (
        node_id bigint NOT NULL REFERENCES cf_nodes(id) ON DELETE CASCADE,
        depth smallint NOT NULL,
        content text,
        token_count integer NOT NULL,
        line_start integer NOT NULL,
        line_end integer NOT NULL,
        PRIMARY KEY (node_id, depth)
    );
    CREATE TABLE cf_edges (
        project text NOT NULL,
        source bigint NOT NULL,
        target bigint NOT NULL,
        kind text NOT NULL,
        weight real NOT NULL
    );
    CREATE INDEX cf_edges_source ON cf_edges (source);
    CREATE INDEX cf_edges_target ON cf_edges (target);
    CREATE INDEX cf_edges_project ON cf_edges (project);
    CREATE TABLE cf_vocabulary (
        project text NOT NULL,
        term text NOT NULL,
        docs integer NOT NULL,
        PRIMARY KEY (project, term)
    );
    CREATE TABLE cf_commits (
        project text NOT NULL,
        sha text NOT NULL,
        seq bigint NOT NULL,
        timestamp bigint NOT NULL,
        author text NOT NULL,
        message text NOT NULL,
        PRIMARY KEY (project, sha)
    );
    CREATE INDEX cf_commits_time ON cf_commits (project, timestamp DESC, seq DESC);
    CREATE TABLE cf_commit_files (
        project text NOT NULL,
        sha text NOT NULL,
        path text NOT NULL
    );
    CREATE INDEX cf_commit_files_path ON cf_commit_files (project, path);
    CREATE INDEX cf_commit_files_sha ON cf_commit_files (project, sha);
    CREATE TABLE cf_vectors (
        project text NOT NULL,
        model text NOT NULL,
        content_hash text NOT NULL,
        dims integer NOT NULL,
        embedding vector NOT NULL,
        PRIMARY KEY (project, model, content_hash)
    );
    CREATE TABLE cf_plans (
        project text NOT NULL,
        plan_id text NOT NULL,
        goal text NOT NULL,
        parent_plan_ids text[] NOT NULL DEFAULT '{}',
        decisions text[] NOT NULL DEFAULT '{}',
        metadata jsonb NOT NULL DEFAULT '{}',
        PRIMARY KEY (project, plan_id)
    );
    """,
    # 2: storage tiers of files and their policy (see contextfuse.kb.tiers).
    """
    CREATE TABLE cf_tiers (
        project text NOT NULL,
        path text NOT NULL,
        tier text NOT NULL CHECK (tier IN ('hot', 'warm', 'cold')),
        last_access bigint NOT NULL,
        accesses bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (project, path)
    );
    CREATE INDEX cf_tiers_age ON cf_tiers (project, tier, last_access);
    CREATE TABLE cf_tier_policy (
        project text PRIMARY KEY,
        policy jsonb NOT NULL
    );
    """,
    # 3: plans and decisions as the SQLite store keeps them (contextfuse.kb.plans), with
    # full-text search. cf_plans held a plan's goal and decision ids only (no records the
    # plan-decision-context strategy can show), so it goes.
    """
    DROP TABLE cf_plans;
    CREATE TABLE cf_plan_plans (
        project text NOT NULL,
        id text NOT NULL,
        title text NOT NULL,
        body text NOT NULL,
        parent_id text,
        status text NOT NULL,
        created_at text NOT NULL,
        updated_at text NOT NULL,
        tsv tsvector NOT NULL,
        PRIMARY KEY (project, id)
    );
    CREATE INDEX cf_plan_plans_tsv ON cf_plan_plans USING gin (tsv);
    -- source: the ADR file a decision was imported from ('' for decisions written here).
    CREATE TABLE cf_plan_decisions (
        project text NOT NULL,
        id text NOT NULL,
        plan_id text,
        title text NOT NULL,
        body text NOT NULL,
        status text NOT NULL,
        source text NOT NULL DEFAULT '',
        source_sha256 text NOT NULL DEFAULT '',
        created_at text NOT NULL,
        updated_at text NOT NULL,
        tsv tsvector NOT NULL,
        PRIMARY KEY (project, id)
    );
    CREATE INDEX cf_plan_decisions_plan ON cf_plan_decisions (project, plan_id);
    CREATE INDEX cf_plan_decisions_tsv ON cf_plan_decisions USING gin (tsv);
    -- newer supersedes older; origin: the decision whose record stated it.
    CREATE TABLE cf_plan_links (
        project text NOT NULL,
        newer text NOT NULL,
        older text NOT NULL,
        origin text NOT NULL,
        PRIMARY KEY (project, newer, older, origin)
    );
    CREATE INDEX cf_plan_links_older ON cf_plan_links (project, older);
    """,
    # 4: a cold file's text, compressed (contextfuse.kb.compressed); its content is then ''.
    """
    ALTER TABLE cf_files ADD COLUMN cold bytea;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: Any) -> int:
    """The version of the schema in the database (0: none yet)."""
    exists = conn.execute("SELECT to_regclass('cf_schema_version') IS NOT NULL").fetchone()[0]
    if not exists:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM cf_schema_version").fetchone()
    return int(row[0])


def migrate(conn: Any) -> int:
    """Apply the migrations the database lacks, each once; returns the version reached.

    :raises RuntimeError: the database was migrated by a newer version of this plugin.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS cf_schema_version ("
            " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        current = schema_version(conn)
        if current > SCHEMA_VERSION:
            raise RuntimeError(
                f"the database's contextfuse schema is version {current}; this plugin knows "
                f"up to {SCHEMA_VERSION}: upgrade contextfuse-postgres"
            )
        for version in range(current + 1, SCHEMA_VERSION + 1):
            conn.execute(MIGRATIONS[version - 1])
            conn.execute("INSERT INTO cf_schema_version (version) VALUES (%s)", (version,))
    return SCHEMA_VERSION
