"""Command-line edges: bad input is one line and exit 2; the repository is found from below."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading

import pytest

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "contextfuse.cli.main"]


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "proj"
    (root / "pkg" / "deep").mkdir(parents=True)
    (root / "pkg" / "server.py").write_text("def start(port):\n    return port\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def cli(tmp_path):
    env = {**os.environ, "CONTEXTFUSE_CONFIG": str(tmp_path / "no-user-config.toml")}

    def run(*args, stdin=None, cwd=None):
        return subprocess.run(
            [*CLI, *args],
            capture_output=True,
            text=True,
            input=stdin,
            cwd=cwd,
            env=env,
            timeout=300,
        )

    return run


def one_line_error(done):
    lines = done.stderr.strip().splitlines()
    return done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ")


def test_a_query_over_the_models_limit_is_a_one_line_error(cli, repo):
    done = cli("assemble", "-", "--repo", str(repo), "--no-refresh", stdin="word " * 1_000_001)
    assert one_line_error(done) and "limit" in done.stderr


def test_a_bad_configuration_key_is_a_one_line_error_naming_the_nearest_key(cli, repo):
    (repo / ".contextfuse").mkdir()
    (repo / ".contextfuse" / "config.toml").write_text("[fusion]\nmin_fragment_token = 1\n")
    done = cli("assemble", "start", "--repo", str(repo))
    assert one_line_error(done) and "did you mean 'min_fragment_tokens'?" in done.stderr


def test_assemble_from_a_subdirectory_uses_the_repositorys_index(cli, repo):
    assert cli("index", str(repo), "--quiet").returncode == 0
    done = cli("assemble", "start", "--no-refresh", "--quiet", cwd=repo / "pkg" / "deep")
    assert done.returncode == 0, done.stderr
    assert "pkg/server.py" in done.stdout
    assert not (repo / "pkg" / "deep" / ".contextfuse").exists()


def test_index_from_a_subdirectory_indexes_the_git_top_level(cli, repo):
    done = cli("index", "--quiet", cwd=repo / "pkg")
    assert done.returncode == 0, done.stderr
    assert (repo / ".contextfuse" / "index.db").is_file()
    assert not (repo / "pkg" / ".contextfuse").exists()


def test_a_wait_for_another_processs_index_lock_says_so(cli, repo):
    assert cli("index", str(repo), "--quiet").returncode == 0
    lock_path = repo / ".contextfuse" / "index.lock"
    with open(lock_path, "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        # Never wait forever, even if the notice does not come.
        safety = threading.Timer(120, fcntl.flock, (held, fcntl.LOCK_UN))
        safety.start()
        waiting = subprocess.Popen(
            [*CLI, "index", str(repo), "--quiet"], stderr=subprocess.PIPE, text=True
        )
        first_line = waiting.stderr.readline()  # written while the lock is still held
        fcntl.flock(held, fcntl.LOCK_UN)
        safety.cancel()
    waiting.communicate(timeout=300)
    assert waiting.returncode == 0
    assert first_line.startswith("waiting for another contextfuse process")
