"""Schema migrations: numbered, recorded in a version table, applied once."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from contextfuse_postgres import PostgresStoreProvider
from contextfuse_postgres.schema import SCHEMA_VERSION, migrate, schema_version


def test_every_migration_is_recorded_once(server_url: str, repo: Path) -> None:
    PostgresStoreProvider().index(repo, {"url": server_url})
    with psycopg.connect(server_url) as conn:
        migrate(conn)
        versions = [row[0] for row in conn.execute("SELECT version FROM cf_schema_version")]
    assert sorted(versions) == list(range(1, SCHEMA_VERSION + 1))


def test_a_database_from_a_newer_plugin_is_refused(server_url: str) -> None:
    with psycopg.connect(server_url, autocommit=True) as conn:
        migrate(conn)
        conn.execute("INSERT INTO cf_schema_version (version) VALUES (999)")
        try:
            with pytest.raises(RuntimeError, match="upgrade contextfuse-postgres"):
                migrate(conn)
        finally:
            conn.execute("DELETE FROM cf_schema_version WHERE version = 999")
        assert schema_version(conn) == SCHEMA_VERSION
