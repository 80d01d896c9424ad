"""``contextfuse index`` on the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

import contextfuse
from contextfuse.cli.main import cli

SRC = str(Path(contextfuse.__file__).parents[1])


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextfuse.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )


def test_index_prints_a_summary(repo: Path) -> None:
    result = CliRunner().invoke(cli, ["index", str(repo)])
    assert result.exit_code == 0, result.output
    assert f"Indexed shop-repo ({repo.resolve()})" in result.output
    assert "files " in result.output and "parsed" in result.output
    assert "skipped " in result.output and "binary 1" in result.output
    assert "secrets   2 redacted in 2 file(s)" in result.output
    assert "history   4 commits (+4)" in result.output


def test_index_in_json_gives_the_same_summary(repo: Path) -> None:
    result = CliRunner().invoke(cli, ["index", str(repo), "--format", "json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["project"] == "shop-repo"
    assert data["files"] == data["files_parsed"] > 0
    assert {"path": "logo.png", "reason": "binary"} in data["skipped_files"]
    assert data["git"] is True


def test_index_defaults_to_the_current_repository(repo: Path) -> None:
    (repo / "shop").mkdir(exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-m", "contextfuse.cli.main", "index", "--format", "json"],
        cwd=repo / "shop",
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["root"] == str(repo.resolve())


def test_index_dir_and_quiet(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    result = CliRunner().invoke(cli, ["index", str(repo), "--index-dir", str(target), "-q"])
    assert result.exit_code == 0
    assert result.output == ""
    assert (target / "index.db").is_file()


def test_a_corrupt_index_exits_with_2_and_no_traceback(repo: Path) -> None:
    (repo / ".contextfuse").mkdir()
    (repo / ".contextfuse" / "index.db").write_bytes(b"garbage" * 1000)
    result = run("index", str(repo))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "error:" in result.stderr and "--rebuild" in result.stderr
    rebuilt = run("index", str(repo), "--rebuild", "--format", "json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["files"] > 0
