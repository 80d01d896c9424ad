"""A full disk, told apart from other storage errors and said in words a user can act on.

Every write to an index is one transaction: when the disk fills up half-way, SQLite rolls it
back and the index is as it was before the command. So the advice is never ``--rebuild``
(a rebuild needs more room, not less) but: free some space on that disk, run the command
again.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from pathlib import Path

from contextfuse.errors import KnowledgeBaseError

__all__ = ["disk_full_error", "full_disk", "is_disk_full", "shown_path"]

_FULL_ERRNOS = frozenset(
    code for code in (errno.ENOSPC, getattr(errno, "EDQUOT", None)) if code is not None
)
_SQLITE_FULL = 13  # sqlite3.SQLITE_FULL (Python 3.11+)
_FULL_MESSAGE = "database or disk is full"  # SQLite's text for SQLITE_FULL


def is_disk_full(exc: BaseException) -> bool:
    """True when ``exc`` says that no space was left to write (or the quota was reached)."""
    if isinstance(exc, OSError):
        return exc.errno in _FULL_ERRNOS
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
        if code is not None:
            return int(code) & 0xFF == _SQLITE_FULL
        return _FULL_MESSAGE in str(exc)
    return False


def disk_full_error(folder: Path) -> KnowledgeBaseError:
    """The error of a write to the index in ``folder`` that found its disk full."""
    return KnowledgeBaseError(
        f"{full_disk(folder)} is full: the index was left as it was. Free some space there, "
        "then run the same command again"
    )


def full_disk(folder: Path) -> str:
    """Which disk is full, when a write to the index in ``folder`` found no room:
    ``the disk holding .contextfuse (the file system mounted at /home)``."""
    full = _fullest(folder)
    where = f"the disk holding {shown_path(full)}"
    mount = _mount_point(full)
    if mount is not None and mount != full:
        where += f" (the file system mounted at {mount})"
    return where


def shown_path(path: Path) -> str:
    """``path`` as a user would name it: relative to the current folder when inside it,
    else under ``~`` when inside the home folder, else absolute."""
    try:
        here = Path.cwd()
    except OSError:  # the current folder was deleted
        here = None
    if here is not None and path.is_relative_to(here):
        return os.path.relpath(path, here)
    home = Path.home()
    if path != home and path.is_relative_to(home):
        return "~/" + path.relative_to(home).as_posix()
    return str(path)


def _fullest(folder: Path) -> Path:
    """Of the index folder and SQLite's folder for temporary files, the one with the least
    room left: a big sort spills to the latter, which may be a small RAM disk."""
    candidates = [folder]
    temp = _sqlite_temp_folder()
    if temp is not None:
        candidates.append(temp)
    room: list[tuple[int, int, Path]] = []
    for order, candidate in enumerate(candidates):
        try:
            room.append((shutil.disk_usage(candidate).free, order, candidate))
        except OSError:
            continue
    return min(room)[2] if room else folder


def _sqlite_temp_folder() -> Path | None:
    """Where SQLite writes its temporary files on Unix (``os_unix.c``, ``unixTempFileDir``)."""
    named = [os.environ.get("SQLITE_TMPDIR"), os.environ.get("TMPDIR")]
    for name in [*named, "/var/tmp", "/usr/tmp", "/tmp"]:
        if name and os.path.isdir(name) and os.access(name, os.W_OK | os.X_OK):
            return Path(name)
    return None


def _mount_point(path: Path) -> Path | None:
    """The top folder of the file system that holds ``path`` (None when it cannot be told)."""
    try:
        current = path.resolve()
        device = current.stat().st_dev
        while current.parent != current and current.parent.stat().st_dev == device:
            current = current.parent
    except OSError:
        return None
    return current
