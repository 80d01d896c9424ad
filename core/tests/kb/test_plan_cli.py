"""``contextfuse plan add|decide|close|show|list`` on the command line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from contextfuse.cli.main import cli


def plan(repo: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["plan", *args, "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    return result.output.strip()


def test_add_prints_the_new_plan_id(repo: Path) -> None:
    plan_id = plan(repo, "add", "Ship release 2")
    assert len(plan_id) == 26


def test_add_in_json_gives_the_whole_plan(repo: Path) -> None:
    data = json.loads(
        plan(repo, "add", "Ship release 2", "--body", "All of it.", "--format", "json")
    )
    assert (data["title"], data["body"], data["status"], data["tier"]) == (
        "Ship release 2",
        "All of it.",
        "active",
        "warm",
    )
    assert data["uri"] == f"plan://shop-repo/{data['id']}"


def test_show_gives_the_plan_its_ancestors_and_decisions_nearest_first(repo: Path) -> None:
    root = plan(repo, "add", "Ship release 2")
    child = plan(repo, "add", "Storage layer", "--parent", root)
    plan(repo, "decide", root, "Linux and macOS only")
    old = plan(repo, "decide", child, "JSON files")
    plan(repo, "decide", child, "SQLite", "--supersedes", old)
    data = json.loads(plan(repo, "show", child, "--format", "json"))
    assert data["plan"]["title"] == "Storage layer"
    assert [p["title"] for p in data["ancestors"]] == ["Ship release 2"]
    assert [(d["title"], d["status"]) for d in data["decisions"]] == [
        ("SQLite", "accepted"),
        ("JSON files", "superseded"),
        ("Linux and macOS only", "accepted"),
    ]
    text = plan(repo, "show", child)
    assert text.index("Storage layer") < text.index("Ship release 2")


def test_show_of_a_decision_names_what_superseded_it(repo: Path) -> None:
    root = plan(repo, "add", "Storage")
    old = plan(repo, "decide", root, "JSON files")
    plan(repo, "decide", root, "SQLite", "--supersedes", old)
    assert "Superseded by: SQLite" in plan(repo, "show", old)


def test_close_and_list_by_status(repo: Path) -> None:
    done = plan(repo, "add", "Finished work")
    plan(repo, "add", "Ongoing work")
    plan(repo, "close", done)
    data = json.loads(plan(repo, "list", "--status", "active", "--format", "json"))
    assert [p["title"] for p in data["plans"]] == ["Ongoing work"]
    closed = json.loads(plan(repo, "list", "--status", "done", "--format", "json"))
    assert [(p["title"], p["tier"]) for p in closed["plans"]] == [("Finished work", "cold")]


def test_an_unknown_parent_is_a_clear_error_with_status_2(repo: Path) -> None:
    result = CliRunner().invoke(
        cli, ["plan", "add", "Child", "--parent", "01J0000000000000000000000Z", "--repo", str(repo)]
    )
    assert result.exit_code == 2
    assert "no plan '01J0000000000000000000000Z' to be the parent" in result.output


def test_show_of_an_unknown_id_is_a_clear_error(repo: Path) -> None:
    result = CliRunner().invoke(cli, ["plan", "show", "nothing", "--repo", str(repo)])
    assert result.exit_code == 2
    assert "no plan or decision 'nothing'" in result.output


def test_the_plan_command_is_listed_in_help() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert "plan" in result.output


def test_the_decisions_of_a_closed_plan_are_cold(repo: Path) -> None:
    done = plan(repo, "add", "Finished work")
    plan(repo, "decide", done, "Use a queue")
    plan(repo, "close", done)
    data = json.loads(plan(repo, "show", done, "--format", "json"))
    assert [d["tier"] for d in data["decisions"]] == ["cold"]
