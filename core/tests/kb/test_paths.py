"""Every path read is resolved, component by component, and stays inside the repository."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb import files as discovery
from contextfuse.server.projects import WarmProject

OUTSIDE_MARK = "OUTSIDE-THE-REPOSITORY-7f3a"


def outside_folder(tmp_path: Path) -> Path:
    """A folder outside the repository holding files named like the tracked ones."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "passwd").write_text(f"root:x:0:0:{OUTSIDE_MARK}:/root:/bin/sh\n")
    (folder / "shadow").write_text(f"root:{OUTSIDE_MARK}:19000::::::\n")
    return folder


def index_bytes(root: Path) -> bytes:
    conn = sqlite3.connect(root / ".contextfuse" / "index.db")
    conn.execute("PRAGMA wal_checkpoint(FULL)")
    conn.close()
    return b"".join(p.read_bytes() for p in (root / ".contextfuse").glob("index.db*"))


def swap_for_link(folder: Path, target: Path) -> None:
    shutil.rmtree(folder)
    folder.symlink_to(target, target_is_directory=True)


def test_a_tracked_folder_replaced_by_a_link_out_of_the_repository_is_not_read(
    repo: Path,
    tmp_path: Path,
    write: Callable[..., Any],
    commit: Callable[..., Any],
    build: Callable[..., Any],
    opened: Callable[..., Any],
) -> None:
    write(repo, {"conf/passwd": "tracked passwd\n", "conf/shadow": "tracked shadow\n"})
    commit(repo, "Add conf")
    swap_for_link(repo / "conf", outside_folder(tmp_path))
    stats = build(repo)
    reasons = dict(stats.skipped_files)
    assert reasons["conf/passwd"] == "a parent folder is a symbolic link out of the repository"
    assert "conf/shadow" in reasons
    assert not {"conf/passwd", "conf/shadow"} & {n.path for n in opened(repo).nodes.files()}
    assert OUTSIDE_MARK.encode() not in index_bytes(repo)


def test_a_folder_replaced_by_a_link_after_indexing_leaves_the_index_on_refresh(
    repo: Path,
    tmp_path: Path,
    write: Callable[..., Any],
    commit: Callable[..., Any],
    build: Callable[..., Any],
    opened: Callable[..., Any],
) -> None:
    write(repo, {"conf/passwd": "tracked passwd\n"})
    commit(repo, "Add conf")
    build(repo)
    swap_for_link(repo / "conf", outside_folder(tmp_path))
    build(repo)
    assert "conf/passwd" not in {n.path for n in opened(repo).nodes.files()}
    assert OUTSIDE_MARK.encode() not in index_bytes(repo)


def test_a_folder_swapped_for_a_link_between_discovery_and_reading_is_not_read(
    repo: Path, tmp_path: Path, write: Callable[..., Any]
) -> None:
    write(repo, {"conf/passwd": "tracked passwd\n"})
    found = discovery.discover(repo)
    candidate = next(c for c in found.candidates if c.path == "conf/passwd")
    swap_for_link(repo / "conf", outside_folder(tmp_path))
    outcome = discovery.read_file(repo, candidate, discovery.DEFAULT_MAX_FILE_SIZE)
    assert isinstance(outcome, discovery.Skip)
    assert "symbolic link" in outcome.reason


def test_a_file_replaced_by_a_link_between_discovery_and_reading_is_not_read(
    repo: Path, tmp_path: Path
) -> None:
    found = discovery.discover(repo)
    candidate = next(c for c in found.candidates if c.path == "shop/util.py")
    (repo / "shop" / "util.py").unlink()
    (repo / "shop" / "util.py").symlink_to(outside_folder(tmp_path) / "passwd")
    outcome = discovery.read_file(repo, candidate, discovery.DEFAULT_MAX_FILE_SIZE)
    assert isinstance(outcome, discovery.Skip)
    assert "symbolic link" in outcome.reason


def test_a_link_to_a_file_of_the_repository_is_indexed_once_under_the_file_s_own_path(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    (repo / "alias.py").symlink_to(repo / "shop" / "util.py")
    stats = build(repo)
    paths = [n.path for n in opened(repo).nodes.files()]
    assert "shop/util.py" in paths
    assert "alias.py" not in paths
    assert dict(stats.skipped_files)["alias.py"] == "symbolic link to shop/util.py"


def test_a_link_with_an_innocent_name_to_a_secret_file_is_not_read(
    repo: Path, build: Callable[..., Any], write: Callable[..., Any]
) -> None:
    write(repo, {".env": "SESSION_WORDS=correct-horse-battery-staple\n"})
    (repo / "notes.txt").symlink_to(repo / ".env")
    build(repo)
    assert b"correct-horse-battery-staple" not in index_bytes(repo)


def test_a_served_file_behind_a_link_now_is_refused_at_read_time(
    repo: Path, tmp_path: Path, write: Callable[..., Any], commit: Callable[..., Any]
) -> None:
    write(repo, {"conf/passwd": "tracked passwd\n"})
    commit(repo, "Add conf")
    project = WarmProject("demo", repo, refresh_interval_s=3600)
    try:
        project.refresh()
        assert project.read_file("conf/passwd") == "tracked passwd\n"
        swap_for_link(repo / "conf", outside_folder(tmp_path))
        with pytest.raises(KnowledgeBaseError, match="not a file of project demo"):
            project.read_file("conf/passwd")
        with pytest.raises(KnowledgeBaseError, match="not a file of project demo"):
            project.read_file("../shop-repo-outside.txt")
    finally:
        project.close()
