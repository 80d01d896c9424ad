"""Whether an index is current, answered from file-system stats alone.

Every ``contextfuse assemble`` refreshes the index first. An index run walks the repository
(matching every file against its ``.gitignore`` files), stats every file, compares the stats
with the index and writes its bookkeeping in a transaction: 0.15-0.3 s for a project of
2,000 files, on every call, though nothing changed. After each run, a snapshot beside the
index (``fresh.json``) records what the run's outcome depended on besides the indexed files
themselves; :func:`unchanged` then answers "nothing changed" by stat calls alone, and the
run is skipped.

What makes a skipped run provably the same as a full one:

* Every file the index holds, and every file it left out by size, mtime and reason (binary,
  minified, evicted), is compared with the file system: size and mtime in nanoseconds, as
  the index run itself compares them. While the last run read any file too close to its
  last change to trust its stat (:data:`RACY_KEY`, :func:`clock`), nothing is proven.
* A file added, deleted or renamed changes the mtime of its folder. The snapshot holds the
  mtime of every folder the run could have found a file in (all of them but ``.git``, the
  index directory and folders that a ``.gitignore`` ignores whole, whose files neither git
  nor the walk lists), taken **before** the run: a change during the run shows up next
  time. A folder whose mtime was too recent to be trusted is recorded as never matching.
* What decides which files are listed: every ``.gitignore`` on the way,
  ``.contextfuseignore``, and with git the index (``git add``), ``HEAD`` and its branch (the
  history), ``info/exclude``, the repository's and the user's git configuration and global
  ignore file; each is compared by its stat (a missing one must still be missing).
* How files are parsed, counted and enriched: the parsers' versions (an editable install
  changes no ``site-packages`` folder), the tokenizer, the size limit, the index
  contributors, the git executable, and the installed packages (a new tree-sitter grammar
  or plugin changes the mtime of its ``site-packages`` folder).
* The index itself: its content generation (``contextfuse.kb.generation``) and its number of
  indexed and left-out files must be those the snapshot was written for, so any other writer
  (a rebuild, a tier eviction, another version) sends the next refresh down the full path.

Any doubt (no snapshot, an unreadable one, a failed stat) means "changed": the full run
decides, as it always did.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from contextfuse.kb import generation, parser_versions
from contextfuse.kb.store import DB_NAME

__all__ = [
    "CLOCK_NAME",
    "RACY_KEY",
    "RACY_NS",
    "SNAPSHOT_NAME",
    "Survey",
    "clock",
    "settings",
    "survey",
    "trusted",
    "unchanged",
    "write_snapshot",
]

SNAPSHOT_NAME = "fresh.json"
#: The ``meta`` key listing the files an index run read too close to their last change to be
#: kept by their stat next time: a change in the same clock tick keeps a file's size and
#: mtime (git's "racily clean" files). The next run reads them again, whatever their stat.
RACY_KEY = "racy"
_FORMAT = 1
#: Where the file-system clock is read: the mtime of this file, touched in the index directory.
CLOCK_NAME = "clock"
#: Without a file-system clock on the repository's device, an mtime this close to the
#: system time is not trusted: two seconds cover coarse file-system clocks (FAT keeps 2 s,
#: HFS+ 1 s) and a little skew of a network file system's clock.
RACY_NS = 2_000_000_000
_NEVER = -1  # a recorded mtime that no folder or file has
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
_GIT_CONFIGS = ("~/.gitconfig", "~/.config/git/config", "~/.config/git/ignore")


def clock(index_dir: Path, root: Path) -> int:
    """The file system's time now, for judging mtimes read from now on (see :func:`trusted`).

    A file changed again within the clock tick of its last change keeps its mtime (git's
    "racily clean" files): an mtime at or after this time cannot prove the file unchanged
    since. The time is the mtime of a file touched here, so it is read from the clock that
    stamps the repository's files, at its granularity; where the index directory is on
    another device, the system time less :data:`RACY_NS`.
    """
    marker = index_dir / CLOCK_NAME
    try:
        marker.touch()  # sets its mtime to the file system's time now
        if os.stat(root).st_dev == os.stat(index_dir).st_dev:
            return os.stat(marker).st_mtime_ns
    except OSError:
        pass
    return time.time_ns() - RACY_NS


class Survey:
    """Stats taken before an index run: folders, and the files that decide the listing."""

    def __init__(self, root: Path, taken_ns: int) -> None:
        self.root = root
        self.taken_ns = taken_ns
        self.folders: dict[str, int] = {}
        self.watched: dict[str, list[int] | None] = {}


def survey(root: Path, index_dir: Path) -> Survey:
    """Stat what a later :func:`unchanged` compares, before an index run of ``root``."""
    found = Survey(root, clock(index_dir, root))
    _walk_folders(found, index_dir)
    watched = [root / ".contextfuseignore", *(Path(p).expanduser() for p in _GIT_CONFIGS)]
    watched += _git_files(root)
    for path in watched:
        found.watched[str(path)] = _stat(path, found.taken_ns)
    return found


def _walk_folders(found: Survey, index_dir: Path) -> None:
    """Record every folder a file could be listed from, and every ``.gitignore`` on the way."""
    from contextfuse.kb.files import _Ignore, _ignored

    root = str(found.root)
    skipped = {os.path.normcase(str(index_dir))}
    stack: list[tuple[str, list[Any]]] = [(root, [])]
    while stack:
        folder, specs = stack.pop()
        rel = os.path.relpath(folder, root).replace(os.sep, "/")
        rel = "" if rel == "." else rel + "/"
        try:
            info = os.stat(folder)
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable: the index run could not list it either
        found.folders[rel] = trusted(info.st_mtime_ns, found.taken_ns)
        if any(e.name == ".gitignore" for e in entries):
            path = os.path.join(folder, ".gitignore")
            found.watched[path] = _stat(Path(path), found.taken_ns)
            with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as f:
                specs = [*specs, (rel, _Ignore(f.read().splitlines()))]
        for entry in entries:
            if entry.name == ".git" or not entry.is_dir(follow_symlinks=False):
                continue
            if os.path.normcase(entry.path) in skipped or _ignored(specs, rel + entry.name + "/"):
                continue
            stack.append((entry.path, specs))


def _git_files(root: Path) -> list[Path]:
    """The git files that decide what ``git ls-files`` lists and what the history holds."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir",
             "--show-toplevel"],
            cwd=root, capture_output=True, text=True, check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )  # fmt: skip
    except OSError:
        return []
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != 3:
        return []
    git_dir, common, top = (Path(line) for line in lines)
    files = [git_dir / "HEAD", git_dir / "index", common / "packed-refs", common / "config"]
    files.append(common / "info" / "exclude")
    with contextlib.suppress(OSError):
        head = (git_dir / "HEAD").read_text("utf-8").strip()
        if head.startswith("ref: "):
            files.append(common / head[5:])
    excludes = subprocess.run(
        ["git", "config", "--path", "core.excludesFile"], cwd=root, capture_output=True,
        text=True, check=False,
    ).stdout.strip()  # fmt: skip
    if excludes:
        files.append(Path(excludes).expanduser())
    # .gitignore files above the indexed folder, up to the work tree's top, apply too.
    parent = root.parent
    while top in parent.parents or parent == top:
        files.append(parent / ".gitignore")
        parent = parent.parent
    return files


def _stat(path: Path, taken_ns: int) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, trusted(info.st_mtime_ns, taken_ns), info.st_ino]


def trusted(mtime_ns: int, since_ns: int) -> int:
    """``mtime_ns``, or a value no mtime has if it is not before ``since_ns`` (:func:`clock`)."""
    return _NEVER if mtime_ns >= since_ns else mtime_ns


def settings(tokenizer: str, max_file_size: int, contributors: Iterable[Any]) -> dict[str, Any]:
    """What else an index run's outcome depends on (compared as a whole).

    A contributor is told apart by its name, its class and its optional ``fingerprint`` (a
    string naming its configuration, e.g. the embedding model); the environment variables
    that configure plugins (``CONTEXTFUSE_*``) and git (``GIT_*``, ``HOME``,
    ``XDG_CONFIG_HOME``) count by a digest of their values, and those whose names say they
    hold a secret are left out.
    """
    names = sorted(
        f"{getattr(c, 'name', '')}|{type(c).__module__}.{type(c).__qualname__}|"
        f"{getattr(c, 'fingerprint', '')}"
        for c in contributors
    )
    # git reads the user's configuration and its GIT_* variables: another user, another
    # listing of the same folder.
    configured = sorted(
        (k, v)
        for k, v in os.environ.items()
        if k.startswith(("CONTEXTFUSE_", "GIT_", "XDG_CONFIG_HOME", "HOME"))
        and not any(w in k for w in _SECRET_WORDS)
    )
    packages = {}
    for entry in sys.path:
        if os.path.basename(entry) in ("site-packages", "dist-packages"):
            with contextlib.suppress(OSError):
                packages[entry] = os.stat(entry).st_mtime_ns
    return {
        "tokenizer": tokenizer,
        "parsers": parser_versions.fingerprint(),
        "max_file_size": max_file_size,
        "contributors": names,
        "environment": hashlib.sha256(json.dumps(configured).encode()).hexdigest(),
        "git": shutil.which("git") or "",
        "packages": packages,
    }


def write_snapshot(index_dir: Path, found: Survey, config: dict[str, Any]) -> None:
    """Record ``found`` for the index as it now is (after a successful run); best effort."""
    try:
        with contextlib.closing(_connect(index_dir)) as conn:
            state = _state(conn)
    except (OSError, sqlite3.Error):
        return
    if state is None:
        return
    data = {
        "format": _FORMAT,
        "root": str(found.root),
        "settings": config,
        "state": state,
        "folders": found.folders,
        "watched": found.watched,
    }
    target = index_dir / SNAPSHOT_NAME
    tmp = index_dir / f".{SNAPSHOT_NAME}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps(data), "utf-8")
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def unchanged(
    root: Path, index_dir: Path, config: dict[str, Any], project: str | None = None
) -> bool:
    """True when nothing that an index run of ``root`` reads has changed since the last one
    (and the index is named ``project``, when one is given: another name renames it)."""
    try:
        data = json.loads((index_dir / SNAPSHOT_NAME).read_text("utf-8"))
        if data.get("format") != _FORMAT or data.get("root") != str(root):
            return False
        if data.get("settings") != config:
            return False
        if not _same_stats(data["watched"].items()):
            return False
        if not _same_folders(root, data["folders"]):
            return False
        with contextlib.closing(_connect(index_dir)) as conn:
            conn.execute("BEGIN")  # one snapshot of the index for the checks below
            if _state(conn) != data["state"]:
                return False
            racy = conn.execute("SELECT value FROM meta WHERE key = ?", (RACY_KEY,)).fetchone()
            if racy is not None and json.loads(racy[0]):
                return False
            if project is not None:
                named = conn.execute("SELECT value FROM meta WHERE key = 'project'").fetchone()
                if named is None or named[0] != project:
                    return False
            base = str(root)
            rows = conn.execute(
                "SELECT path, size, mtime_ns FROM files UNION ALL"
                " SELECT path, size, mtime_ns FROM skipped WHERE size != 0 OR mtime_ns != 0"
            ).fetchall()
        for path, size, mtime_ns in rows:
            info = os.stat(base + "/" + path)
            if info.st_size != size or info.st_mtime_ns != mtime_ns:
                return False
    except (OSError, ValueError, KeyError, TypeError, AttributeError, sqlite3.Error):
        return False
    return True


def _same_stats(items: Iterable[tuple[str, Sequence[int] | None]]) -> bool:
    for path, recorded in items:
        try:
            info = os.stat(path)
        except OSError:
            if recorded is not None:
                return False
            continue
        if recorded is None or recorded[1] == _NEVER:
            return False
        if [info.st_size, info.st_mtime_ns, info.st_ino] != list(recorded):
            return False
    return True


def _same_folders(root: Path, folders: dict[str, int]) -> bool:
    base = str(root)
    for rel, mtime_ns in folders.items():
        if mtime_ns == _NEVER:
            return False
        if os.stat(os.path.join(base, rel) if rel else base).st_mtime_ns != mtime_ns:
            return False
    return True


def _connect(index_dir: Path) -> sqlite3.Connection:
    """A connection that reads the index file (never creates one)."""
    db = index_dir / DB_NAME
    if not db.is_file():
        raise FileNotFoundError(db)
    return sqlite3.connect(db, isolation_level=None)


def _state(conn: sqlite3.Connection) -> list[Any] | None:
    """The index's generation and its number of indexed and left-out files."""
    token = generation.current(conn)
    if token is None:
        return None
    files = conn.execute("SELECT count(*) FROM files").fetchone()[0]
    skipped = conn.execute("SELECT count(*) FROM skipped").fetchone()[0]
    return [token, int(files), int(skipped)]
