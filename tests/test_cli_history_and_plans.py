"""`contextfuse plan` and `assemble --plan-id` end to end, with the installed distributions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from contextfuse import ContextPayload

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "contextfuse.cli.main"]


def git(repo, *args):
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo.parent),
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-history") / "app"
    (root / "app").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "app/limits.py").write_text("def rate_limit(user):\n    return 10\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Add a rate limit per user")
    (root / "app/limits.py").write_text(
        "def rate_limit(user):\n    return 100 if user.staff else 10\n"
    )
    git(root, "commit", "-q", "-am", "Raise the rate limit for staff accounts")
    return root


@pytest.fixture
def cli(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFUSE_CONFIG", str(tmp_path / "no-user-config.toml"))

    def run(*args):
        return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)

    return run


def test_assemble_with_a_plan_id_brings_the_plan_and_its_parent(cli, repo):
    parent = cli("plan", "add", "Harden the API", "--repo", str(repo))
    assert parent.returncode == 0, parent.stderr
    child = cli(
        "plan", "add", "Rate limits", "--parent", parent.stdout.strip(), "--repo", str(repo)
    )
    plan_id = child.stdout.strip()
    decided = cli("plan", "decide", plan_id, "Staff get ten times the limit", "--repo", str(repo))
    assert decided.returncode == 0, decided.stderr
    done = cli(
        "assemble",
        "rate limit for staff",
        "--repo",
        str(repo),
        "--plan-id",
        plan_id,
        "--strategy",
        "plan-decision-context",
        "--strategy",
        "simple-keyword",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    payload = ContextPayload.model_validate_json(done.stdout)
    kinds = {f.uko_node.split(":", 1)[0] for f in payload.fragments}
    assert {"plan", "decision", "project"} <= kinds
    assert payload.plan_id == plan_id


def test_assemble_with_temporal_archaeology_shows_the_commit(cli, repo):
    done = cli(
        "assemble",
        "why do staff accounts get a higher rate limit",
        "--repo",
        str(repo),
        "--strategy",
        "temporal-archaeology",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    fragments = json.loads(done.stdout)["fragments"]
    commit = next(f for f in fragments if f["uko_node"].startswith("commit://app/"))
    assert "Raise the rate limit for staff accounts" in commit["content"]
    assert commit["tier"] == "cold"
