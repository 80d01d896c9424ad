"""`contextfuse assemble`, `strategies list` and `project context set` end to end."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from contextfuse import ContextPayload

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "contextfuse.cli.main"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory, write_small_app):
    return write_small_app(tmp_path_factory.mktemp("app"))


@pytest.fixture
def cli(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFUSE_CONFIG", str(tmp_path / "no-user-config.toml"))

    def run(*args, stdin=None, env=None):
        import os

        return subprocess.run(
            [*CLI, *args],
            capture_output=True,
            text=True,
            input=stdin,
            timeout=300,
            env={**os.environ, **(env or {})},
        )

    return run


def test_assemble_prints_a_valid_payload_within_budget_as_json(cli, repo):
    done = cli(
        "assemble",
        "why does Server.start raise PermissionError",
        "--repo",
        str(repo),
        "--budget",
        "600",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    payload = ContextPayload.model_validate_json(done.stdout)
    assert payload.is_within_budget and payload.budget.max_tokens == 600
    first = payload.fragments[0]
    assert first.provenance.resource_uri.endswith("app/server.py") and first.detail_depth == 9
    assert "def start" in first.content


def test_assemble_reads_the_query_from_standard_input(cli, repo):
    done = cli(
        "assemble", "-", "--repo", str(repo), "--format", "json", stdin="load_config reads TOML"
    )
    assert done.returncode == 0, done.stderr
    uris = [f["provenance"]["resource_uri"] for f in json.loads(done.stdout)["fragments"]]
    assert any(u.endswith("app/config.py") for u in uris)


def test_markdown_output_shows_path_line_range_and_depth(cli, repo):
    done = cli("assemble", "Server.start port", "--repo", str(repo))
    assert done.returncode == 0, done.stderr
    assert re.search(r"### app/server\.py L\d+-L\d+ .*\(full source", done.stdout)


def test_explain_says_which_strategies_returned_each_fragment(cli, repo):
    done = cli("assemble", "Server.start", "--repo", str(repo), "--explain", "--format", "json")
    explanation = json.loads(done.stdout)["explanation"]
    first = explanation["fragments"][0]
    assert first["strategies"] and first["components"] and first["depth_reason"]


def test_an_unknown_strategy_is_an_error_naming_the_known_ones(cli, repo):
    done = cli("assemble", "x", "--repo", str(repo), "--strategy", "nope")
    assert done.returncode == 2
    assert "unknown strategy 'nope'" in done.stderr and "simple-keyword" in done.stderr
    assert "Traceback" not in done.stderr


def test_with_only_the_text_strategy_installed_context_comes_from_simple_keyword(cli, repo):
    done = cli(
        "assemble",
        "load_config",
        "--repo",
        str(repo),
        "--format",
        "json",
        env={"CONTEXTFUSE_DISABLE_PLUGINS": "arce,breadth-depth-navigator,semantic-embedding"},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["strategies_used"] == ["simple-keyword"]


def test_a_strategy_asked_for_that_the_index_cannot_serve_is_an_error_naming_its_backend(cli, repo):
    done = cli("assemble", "start the server", "--repo", str(repo), "--strategy", "relevance")
    assert done.returncode == 2
    assert "'relevance' was asked for" in done.stderr and "no fragments backend" in done.stderr


def test_a_configured_strategy_the_store_cannot_serve_is_an_error_before_any_work(cli, tmp_path):
    project = tmp_path / "project"
    (project / ".contextfuse").mkdir(parents=True)
    (project / ".contextfuse" / "config.toml").write_text(
        '[context.strategies]\nenabled = ["relevance"]\n', encoding="utf-8"
    )
    done = cli("assemble", "anything", "--repo", str(project))
    assert done.returncode == 2
    assert "strategy 'relevance' is enabled" in done.stderr and "fragments" in done.stderr
    assert "Traceback" not in done.stderr


def test_by_default_a_repository_is_served_by_the_best_strategy_alone(cli, repo):
    done = cli("assemble", "start the server", "--repo", str(repo), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["strategies_used"] == ["arce"]


def test_strategies_list_shows_capabilities_quality_and_availability(cli, repo):
    done = cli("strategies", "list", "--repo", str(repo), "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["strategies"]}
    assert rows["simple-keyword"]["quality_score"] == 0.3 and rows["simple-keyword"]["available"]
    assert rows["semantic-embedding"]["capabilities"]["uses_vector"]
    assert rows["arce"]["quality_score"] == 0.95 and rows["arce"]["available"]
    assert rows["arce"]["degradation_rank"] == 1 and rows["simple-keyword"]["degradation_rank"]
    assert rows["plan-decision-context"]["degradation_rank"] is None


def test_project_context_set_writes_the_project_override(cli, repo):
    done = cli("project", "context", "set", "--strategy", "simple-keyword", "--repo", str(repo))
    assert done.returncode == 0, done.stderr
    assert 'enabled = ["simple-keyword"]' in (repo / ".contextfuse" / "config.toml").read_text()
    again = cli("assemble", "Server", "--repo", str(repo), "--format", "json")
    assert json.loads(again.stdout)["strategies_used"] == ["simple-keyword"]
    (repo / ".contextfuse" / "config.toml").unlink()


def test_project_context_set_rejects_an_unknown_strategy(cli, repo):
    done = cli("project", "context", "set", "--strategy", "ghost", "--repo", str(repo))
    assert done.returncode == 2 and "unknown strategy 'ghost'" in done.stderr


def test_explain_shows_each_strategys_rank_and_their_agreement(cli, repo):
    done = cli(
        "assemble", "Server.start", "--repo", str(repo), "--explain", "--format", "json",
        "--strategy", "simple-keyword", "--strategy", "arce",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    fragments = json.loads(done.stdout)["explanation"]["fragments"]
    both = [f for f in fragments if len(f["ranks"]) == 2]
    assert both and all(f["agreement"] == 1.0 for f in both)
    assert all(rank >= 1 for f in fragments for rank in f["ranks"].values())
