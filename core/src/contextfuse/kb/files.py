"""Which files of a repository are indexed, and reading them safely.

Discovery lists what git would track (``git ls-files -co --exclude-standard``; without git,
a walk that honours ``.gitignore`` files with pathspec), then applies ``.contextfuseignore``
and drops the index directory, ``.git`` and symbolic links. Reading a file classifies it:
binary, too large, minified or generated, secret (by name), or text (decoded by
``contextfuse.kb.decode``: byte-order marks, UTF-16, declared encodings, else UTF-8), with
secrets in the text redacted.

No link is ever followed: a path is read only when none of its components is a symbolic
link, checked when it is listed (a tracked folder later replaced by a link is skipped) and
again when it is opened, one component at a time with ``O_NOFOLLOW``, so a folder swapped
for a link in between cannot lead out of the repository. A link to a file of the
repository is left out too: the file is indexed under its own path, once.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import attrs

from contextfuse.kb import secrets
from contextfuse.kb.decode import decode_text

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "Candidate",
    "Discovery",
    "FileText",
    "Skip",
    "discover",
    "git_toplevel",
    "inside_repository",
    "read_file",
    "read_inside",
]

DEFAULT_MAX_FILE_SIZE = 1_000_000  # bytes
IGNORE_FILE = ".contextfuseignore"
_MAX_LINE = 1_000  # a line longer than this marks a minified or generated file
#: Below this share of spaces in its long lines, a file reads as minified, not as prose
#: (English text is about 15% spaces; minified JavaScript 1-3%).
_MIN_BLANK_SHARE = 0.08
_GENERATED_NAMES = (
    ".min.js",
    ".min.css",
    ".js.map",
    ".css.map",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "uv.lock",
    "cargo.lock",
    "composer.lock",
    "pipfile.lock",
    "gemfile.lock",
    "go.sum",
)


@attrs.frozen(slots=True)
class Candidate:
    """A file that discovery kept: repository-relative POSIX path and its stat."""

    path: str
    size: int
    mtime_ns: int


@attrs.frozen(slots=True)
class Skip:
    """A file that is not indexed, and why."""

    path: str
    reason: str


@attrs.frozen(slots=True)
class Discovery:
    """The result of :func:`discover`."""

    candidates: list[Candidate]
    skipped: list[Skip]
    git: bool


@attrs.frozen(slots=True)
class FileText:
    """A text file as it will be indexed (newlines normalised, secrets redacted)."""

    text: str
    redactions: dict[str, int]


def git_toplevel(path: Path) -> Path | None:
    """The root of the git work tree containing ``path``, or None (no git, not a repo)."""
    out = _git(path, "rev-parse", "--show-toplevel")
    return Path(out.strip()) if out else None


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except OSError:  # git is not installed
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "surrogateescape")


def _git_files(root: Path) -> list[str] | None:
    # Run in ``root``: paths come relative to it, limited to its subtree.
    out = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if out is None:
        return None
    return sorted({name for name in out.split("\0") if name})


def _walk_files(root: str, pruned: tuple[str, ...]) -> Iterator[str]:
    """Every file under ``root`` not ignored by a ``.gitignore`` on its way (no git).

    ``pruned`` are relative folders (ending in ``/``) not to descend into.
    """
    specs: list[tuple[str, _Ignore]] = []
    prefix = len(root) + 1
    for dirpath, dirnames, filenames in os.walk(root):
        rel = dirpath[prefix:] + "/" if len(dirpath) > len(root) else ""
        specs = [(base, spec) for base, spec in specs if rel.startswith(base)]
        if ".gitignore" in filenames:
            with open(os.path.join(dirpath, ".gitignore"), encoding="utf-8", errors="replace") as f:
                specs.append((rel, _Ignore(f.read().splitlines())))
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d != ".git"
            and not (rel + d + "/").startswith(pruned)
            and not _ignored(specs, rel + d + "/")
        )
        for name in sorted(filenames):
            if not specs or not _ignored(specs, rel + name):
                yield rel + name


class _Ignore:
    """One ``.gitignore``: whether it ignores a path relative to its folder.

    A path can be ignored only when one of the non-negated patterns matches it, so those are
    tried first as one regular expression, and the patterns one by one (negations included)
    only for a path that one matches. A refresh of a tree without git matches every file
    against its ``.gitignore`` files; pattern by pattern, that was most of its time.
    """

    def __init__(self, lines: list[str]) -> None:
        import pathspec  # here: a command that only reads the index never needs it

        self._spec = pathspec.GitIgnoreSpec.from_lines(lines)
        active = [p for p in self._spec.patterns if p.include is not None]
        self._negated = any(not p.include for p in active)
        self._any: re.Pattern[str] | None = None
        sources = [getattr(p, "regex", None) for p in active if p.include]
        regexes = [r for r in sources if isinstance(r, re.Pattern)]
        if len(regexes) == len(sources):
            # The directory group's name would repeat in the alternation; only match counts.
            joined = "|".join(f"(?:{r.pattern.replace('(?P<ps_d>', '(?:')})" for r in regexes)
            try:
                self._any = re.compile(joined or "(?!)")
            except re.error:  # an unexpected pattern shape: match pattern by pattern
                self._any = None

    def match(self, path: str) -> bool:
        """Whether the file's patterns ignore ``path`` (directories end with ``/``)."""
        if self._any is not None:
            if self._any.match(path) is None:
                return False
            if not self._negated:
                return True
        return bool(self._spec.match_file(path))


def _ignored(specs: list[tuple[str, _Ignore]], path: str) -> bool:
    """Whether a ``.gitignore`` ignores ``path`` (relative to the root; dirs end with ``/``)."""
    return any(spec.match(path[len(base) :]) for base, spec in specs)


def discover(root: Path, *, exclude_dirs: tuple[Path, ...] = ()) -> Discovery:
    """List the files of ``root`` to index, with the ones left out and why.

    ``exclude_dirs`` (e.g. the index directory) are skipped silently, as is ``.git``.
    """
    root = root.resolve()
    excluded = tuple(
        d.resolve().relative_to(root).as_posix() + "/"
        for d in exclude_dirs
        if d.resolve().is_relative_to(root) and d.resolve() != root
    )
    base = str(root)
    names = _git_files(root)
    git = names is not None
    if names is None:
        names = list(_walk_files(base, excluded))
    import pathspec

    ignore = root / IGNORE_FILE
    spec = (
        # Not UTF-8 (a Latin-1 editor): the undecodable bytes match nothing, the rest applies.
        pathspec.GitIgnoreSpec.from_lines(ignore.read_text("utf-8", "replace").splitlines())
        if ignore.is_file()
        else None
    )
    candidates: list[Candidate] = []
    skipped: list[Skip] = []
    folders: dict[str, str | None] = {"": None}  # folder -> why its files are not read
    for name in names:
        if name.startswith(excluded) or name == ".git" or name.startswith(".git/"):
            continue
        if spec is not None and spec.match_file(name):
            skipped.append(Skip(name, f"ignored by {IGNORE_FILE}"))
            continue
        folder = name.rpartition("/")[0]
        if folder not in folders:
            folders[folder] = _folder_reason(base, folder)
        if folders[folder] is not None:
            skipped.append(Skip(name, str(folders[folder])))
            continue
        full = os.path.join(base, name)
        try:
            info = os.lstat(full)
        except OSError:  # listed by git but deleted since
            continue
        if stat.S_ISLNK(info.st_mode):
            skipped.append(Skip(name, _link_reason(Path(full), root)))
            continue
        if not stat.S_ISREG(info.st_mode):
            continue  # submodules, sockets, directories listed by git
        candidates.append(Candidate(name, info.st_size, info.st_mtime_ns))
    return Discovery(candidates, skipped, git)


def inside_repository(root: Path, path: str) -> bool:
    """True when ``root/path`` is where it says: a plain relative path, no link on its way."""
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return False
    base = str(root.resolve())
    where = os.path.join(base, *parts)
    return os.path.realpath(where) == where


def _folder_reason(base: str, folder: str) -> str | None:
    """Why the files of ``folder`` (relative to ``base``) are not read, or None.

    A folder is read only where it is: when one of its components is a symbolic link (a
    tracked folder replaced by a link, say), its real path differs from the path itself.
    """
    where = os.path.join(base, folder)
    real = os.path.realpath(where)
    if real == where:
        return None
    if real.startswith(base + os.sep):
        return "a parent folder is a symbolic link"
    return "a parent folder is a symbolic link out of the repository"


def _link_reason(full: Path, root: Path) -> str:
    """Why a symbolic link is not indexed (none is: see the module's docstring)."""
    try:
        target = full.resolve(strict=True)
    except (OSError, RuntimeError):
        return "broken symbolic link"
    if not target.is_relative_to(root):
        return "symbolic link leaves the repository"
    if target.is_dir():
        return "symbolic link to a directory"
    return f"symbolic link to {target.relative_to(root).as_posix()}"


def read_file(root: Path, candidate: Candidate, max_size: int) -> tuple[bytes, FileText] | Skip:
    """Read and classify one file: its raw bytes and indexable text, or why it is skipped."""
    path = candidate.path
    reason = secrets.secret_file_reason(path)
    if reason:
        return Skip(path, reason)
    if candidate.size > max_size:
        return Skip(path, f"larger than {max_size} bytes")
    lowered = path.lower()
    if lowered.endswith(_GENERATED_NAMES):
        return Skip(path, "generated or minified (by name)")
    try:
        data = read_inside(root, path, max_size + 1)
    except _NotHere as exc:
        return Skip(path, str(exc))
    except OSError as exc:
        return Skip(path, f"unreadable ({exc.strerror or exc})")
    if len(data) > max_size:
        return Skip(path, f"larger than {max_size} bytes")
    text = decode_text(data, path)
    if text is None:
        return Skip(path, "binary")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _minified(text):
        return Skip(path, "minified or generated (long lines with little whitespace)")
    found = secrets.redact(text, path)
    return data, FileText(found.text, dict(found.counts))


class _NotHere(OSError):
    """The path leads through a symbolic link, or to something that is not a file."""


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
# Non-blocking: a FIFO put in a file's place must not hang the indexer in open().
_FILE_FLAGS = os.O_RDONLY | _NO_FOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_SAFE_OPEN = bool(_NO_FOLLOW) and os.open in os.supports_dir_fd


def read_inside(root: Path, path: str, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file ``root/path``, following no link.

    Each component of ``path`` (repository-relative, ``/``-separated) is opened relative to
    the previous one with ``O_NOFOLLOW``: a link anywhere on the way, even one created after
    the path was listed, fails the read instead of leading elsewhere.

    :raises OSError: unreadable; ``_NotHere`` (a subclass) for a link or a non-file.
    """
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise _NotHere(f"not a plain relative path ({path!r})")
    if not _SAFE_OPEN:  # no O_NOFOLLOW or dir_fd (Windows): resolve and compare instead
        full = root.joinpath(*parts)
        if full.resolve() != root.resolve().joinpath(*parts):
            raise _NotHere("a symbolic link on the path (not followed)")
        with open(full, "rb") as plain:
            return plain.read(limit)
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(part, _DIR_FLAGS | _NO_FOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _NotHere("a parent folder is a symbolic link now (not followed)") from exc
                raise
            os.close(fd)
            fd = inner
        try:
            opened = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _NotHere("a symbolic link now (not followed)") from exc
            raise
    finally:
        os.close(fd)
    with os.fdopen(opened, "rb") as stream:
        if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            raise _NotHere("not a regular file now")
        data: bytes = stream.read(limit)
        return data


def _minified(text: str) -> bool:
    """True for minified or generated text, judged by its shape.

    Minified code is mostly very long lines with little whitespace. A hand-written file
    with one long line (a doc comment, a URL, a table row) is neither: its long lines hold a
    small share of the text, or read like prose.
    """
    if len(text) <= _MAX_LINE:
        return False
    long_lines = [line for line in text.split("\n") if len(line) > _MAX_LINE]
    if not long_lines:
        return False
    long_chars = sum(map(len, long_lines))
    if long_chars * 2 < len(text):
        return False
    blanks = sum(line.count(" ") + line.count("\t") for line in long_lines)
    return blanks < long_chars * _MIN_BLANK_SHARE
