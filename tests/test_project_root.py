"""Outside a git checkout, a command run from a subfolder finds the project by its
``.contextfuse`` folder, as git finds its top level, and says which folder it used."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "contextfuse.cli.main"]
Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``outer/`` (no git) with code at its top and in ``a/b/``."""
    root = tmp_path / "outer"
    (root / "a" / "b").mkdir(parents=True)
    (root / "top.py").write_text("def alpha_entry():\n    return 1\n")
    (root / "a" / "b" / "deep.py").write_text("def beta_entry():\n    return 2\n")
    return root


@pytest.fixture
def cli(tmp_path: Path) -> Run:
    env = {
        **os.environ,
        "CONTEXTFUSE_CONFIG": str(tmp_path / "no-user-config.toml"),
        "GIT_CEILING_DIRECTORIES": str(tmp_path),  # never the git checkout of the tests
    }

    def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CLI, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
        )

    return run


def _indexes(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob(".contextfuse"))


def test_assemble_from_a_subfolder_uses_the_enclosing_index_and_says_so(
    cli: Run, tree: Path
) -> None:
    assert cli("index", "--quiet", cwd=tree).returncode == 0
    done = cli("assemble", "alpha_entry", "--budget", "500", cwd=tree / "a" / "b")
    assert done.returncode == 0, done.stderr
    assert "top.py" in done.stdout
    assert (
        f"note: using the project at {tree} (the nearest folder above with a .contextfuse "
        "folder)" in done.stderr
    )
    assert _indexes(tree) == [tree]


def test_plans_written_from_a_subfolder_go_to_the_enclosing_project(cli: Run, tree: Path) -> None:
    assert cli("index", "--quiet", cwd=tree).returncode == 0
    added = cli("plan", "add", "Ship it", cwd=tree / "a")
    assert added.returncode == 0, added.stderr
    listed = cli("plan", "list", cwd=tree)
    assert "Ship it" in listed.stdout
    assert _indexes(tree) == [tree]


def test_a_project_configured_but_not_yet_indexed_is_found_from_a_subfolder(
    cli: Run, tree: Path
) -> None:
    configured = cli("project", "context", "set", "--strategy", "simple-keyword", cwd=tree)
    assert configured.returncode == 0, configured.stderr
    done = cli("index", cwd=tree / "a" / "b")
    assert done.returncode == 0, done.stderr
    assert f"Indexed outer ({tree})" in done.stdout
    assert _indexes(tree) == [tree]


def test_the_nearest_index_wins_when_projects_nest(cli: Run, tree: Path) -> None:
    assert cli("index", "--quiet", cwd=tree).returncode == 0
    inner = tree / "a"
    assert cli("index", str(inner), "--quiet", cwd=tree).returncode == 0
    done = cli("assemble", "beta_entry", "--budget", "500", "--no-refresh", cwd=inner / "b")
    assert done.returncode == 0, done.stderr
    assert f"using the project at {inner} " in done.stderr
    assert "b/deep.py" in done.stdout and "top.py" not in done.stdout


def test_a_command_run_at_the_root_says_nothing_about_it(cli: Run, tree: Path) -> None:
    done = cli("index", cwd=tree)
    assert done.returncode == 0, done.stderr
    assert "using the project" not in done.stderr
