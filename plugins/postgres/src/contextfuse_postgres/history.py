"""The repository's history in PostgreSQL: reading it from git, and ``TemporalBackend``.

History is read incrementally like the SQLite store's: only the commits after the last HEAD
seen, all of them again when history was rewritten. Co-change counts are computed when
asked, from the files of each commit (bulk commits left out, as in the SQLite store).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from contextfuse.backends import Commit
from contextfuse.kb.history import MAX_COCHANGE_FILES, git_head
from contextfuse_postgres.nodes import Reader

__all__ = ["PostgresTemporalBackend", "update_history"]

_FORMAT = "--format=%x01%H%x00%ct%x00%an%x00%B%x00"


def _git_log(root: Path, revisions: str) -> list[Commit]:
    try:
        done = subprocess.run(
            [
                "git",
                "log",
                "--no-renames",
                "--name-only",
                "-z",
                "--relative",
                _FORMAT,
                revisions,
                "--",
                ".",
            ],
            cwd=root,
            capture_output=True,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except OSError:
        return []
    if done.returncode != 0:
        return []
    commits: list[Commit] = []
    for record in done.stdout.decode("utf-8", "replace").split("\x01"):
        fields = record.split("\0")
        if len(fields) < 4:
            continue
        sha, timestamp, author, message = fields[:4]
        files = tuple(dict.fromkeys(f.lstrip("\n") for f in fields[4:] if f.strip("\n")))
        commits.append(Commit(sha, int(timestamp), author, message.strip(), files))
    return commits


def _is_ancestor(root: Path, old: str, new: str) -> bool:
    done = subprocess.run(
        ["git", "merge-base", "--is-ancestor", old, new],
        cwd=root,
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def update_history(conn: Any, project: str, root: Path, last_head: str | None) -> tuple[str, int]:
    """Add the commits after ``last_head`` inside the caller's transaction.

    Returns the new HEAD (``""`` without git) and how many commits were added.
    """
    head = git_head(root)
    if head is None or last_head is None or not _is_ancestor(root, last_head, head):
        conn.execute("DELETE FROM cf_commits WHERE project = %s", (project,))
        conn.execute("DELETE FROM cf_commit_files WHERE project = %s", (project,))
        last_head = None
    if head is None:
        return "", 0
    if head == last_head:
        return head, 0
    commits = _git_log(root, head if last_head is None else f"{last_head}..{head}")
    start = conn.execute(
        "SELECT coalesce(max(seq), 0) FROM cf_commits WHERE project = %s", (project,)
    ).fetchone()[0]
    cursor = conn.cursor()
    with cursor.copy(
        "COPY cf_commits (project, sha, seq, timestamp, author, message) FROM STDIN"
    ) as copy:
        for offset, commit in enumerate(reversed(commits), 1):  # oldest first: seq grows
            copy.write_row(
                (
                    project,
                    commit.sha,
                    start + offset,
                    commit.timestamp,
                    commit.author,
                    commit.message,
                )
            )
    with cursor.copy("COPY cf_commit_files (project, sha, path) FROM STDIN") as copy:
        for commit in commits:
            for path in commit.files:
                copy.write_row((project, commit.sha, path))
    return head, len(commits)


class PostgresTemporalBackend:
    """``TemporalBackend`` of one project."""

    def __init__(self, reader: Reader) -> None:
        self._reader = reader
        self._prefix = f"project://{reader.project}/"

    def _path(self, path: str) -> str:
        # Accept a file URI as well as a repository-relative path.
        return path.removeprefix(self._prefix).split("#", 1)[0]

    def commits(self, limit: int = 50, path: str | None = None) -> list[Commit]:
        """Most recent commits first, optionally only those touching ``path``."""
        project = self._reader.project
        if path is None:
            rows = self._reader.read(
                "SELECT c.sha, c.timestamp, c.author, c.message,"
                " array(SELECT f.path FROM cf_commit_files f"
                '       WHERE f.project = c.project AND f.sha = c.sha ORDER BY f.path COLLATE "C")'
                " FROM cf_commits c WHERE c.project = %s"
                " ORDER BY c.timestamp DESC, c.seq DESC LIMIT %s",
                (project, limit),
            )
        else:
            rows = self._reader.read(
                "SELECT c.sha, c.timestamp, c.author, c.message,"
                " array(SELECT f.path FROM cf_commit_files f"
                '       WHERE f.project = c.project AND f.sha = c.sha ORDER BY f.path COLLATE "C")'
                " FROM cf_commits c WHERE c.project = %s AND c.sha IN"
                " (SELECT sha FROM cf_commit_files WHERE project = %s AND path = %s)"
                " ORDER BY c.timestamp DESC, c.seq DESC LIMIT %s",
                (project, project, self._path(path), limit),
            )
        return [
            Commit(str(sha), int(ts), str(author), str(message), tuple(files))
            for sha, ts, author, message, files in rows
        ]

    def co_changed(self, path: str, limit: int = 20) -> list[tuple[str, int]]:
        """Files changed together with ``path``, with how often, most often first."""
        rows = self._reader.read(
            "WITH mine AS (SELECT f.sha FROM cf_commit_files f WHERE f.project = %s"
            "   AND f.path = %s),"
            " sized AS (SELECT sha FROM cf_commit_files WHERE project = %s"
            "   AND sha IN (SELECT sha FROM mine) GROUP BY sha HAVING count(*) BETWEEN 2 AND %s)"
            " SELECT o.path, count(*) FROM cf_commit_files o JOIN sized s ON s.sha = o.sha"
            " WHERE o.project = %s AND o.path != %s"
            ' GROUP BY o.path ORDER BY count(*) DESC, o.path COLLATE "C" LIMIT %s',
            (
                self._reader.project,
                self._path(path),
                self._reader.project,
                MAX_COCHANGE_FILES,
                self._reader.project,
                self._path(path),
                limit,
            ),
        )
        return [(str(other), int(count)) for other, count in rows]
