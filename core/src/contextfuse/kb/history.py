"""The repository's history: commits, the files each touched, and co-change counts.

Read with ``git log`` (one subprocess, NUL-separated, no rename detection: fastest), and
incrementally: only commits after the last HEAD seen are read. A folder without git, or git
not installed, has no history and never fails.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import attrs

from contextfuse.backends import Commit
from contextfuse.kb.store import Database

__all__ = ["HistoryUpdate", "SQLiteTemporalBackend", "git_head", "update_history"]

#: Commits touching more files than this are bulk changes (reformatting, vendoring); their
#: files did not change *together* in any useful sense, and their pairs would dominate.
MAX_COCHANGE_FILES = 50
_FORMAT = "--format=%x01%H%x00%ct%x00%an%x00%B%x00"


@attrs.frozen(slots=True)
class HistoryUpdate:
    """What :func:`update_history` did."""

    head: str | None
    added: int
    rebuilt: bool


def _git(root: Path, *args: str) -> bytes | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=root,
            capture_output=True,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def git_head(root: Path) -> str | None:
    """The commit HEAD points to, or None (no git, not a repository, no commit yet)."""
    out = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    return out.decode().strip() if out else None


def update_history(conn: sqlite3.Connection, root: Path, last_head: str | None) -> HistoryUpdate:
    """Add the commits after ``last_head`` (all of them when it is no longer an ancestor).

    Runs inside the caller's transaction.
    """
    head = git_head(root)
    if head is None:
        conn.execute("DELETE FROM commits")
        conn.execute("DELETE FROM commit_files")
        conn.execute("DELETE FROM cochange")
        return HistoryUpdate(None, 0, rebuilt=last_head is not None)
    if head == last_head:
        return HistoryUpdate(head, 0, rebuilt=False)
    rebuilt = (
        last_head is None or _git(root, "merge-base", "--is-ancestor", last_head, head) is None
    )
    if rebuilt:  # history was rewritten (rebase, reset): start over
        conn.execute("DELETE FROM commits")
        conn.execute("DELETE FROM commit_files")
        conn.execute("DELETE FROM cochange")
    revisions = head if rebuilt else f"{last_head}..{head}"
    out = _git(
        root,
        "log",
        "--no-renames",
        "--name-only",
        "-z",
        "--relative",
        _FORMAT,
        revisions,
        "--",
        ".",
    )
    commits = _parse_log(out or b"")
    known = {row[0] for row in conn.execute("SELECT sha FROM commits")} if not rebuilt else set()
    commits = [c for c in commits if c.sha not in known]
    _insert(conn, commits)
    return HistoryUpdate(head, len(commits), rebuilt)


def _parse_log(out: bytes) -> list[Commit]:
    commits: list[Commit] = []
    for record in out.decode("utf-8", "replace").split("\x01"):
        if not record:
            continue
        fields = record.split("\0")
        if len(fields) < 4:
            continue
        sha, timestamp, author, message = fields[:4]
        files = tuple(dict.fromkeys(f.lstrip("\n") for f in fields[4:] if f.strip("\n")))
        commits.append(Commit(sha, int(timestamp), author, message.strip(), files))
    return commits


def _insert(conn: sqlite3.Connection, commits: list[Commit]) -> None:
    pairs: Counter[tuple[str, str]] = Counter()
    for commit in reversed(commits):  # oldest first: ids grow with time
        cursor = conn.execute(
            "INSERT INTO commits (sha, timestamp, author, message) VALUES (?, ?, ?, ?)",
            (commit.sha, commit.timestamp, commit.author, commit.message),
        )
        conn.executemany(
            "INSERT INTO commit_files (commit_id, path) VALUES (?, ?)",
            [(cursor.lastrowid, path) for path in commit.files],
        )
        if 2 <= len(commit.files) <= MAX_COCHANGE_FILES:
            pairs.update(itertools.combinations(sorted(commit.files), 2))
    conn.executemany(
        "INSERT INTO cochange (a, b, count) VALUES (?, ?, ?) "
        "ON CONFLICT (a, b) DO UPDATE SET count = count + excluded.count",
        [(a, b, n) for (a, b), n in pairs.items()],
    )


class SQLiteTemporalBackend:
    """``TemporalBackend`` over the index file."""

    def __init__(self, db: Database, project: str) -> None:
        self._db = db
        self._prefix = f"project://{project}/"

    def _path(self, path: str) -> str:
        # Accept a file URI as well as a repository-relative path.
        return path.removeprefix(self._prefix).split("#", 1)[0]

    def commits(self, limit: int = 50, path: str | None = None) -> list[Commit]:
        """Most recent commits first, optionally only those touching ``path``."""
        with self._db.snapshot() as conn:
            if path is None:
                rows = conn.execute(
                    "SELECT id, sha, timestamp, author, message FROM commits "
                    "ORDER BY timestamp DESC, id DESC LIMIT ?",
                    (limit,),
                ).fetchall()
            else:
                rows = conn.execute(
                    "SELECT c.id, c.sha, c.timestamp, c.author, c.message FROM commits c "
                    "JOIN commit_files f ON f.commit_id = c.id WHERE f.path = ? "
                    "ORDER BY c.timestamp DESC, c.id DESC LIMIT ?",
                    (self._path(path), limit),
                ).fetchall()
            files: dict[int, list[str]] = {}
            ids = [row[0] for row in rows]
            for chunk in _chunks(ids):
                marks = ",".join("?" * len(chunk))
                for commit_id, file_path in conn.execute(
                    f"SELECT commit_id, path FROM commit_files WHERE commit_id IN ({marks})",
                    chunk,
                ):
                    files.setdefault(commit_id, []).append(file_path)
        return [
            Commit(sha, timestamp, author, message, tuple(files.get(cid, ())))
            for cid, sha, timestamp, author, message in rows
        ]

    def co_changed(self, path: str, limit: int = 20) -> list[tuple[str, int]]:
        """Files changed together with ``path``, with how often, most often first."""
        target = self._path(path)
        rows = self._db.read(
            "SELECT other, count FROM ("
            " SELECT b AS other, count FROM cochange WHERE a = ?"
            " UNION ALL SELECT a AS other, count FROM cochange WHERE b = ?"
            ") ORDER BY count DESC, other LIMIT ?",
            (target, target, limit),
        )
        return [(str(other), int(count)) for other, count in rows]


def _chunks(values: Sequence[int], size: int = 500) -> list[Sequence[int]]:
    return [values[i : i + size] for i in range(0, len(values), size)]
