"""The console script leaves without tearing the interpreter down: output whole, status kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "contextfuse.cli.main"]


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTEXTFUSE_CONFIG": str(tmp_path / "no-user-config.toml")}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    for n in range(40):  # enough code for a payload far bigger than a pipe's buffer
        body = "".join(f"    total_{i} = value * {i}\n" for i in range(40))
        (root / f"module_{n}.py").write_text(f"def compute_{n}(value):\n{body}    return 0\n")
    return root


def test_a_large_payload_arrives_whole(repo: Path, tmp_path: Path) -> None:
    done = run(tmp_path, "assemble", "compute the totals", "--repo", str(repo), "--budget",
               "50000", "--format", "json", "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) > 65_536  # more than a pipe holds: written while read
    assert json.loads(done.stdout)["fragments"]


def test_a_failing_command_keeps_its_status_and_message(repo: Path, tmp_path: Path) -> None:
    done = run(tmp_path, "assemble", "x", "--repo", str(repo), "--budget", "100", "--reserved",
               "200")  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: reserved (200) must be at least 0 and less than the budget (100)"
    ]
