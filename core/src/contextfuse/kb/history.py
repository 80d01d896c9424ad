"""The repository's history: commits, what each changed, renames and co-change counts.

Read with ``git log -p -U0`` (one subprocess, no rename detection: fastest) and
incrementally: only commits after the last HEAD seen are read. Of each diff only a summary
is kept: lines added and removed per file, the names git's hunk headers give (the
function or class a change is in), and the identifiers of the changed lines, which go to
a full-text table with the message and the paths. A second, cheaper ``git log`` finds
renames, so that a commit about a file that moved still points to where it lives now.
A folder without git, or git not installed, has no history and never fails.
"""

from __future__ import annotations

import itertools
import os
import re
import sqlite3
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import attrs

from contextfuse.backends import Commit, FileChange, SearchHit
from contextfuse.kb import secrets
from contextfuse.kb.store import Database
from contextfuse.kb.terms import STOPWORDS, parts_text, path_terms, weighted_query_terms

__all__ = ["HistoryUpdate", "SQLiteTemporalBackend", "git_head", "update_history"]

#: Commits touching more files than this are bulk changes (reformatting, vendoring); their
#: files did not change *together* in any useful sense, and their pairs would dominate.
MAX_COCHANGE_FILES = 50
#: Distinct identifiers of changed lines kept per commit for search: enough to find a
#: commit by what it changed, bounded so that a vendoring commit costs no more than others.
MAX_DIFF_WORDS = 400
#: Symbols kept per file and commit.
MAX_FILE_SYMBOLS = 12
_FORMAT = "--format=%x01%H%x00%ct%x00%an%x00%B%x00"
#: git's built-in hunk-header patterns, chosen by extension (a repository's own
#: .gitattributes still wins): without them a Python method's hunk names its class.
_DRIVERS = {
    "python": ("py", "pyi"),
    "rust": ("rs",),
    "golang": ("go",),
    "java": ("java", "kt"),
    "cpp": ("c", "h", "cc", "cpp", "hpp"),
    "csharp": ("cs",),
    "ruby": ("rb",),
    "php": ("php",),
    "markdown": ("md",),
}
_HUNK = re.compile(r"^@@ [^@\n]* @@ ?(.*)$", re.MULTILINE)
_NO_NEWLINE = "\\ No newline at end of file"
#: Characters of a file's changed lines read for identifiers (the cap on words comes first
#: for most commits; this bounds the scan of a huge one).
_DIFF_WORDS_CHARS = 65_536
_DEFINED = re.compile(
    r"\b(?:def|class|func|fn|function|struct|enum|trait|interface|impl|type|module)\s+"
    r"(?:\([^)]*\)\s*)?([A-Za-z_]\w*)"
)
_CALLABLE = re.compile(r"([A-Za-z_]\w*)\s*\(")
_HEADING = re.compile(r"^#+\s*(.+)$")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


#: ``(id, sha, timestamp, author, message)`` of the commits table.
_CommitRow = tuple[int, str, int, str, str]


@attrs.frozen(slots=True)
class HistoryUpdate:
    """What :func:`update_history` did."""

    head: str | None
    added: int
    rebuilt: bool


@attrs.define(slots=True)
class _Change:
    added: int = 0
    removed: int = 0
    symbols: dict[str, None] = attrs.field(factory=dict)  # ordered set


@attrs.define(slots=True)
class _Parsed:
    sha: str
    timestamp: int
    author: str
    message: str
    changes: dict[str, _Change]
    words: dict[str, None]


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


def _clear(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM commits")
    conn.execute("DELETE FROM commit_files")
    conn.execute("DELETE FROM cochange")
    conn.execute("DELETE FROM renames")
    conn.execute("INSERT INTO commit_fts (commit_fts) VALUES ('delete-all')")


def update_history(conn: sqlite3.Connection, root: Path, last_head: str | None) -> HistoryUpdate:
    """Add the commits after ``last_head`` (all of them when it is no longer an ancestor).

    Runs inside the caller's transaction.
    """
    head = git_head(root)
    if head is None:
        if last_head is not None:
            _clear(conn)
        return HistoryUpdate(None, 0, rebuilt=last_head is not None)
    if head == last_head:
        return HistoryUpdate(head, 0, rebuilt=False)
    rebuilt = (
        last_head is None or _git(root, "merge-base", "--is-ancestor", last_head, head) is None
    )
    if rebuilt:  # history was rewritten (rebase, reset): start over
        _clear(conn)
    revisions = head if rebuilt else f"{last_head}..{head}"
    with tempfile.TemporaryDirectory(prefix="contextfuse-git-") as tmp:
        attributes = Path(tmp) / "attributes"
        attributes.write_text(
            "".join(f"*.{ext} diff={driver}\n" for driver, exts in _DRIVERS.items() for ext in exts)
        )
        out = _git(
            root,
            "-c",
            f"core.attributesFile={attributes}",
            "-c",
            "core.quotePath=false",
            "log",
            "-p",
            "-U0",
            "--no-renames",
            "--no-color",
            "--no-ext-diff",
            "--relative",
            _FORMAT,
            revisions,
            "--",
            ".",
        )
    commits = list(_parse_log(out or b""))
    known = {row[0] for row in conn.execute("SELECT sha FROM commits")} if not rebuilt else set()
    commits = [c for c in commits if c.sha not in known]
    ids = _insert(conn, commits)
    _insert_renames(conn, root, revisions, ids)
    return HistoryUpdate(head, len(commits), rebuilt)


def _parse_log(out: bytes) -> Iterator[_Parsed]:
    for record in out.decode("utf-8", "replace").split("\x01"):
        fields = record.split("\0", 4)
        if len(fields) < 5:
            continue
        sha, timestamp, author, message, patch = fields
        message = secrets.redact(message.strip()).text  # a pasted token is a secret too
        yield _parse_patch(_Parsed(sha, int(timestamp), author, message, {}, {}), patch)


def _parse_patch(commit: _Parsed, patch: str) -> _Parsed:
    """Lines added and removed, hunk names and changed identifiers of each file's diff.

    String methods and regular expressions over whole sections (C speed): a release commit's
    patch can be tens of megabytes.

    Nothing of a secret reaches the summary: a file that is a secret by name (``.env``)
    gives only its line counts, and the other files' changed lines and hunk headers are
    redacted like the files themselves before any word is taken from them.
    """
    words = commit.words
    for section in f"\n{patch}".split("\ndiff --git ")[1:]:
        header, _, body = section.partition("\n")
        path = _diff_path(f"diff --git {header}")
        if not path:
            continue
        at = f"\n{body}".find("\n@@")
        hunks = f"\n{body[at:]}" if at >= 0 else ""
        change = commit.changes.setdefault(path, _Change())
        change.added += hunks.count("\n+")
        change.removed += hunks.count("\n-")
        if secrets.secret_file_reason(path) or not hunks:
            continue
        for context in _HUNK.findall(hunks):
            name = _symbol(secrets.redact(context, path).text)
            if name and len(change.symbols) < MAX_FILE_SYMBOLS:
                change.symbols[name] = None
                words.update(dict.fromkeys(_WORDS.findall(name)))
        if len(words) < MAX_DIFF_WORDS:
            changed = _changed_lines(hunks[:_DIFF_WORDS_CHARS])
            for word in _WORDS.findall(secrets.redact(changed, path).text):
                words[word] = None
                if len(words) >= MAX_DIFF_WORDS:
                    break
    return commit


def _changed_lines(hunks: str) -> str:
    """The text of a diff's added and removed lines, without their ``+``/``-`` marks.

    As the file holds them, so the redaction reads them as it reads the file (an
    assignment at the start of a line, a key block over several lines).
    """
    return "\n".join(
        line[1:] for line in hunks.split("\n") if line[:1] in ("+", "-") and line != _NO_NEWLINE
    )


def _diff_path(line: str) -> str:
    """The new-side path of a ``diff --git a/X b/X`` line (renames are off: X == X)."""
    rest = line[len("diff --git ") :]
    if rest.startswith('"'):  # a quoted path (control characters): keep what is readable
        rest = rest.replace('"', "")
    half = rest.find(" b/")
    return rest[half + 3 :] if half >= 0 else ""


def _symbol(context: str) -> str:
    """The name a hunk header's context line defines or starts (``def save(self):`` -> save)."""
    found = _DEFINED.search(context)
    if found:
        return found.group(1)
    heading = _HEADING.match(context)
    if heading:
        return heading.group(1).strip()[:80]
    found = _CALLABLE.search(context)
    return found.group(1) if found else ""


def _insert(conn: sqlite3.Connection, commits: list[_Parsed]) -> list[tuple[int, _Parsed]]:
    pairs: Counter[tuple[str, str]] = Counter()
    inserted: list[tuple[int, _Parsed]] = []
    for commit in reversed(commits):  # oldest first: ids grow with time
        cursor = conn.execute(
            "INSERT INTO commits (sha, timestamp, author, message) VALUES (?, ?, ?, ?)",
            (commit.sha, commit.timestamp, commit.author, commit.message),
        )
        commit_id = int(cursor.lastrowid or 0)
        inserted.append((commit_id, commit))
        conn.executemany(
            "INSERT INTO commit_files (commit_id, path, added, removed, symbols) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (commit_id, path, change.added, change.removed, " ".join(change.symbols))
                for path, change in commit.changes.items()
            ],
        )
        words = " ".join(commit.words)
        conn.execute(
            "INSERT INTO commit_fts (rowid, message, paths, diff) VALUES (?, ?, ?, ?)",
            (
                commit_id,
                f"{commit.message}\n{parts_text(commit.message)}",
                " ".join(path_terms(path) for path in commit.changes),
                f"{words}\n{parts_text(words)}",
            ),
        )
        if 2 <= len(commit.changes) <= MAX_COCHANGE_FILES:
            pairs.update(itertools.combinations(sorted(commit.changes), 2))
    conn.executemany(
        "INSERT INTO cochange (a, b, count) VALUES (?, ?, ?) "
        "ON CONFLICT (a, b) DO UPDATE SET count = count + excluded.count",
        [(a, b, n) for (a, b), n in pairs.items()],
    )
    return inserted


def _insert_renames(
    conn: sqlite3.Connection, root: Path, revisions: str, inserted: list[tuple[int, _Parsed]]
) -> None:
    if not inserted:
        return
    out = _git(
        root,
        "log",
        "-M",
        "--diff-filter=R",
        "--name-status",
        "-z",
        "--relative",
        "--format=%x01%H",
        revisions,
        "--",
        ".",
    )
    ids = {commit.sha: commit_id for commit_id, commit in inserted}
    rows: list[tuple[int, str, str]] = []
    for record in (out or b"").decode("utf-8", "replace").split("\x01"):
        fields = record.strip("\n").split("\0")
        commit_id = ids.get(fields[0].strip())
        if commit_id is None:
            continue
        entries = [f.strip("\n") for f in fields[1:]]
        for i in range(len(entries) - 2):
            if entries[i].startswith("R") and entries[i][1:].isdigit():
                rows.append((commit_id, entries[i + 1], entries[i + 2]))
    conn.executemany("INSERT INTO renames (commit_id, old, new) VALUES (?, ?, ?)", rows)


class SQLiteTemporalBackend:
    """``TemporalBackend`` over the index file."""

    #: Query terms searched at most (each OR-ed term adds its posting list to the scan).
    MAX_QUERY_TERMS = 16
    #: Share of the commits above which a term is too common to search, when there are
    #: ``ENOUGH_TERMS`` others.
    COMMON_SHARE = 0.05
    ENOUGH_TERMS = 4
    #: Renames followed at most from one path (a cycle a -> b -> a stops here too).
    MAX_RENAME_HOPS = 20

    def __init__(self, db: Database, project: str) -> None:
        self._db = db
        self._project = project
        self._prefix = f"project://{project}/"

    def _path(self, path: str) -> str:
        # Accept a file URI as well as a repository-relative path.
        return path.removeprefix(self._prefix).split("#", 1)[0]

    def commit_uri(self, sha: str) -> str:
        """``commit://<project>/<sha>``."""
        return f"commit://{self._project}/{sha}"

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
            return self._with_files(conn, rows)

    def _with_files(self, conn: sqlite3.Connection, rows: Sequence[_CommitRow]) -> list[Commit]:
        """Commits of ``(id, sha, timestamp, author, message)`` rows, with their changes."""
        changes: dict[int, list[FileChange]] = {}
        ids = [row[0] for row in rows]
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            for commit_id, file_path, added, removed, symbols in conn.execute(
                "SELECT commit_id, path, added, removed, symbols FROM commit_files "
                f"WHERE commit_id IN ({marks}) ORDER BY rowid",
                chunk,
            ):
                changes.setdefault(commit_id, []).append(
                    FileChange(file_path, added, removed, tuple(symbols.split()))
                )
        out: list[Commit] = []
        for cid, sha, timestamp, author, message in rows:
            found = tuple(changes.get(cid, ()))
            out.append(Commit(sha, timestamp, author, message, tuple(c.path for c in found), found))
        return out

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

    def search(self, query: str, limit: int = 50) -> list[SearchHit]:
        """Commits whose message, paths or changed code match ``query``, best first.

        BM25 over the commit full-text table (message weighs most); the query keeps its
        rarest terms, like the code search.
        """
        if limit <= 0:
            return []
        weights = weighted_query_terms(query)
        terms = self._select_terms(weights)
        if not terms:
            return []
        match = " OR ".join(f'"{term}"' for term in terms)
        rows = self._db.read(
            "SELECT c.sha, bm25(commit_fts, 4.0, 1.5, 1.0) AS rank FROM commit_fts "
            "JOIN commits c ON c.id = commit_fts.rowid WHERE commit_fts MATCH ? "
            "ORDER BY rank LIMIT ?",
            (match, limit),
        )
        return [SearchHit(self.commit_uri(sha), -float(rank)) for sha, rank in rows]

    def _select_terms(self, weights: Mapping[str, float]) -> list[str]:
        """The terms worth searching: in the history, code-like first, then the rarest.

        Terms in more than ``COMMON_SHARE`` of the commits (``fix``, ``update`` in most
        histories) cost the most to scan and rank little; they are left out while at least
        ``ENOUGH_TERMS`` others remain.
        """
        candidates = [t for t in weights if t not in STOPWORDS]
        if not candidates:
            return []
        with self._db.snapshot() as conn:
            frequency: dict[str, int] = {}
            for term in candidates:
                row = conn.execute(
                    "SELECT doc FROM commit_vocab WHERE term = ?", (term,)
                ).fetchone()
                if row:
                    frequency[term] = int(row[0])
            total = conn.execute("SELECT count(*) FROM commits").fetchone()[0]
        present = sorted(frequency, key=lambda t: (-weights[t], frequency[t]))
        common = total * self.COMMON_SHARE
        kept = [t for t in present if frequency[t] <= common]
        if len(kept) < self.ENOUGH_TERMS:
            rest = sorted((t for t in present if frequency[t] > common), key=frequency.__getitem__)
            kept += rest[: self.ENOUGH_TERMS - len(kept)]
        return kept[: self.MAX_QUERY_TERMS]

    def get_commits(self, shas: Sequence[str]) -> dict[str, Commit]:
        """These commits (full shas or ``commit://`` URIs) with their files and changes."""
        wanted = [sha.rsplit("/", 1)[-1] for sha in shas]
        found: dict[str, Commit] = {}
        with self._db.snapshot() as conn:
            for chunk in _chunks(wanted):
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    "SELECT id, sha, timestamp, author, message FROM commits "
                    f"WHERE sha IN ({marks})",
                    chunk,
                ).fetchall()
                for commit in self._with_files(conn, rows):
                    found[commit.sha] = commit
        return found

    def current_path(self, path: str) -> str:
        """Where ``path`` lives now, following the renames of the history (itself if none)."""
        current = self._path(path)
        seen = {current}
        for _ in range(self.MAX_RENAME_HOPS):
            rows = self._db.read(
                "SELECT new FROM renames WHERE old = ? ORDER BY commit_id DESC LIMIT 1",
                (current,),
            )
            if not rows or rows[0][0] in seen:
                break
            current = str(rows[0][0])
            seen.add(current)
        return current


def _chunks(values: Sequence[object], size: int = 500) -> list[Sequence[object]]:
    return [values[i : i + size] for i in range(0, len(values), size)]
