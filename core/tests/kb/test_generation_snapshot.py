"""A read snapshot sees one generation: it is asked of the index once, never kept past it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from contextfuse.kb import generation
from contextfuse.kb.layout import DEFAULT_INDEX_DIR
from contextfuse.kb.store import DB_NAME, Database


@pytest.fixture
def database(repo: Path, build: Callable[..., Any]) -> Iterator[Database]:
    build(repo)
    db = Database(repo / DEFAULT_INDEX_DIR / DB_NAME)
    yield db
    db.close()


def asked(db: Database) -> list[str]:
    """The statements this thread's connection to ``db`` runs from now on that read the
    generation."""
    seen: list[str] = []
    db.connection().set_trace_callback(
        lambda sql: seen.append(sql) if generation.GENERATION_KEY in sql else None
    )
    return seen


def renew_elsewhere(db: Database) -> None:
    """Another connection commits a new generation (an index run of another process)."""
    with closing(sqlite3.connect(db.path, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        generation.renew(other)
        other.execute("COMMIT")


def test_a_snapshot_asks_the_index_for_its_generation_once(database: Database) -> None:
    statements = asked(database)
    with database.snapshot() as conn:
        first = generation.current(conn)
        assert generation.cache_key(conn) == first
        assert generation.read_key(database) == first
    assert first is not None
    assert len(statements) == 1


def test_a_snapshot_sees_the_generation_it_began_with_after_another_commit(
    database: Database,
) -> None:
    with database.snapshot() as conn:
        before = generation.current(conn)
        renew_elsewhere(database)
        assert generation.current(conn) == before


def test_the_next_snapshot_sees_the_generation_committed_meanwhile(database: Database) -> None:
    with database.snapshot() as conn:
        before = generation.current(conn)
    renew_elsewhere(database)
    with database.snapshot() as conn:
        after = generation.current(conn)
    assert after is not None and after != before


def test_outside_a_snapshot_each_read_asks_the_index(database: Database) -> None:
    statements = asked(database)
    before = generation.read_key(database)
    renew_elsewhere(database)
    assert generation.read_key(database) != before
    assert len(statements) == 2


def test_a_generation_renewed_inside_a_snapshot_is_the_one_seen_next(database: Database) -> None:
    with database.snapshot() as conn:
        before = generation.current(conn)
        generation.renew(conn)
        renewed = generation.current(conn)
        stored = conn.execute(
            "SELECT value FROM meta WHERE key = ?", (generation.GENERATION_KEY,)
        ).fetchone()[0]
    assert renewed == stored != before
