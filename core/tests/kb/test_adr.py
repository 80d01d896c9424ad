"""Architecture decision records the repository holds become decisions of the plan store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextfuse.kb.adr import is_adr_path, parse_adr

NYGARD_1 = """# 1. Record architecture decisions

Date: 2019-03-04

## Status

Accepted

## Context

We need to record the architectural decisions made on this project.

## Decision

We will use Architecture Decision Records.
"""

NYGARD_2 = """# 2. Store carts in Redis

Date: 2019-05-01

## Status

Superseded by [3. Store carts in PostgreSQL](0003-store-carts-in-postgresql.md)

## Context

Carts must survive a restart.
"""

MADR_3 = """---
status: accepted
date: 2020-01-15
deciders: shop team
---
# Store carts in PostgreSQL

## Context and Problem Statement

Redis lost carts on failover. Supersedes ADR-0002.

## Decision Outcome

Chosen option: PostgreSQL, because it is already operated.
"""

MADR_BULLETS = """# Use pytest for tests

* Status: proposed
* Date: 2021-02-03

## Context and Problem Statement

Which test runner?
"""

ADRS = {
    "docs/adr/0001-record-architecture-decisions.md": NYGARD_1,
    "docs/adr/0002-store-carts-in-redis.md": NYGARD_2,
    "docs/adr/0003-store-carts-in-postgresql.md": MADR_3,
    "docs/adr/README.md": "# Decisions\n\nThe index of our ADRs.\n",
    "docs/decisions/0001-use-pytest.md": MADR_BULLETS,
}


def test_a_nygard_record_gives_its_title_status_date_and_body() -> None:
    record = parse_adr(NYGARD_1)
    assert record is not None
    assert record.title == "Record architecture decisions"
    assert record.status == "accepted"
    assert record.date is not None and record.date.year == 2019
    assert "Architecture Decision Records" in record.body


def test_a_nygard_superseded_by_link_is_read() -> None:
    record = parse_adr(NYGARD_2)
    assert record is not None
    assert record.status == "superseded"
    assert record.superseded_by == ("0003-store-carts-in-postgresql.md",)


def test_madr_front_matter_gives_status_and_date() -> None:
    record = parse_adr(MADR_3)
    assert record is not None
    assert (record.title, record.status) == ("Store carts in PostgreSQL", "accepted")
    assert record.date is not None and record.date.month == 1


def test_madr_bullet_fields_give_status() -> None:
    record = parse_adr(MADR_BULLETS)
    assert record is not None
    assert record.status == "proposed"


def test_a_file_without_a_title_is_not_a_record() -> None:
    assert parse_adr("just some notes\n") is None


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("docs/adr/0001-x.md", True),
        ("docs/decisions/0002-y.md", True),
        ("adr/0003-z.md", True),
        ("services/api/docs/adr/0001-x.md", True),
        ("docs/adr/README.md", False),
        ("docs/adr/template.md", False),
        ("docs/adr/0001-x.txt", False),
        ("docs/guide.md", False),
    ],
)
def test_only_markdown_records_under_adr_folders_count(path: str, expected: bool) -> None:
    assert is_adr_path(path) is expected


@pytest.fixture
def with_adrs(repo: Path, write: Callable[..., Any], commit: Callable[..., Any]) -> Path:
    write(repo, ADRS)
    commit(repo, "Add decision records")
    return repo


def decisions(opened: Callable[..., Any], repo: Path) -> dict[str, Any]:
    return {d.title: d for d in opened(repo).plans.list_decisions(imported=True)}


def test_indexing_imports_every_record_and_no_readme(
    with_adrs: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    stats = build(with_adrs)
    found = decisions(opened, with_adrs)
    assert sorted(found) == [
        "Record architecture decisions",
        "Store carts in PostgreSQL",
        "Store carts in Redis",
        "Use pytest for tests",
    ]
    assert stats.decisions_imported == 4
    assert found["Use pytest for tests"].source == "docs/decisions/0001-use-pytest.md"
    assert found["Use pytest for tests"].plan_id is None


def test_supersession_links_both_ways_by_link_and_by_number(
    with_adrs: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    build(with_adrs)
    found = decisions(opened, with_adrs)
    redis, postgres = found["Store carts in Redis"], found["Store carts in PostgreSQL"]
    assert redis.superseded_by == (postgres.id,)
    assert postgres.supersedes == (redis.id,)
    assert not redis.in_force


def test_a_refresh_without_change_imports_nothing(
    with_adrs: Path, build: Callable[..., Any]
) -> None:
    build(with_adrs)
    assert build(with_adrs).decisions_imported == 0


def test_an_edited_record_is_imported_again_and_keeps_its_id(
    with_adrs: Path,
    build: Callable[..., Any],
    opened: Callable[..., Any],
    write: Callable[..., Any],
) -> None:
    build(with_adrs)
    before = decisions(opened, with_adrs)["Use pytest for tests"].id
    write(
        with_adrs,
        {"docs/decisions/0001-use-pytest.md": MADR_BULLETS.replace("proposed", "accepted")},
    )
    assert build(with_adrs).decisions_imported == 1
    after = decisions(opened, with_adrs)["Use pytest for tests"]
    assert (after.id, after.status) == (before, "accepted")


def test_a_deleted_record_leaves_the_store(
    with_adrs: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    build(with_adrs)
    (with_adrs / "docs/adr/0002-store-carts-in-redis.md").unlink()
    build(with_adrs)
    found = decisions(opened, with_adrs)
    assert "Store carts in Redis" not in found
    assert found["Store carts in PostgreSQL"].supersedes == ()


def test_the_index_summary_says_how_many_records_were_imported(with_adrs: Path) -> None:
    from click.testing import CliRunner

    from contextfuse.cli.main import cli

    result = CliRunner().invoke(cli, ["index", str(with_adrs)])
    assert result.exit_code == 0, result.output
    assert "decisions 4 ADR file(s) imported, updated or removed" in result.output
