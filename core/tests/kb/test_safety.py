"""An index survives kills, serves consistent snapshots, and reports bad files clearly."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import contextfuse
from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb import open_backends
from contextfuse.kb.store import SCHEMA_VERSION

SRC = str(Path(contextfuse.__file__).parents[1])
#: Indexes a repository in a child process, printing each progress report.
INDEXER = """
import sys
from contextfuse.kb import index

def report(description, done, total):
    print(description, done, total, flush=True)

index(sys.argv[1], contributors=[], workers=1, progress=report)
print("DONE", flush=True)
"""


def module_text(i: int, marker: str) -> str:
    body = "\n".join(f"    value_{k} = compute_{k}(argument) + {k}" for k in range(40))
    return (
        f'"""Module {i}."""\n\n\ndef {marker}_{i}(argument):\n'
        f'    """The {marker} function."""\n{body}\n    return value_0\n\n\n'
        f"class Holder{i}:\n    def method(self):\n        return {marker}_{i}(self)\n"
    )


def make_project(root: Path, marker: str, count: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        target = root / "pkg" / f"module_{i}.py"
        target.parent.mkdir(exist_ok=True)
        target.write_text(module_text(i, marker))


def start_indexer(root: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", INDEXER, str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )


def kill_when(root: Path, reached: Callable[[str], bool]) -> bool:
    """Index ``root`` in a child process; SIGKILL it once it prints a line ``reached`` likes.

    False when the child finished first.
    """
    with start_indexer(root) as process:
        assert process.stdout is not None
        for line in process.stdout:
            if reached(line):
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
                return True
        process.wait()
        return False


def markers(root: Path, word: str) -> int:
    kb = open_backends(root)
    try:
        found = len(kb.nodes.find_symbols(f"{word}_7"))
        hits = kb.text.search(f"{word}_3", limit=1)
        return int(found + sum(h.uri.endswith(f"#{word}_3") for h in hits))
    finally:
        kb.nodes.close()


def integrity(root: Path) -> str:
    conn = sqlite3.connect(root / ".contextfuse" / "index.db")
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def progress_at(description: str, minimum: int = 0) -> Callable[[str], bool]:
    def reached(line: str) -> bool:
        if not line.startswith(description):
            return False
        return int(line.split()[-2]) >= minimum

    return reached


@pytest.mark.slow
def test_an_index_killed_at_any_moment_leaves_the_previous_one_usable(
    tmp_path: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    root = tmp_path / "killed"
    make_project(root, "old_marker", 400)
    baseline = build(root)
    make_project(root, "new_marker", 500)  # rewrites the 400, adds 100
    moments = [
        progress_at("Indexing files", 50),
        progress_at("Indexing files", 450),
        progress_at("Linking symbols"),
        progress_at("Reading history"),
    ]
    for moment in moments:
        assert kill_when(root, moment), "the indexer finished before the kill"
        assert integrity(root) == "ok"
        assert markers(root, "old_marker") == 2
        assert markers(root, "new_marker") == 0
        assert len(opened(root).nodes.files()) == baseline.files
    stats = build(root)
    assert stats.files == 500
    assert markers(root, "new_marker") == 2
    assert markers(root, "old_marker") == 0
    assert integrity(root) == "ok"


@pytest.mark.slow
def test_a_first_index_killed_midway_leaves_no_half_index(
    tmp_path: Path, build: Callable[..., Any]
) -> None:
    root = tmp_path / "first"
    make_project(root, "marker", 300)
    assert kill_when(root, progress_at("Indexing files", 100))
    with pytest.raises(KnowledgeBaseError, match="holds no index yet"):
        open_backends(root)
    assert build(root).files == 300
    assert markers(root, "marker") == 2


@pytest.mark.slow
def test_a_reader_during_an_index_sees_one_state_or_the_other(
    tmp_path: Path, build: Callable[..., Any]
) -> None:
    root = tmp_path / "busy"
    make_project(root, "marker", 300)
    build(root)
    make_project(root, "marker", 600)
    kb = open_backends(root)
    files: set[int] = set()
    hits: set[int] = set()
    with start_indexer(root) as writer:
        done = threading.Event()

        def wait() -> None:
            writer.communicate()
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        try:
            while not done.is_set():
                files.add(len(kb.nodes.files()))
                hits.add(len(kb.text.search("marker_function", limit=5000)))
            files.add(len(kb.nodes.files()))
            hits.add(len(kb.text.search("marker_function", limit=5000)))
        finally:
            kb.nodes.close()
    assert writer.returncode == 0
    # Each query sees all of one run or none of it (3 hits per module: file, function, method).
    assert files == {300, 600} or files == {600}
    assert hits <= {900, 1800}


def test_a_foreign_database_is_reported_with_the_way_out(
    repo: Path, build: Callable[..., Any]
) -> None:
    target = repo / ".contextfuse" / "index.db"
    target.parent.mkdir()
    conn = sqlite3.connect(target)
    conn.execute("CREATE TABLE photos (id INTEGER)")
    conn.commit()
    conn.close()
    for attempt in (lambda: open_backends(repo), lambda: build(repo)):
        with pytest.raises(KnowledgeBaseError) as caught:
            attempt()
        assert str(target) in str(caught.value)
        assert "--rebuild" in str(caught.value)
    assert build(repo, rebuild=True).files > 0
    open_backends(repo).nodes.close()


def test_a_corrupt_file_is_reported_and_rebuild_replaces_it(
    repo: Path, build: Callable[..., Any]
) -> None:
    target = repo / ".contextfuse" / "index.db"
    target.parent.mkdir()
    target.write_bytes(b"this is not a database" * 100)
    with pytest.raises(KnowledgeBaseError, match="contextfuse index --rebuild"):
        open_backends(repo)
    with pytest.raises(KnowledgeBaseError, match="not a contextfuse index or is corrupt"):
        build(repo)
    assert build(repo, rebuild=True).files > 0


def test_an_index_of_another_schema_version_asks_for_a_rebuild(
    repo: Path, build: Callable[..., Any]
) -> None:
    build(repo)
    conn = sqlite3.connect(repo / ".contextfuse" / "index.db")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(KnowledgeBaseError, match="another version of contextfuse"):
        open_backends(repo)
    stats = build(repo)  # indexing rebuilds it
    assert stats.rebuilt
    assert any("another version" in note for note in stats.notes)
    open_backends(repo).nodes.close()


def test_opening_a_repository_without_index_says_how_to_build_one(repo: Path) -> None:
    with pytest.raises(KnowledgeBaseError, match="build it with `contextfuse index"):
        open_backends(repo)


def test_a_closed_index_says_so(repo: Path, build: Callable[..., Any]) -> None:
    build(repo)
    kb = open_backends(repo)
    kb.nodes.close()
    with pytest.raises(KnowledgeBaseError, match="closed"):
        kb.nodes.files()


#: Indexes with two forked worker processes, printing each progress report.
PARALLEL_INDEXER = INDEXER.replace("workers=1", "workers=2")


def processes_mentioning(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (zombies left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers: Linux")
def test_an_indexer_killed_mid_parse_takes_its_workers_along_and_frees_the_lock(
    tmp_path: Path, build: Callable[..., Any]
) -> None:
    root = tmp_path / "killed-parallel"
    make_project(root, "marker", 600)
    with subprocess.Popen(
        [sys.executable, "-c", PARALLEL_INDEXER, str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            if progress_at("Indexing files", 80)(line):
                os.kill(process.pid, signal.SIGKILL)
                break
        process.wait()
    deadline = time.monotonic() + 10
    while processes_mentioning(str(root)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_mentioning(str(root)) == []
    started = time.monotonic()
    stats = build(root, workers=2)
    assert time.monotonic() - started < 60  # not a wait on a lock nobody will release
    assert stats.files == 600
    assert any("taken over" in note for note in stats.notes)
