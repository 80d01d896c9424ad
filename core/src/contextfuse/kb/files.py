"""Which files of a repository are indexed, and reading them safely.

Discovery lists what git would track (``git ls-files -co --exclude-standard``; without git,
a walk that honours ``.gitignore`` files with pathspec), then applies ``.contextfuseignore``
and drops the index directory, ``.git`` and links that leave the repository. Reading a file
classifies it: binary, too large, minified or generated, secret (by name), or text, with
secrets in the text redacted.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import attrs

from contextfuse.kb import secrets

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "Candidate",
    "Discovery",
    "FileText",
    "Skip",
    "discover",
    "git_toplevel",
    "read_file",
]

DEFAULT_MAX_FILE_SIZE = 1_000_000  # bytes
IGNORE_FILE = ".contextfuseignore"
_MAX_LINE = 1_000  # a line longer than this marks a minified or generated file
#: Below this share of spaces in its long lines, a file reads as minified, not as prose
#: (English text is about 15% spaces; minified JavaScript 1-3%).
_MIN_BLANK_SHARE = 0.08
_SNIFF = 8192
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
_TEXT_BYTES = bytes({7, 8, 9, 10, 12, 13, 27} | set(range(0x20, 0x100)) - {0x7F})


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
        pathspec.GitIgnoreSpec.from_lines(ignore.read_text("utf-8").splitlines())
        if ignore.is_file()
        else None
    )
    candidates: list[Candidate] = []
    skipped: list[Skip] = []
    for name in names:
        if name.startswith(excluded) or name == ".git" or name.startswith(".git/"):
            continue
        if spec is not None and spec.match_file(name):
            skipped.append(Skip(name, f"ignored by {IGNORE_FILE}"))
            continue
        full = os.path.join(base, name)
        try:
            info = os.lstat(full)
        except OSError:  # listed by git but deleted since
            continue
        if stat.S_ISLNK(info.st_mode):
            reason = _link_reason(Path(full), root)
            if reason:
                skipped.append(Skip(name, reason))
                continue
            info = os.stat(full)
        if not stat.S_ISREG(info.st_mode):
            continue  # submodules, sockets, directories listed by git
        candidates.append(Candidate(name, info.st_size, info.st_mtime_ns))
    return Discovery(candidates, skipped, git)


def _link_reason(full: Path, root: Path) -> str | None:
    try:
        target = full.resolve(strict=True)
    except (OSError, RuntimeError):
        return "broken symbolic link"
    if not target.is_relative_to(root):
        return "symbolic link leaves the repository"
    if target.is_dir():
        return "symbolic link to a directory"
    return None


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
        data = (root / path).read_bytes()
    except OSError as exc:
        return Skip(path, f"unreadable ({exc.strerror or exc})")
    if len(data) > max_size:
        return Skip(path, f"larger than {max_size} bytes")
    head = data[:_SNIFF]
    if b"\0" in head or len(head.translate(None, _TEXT_BYTES)) * 10 > len(head):
        return Skip(path, "binary")
    text = data.decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _minified(text):
        return Skip(path, "minified or generated (long lines with little whitespace)")
    found = secrets.redact(text, path)
    return data, FileText(found.text, dict(found.counts))


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
