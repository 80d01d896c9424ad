"""Turning one file into what the index stores, in this process or in worker processes.

Everything here is independent of the database, so a large run can spread files over
processes (parsing is pure Python, bound by one core per process).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import hashlib
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb import files as discovery
from contextfuse.kb.diskspace import disk_full_error, is_disk_full
from contextfuse.kb.links import extract_facts
from contextfuse.kb.parse import parse
from contextfuse.kb.render import render_file
from contextfuse.kb.tokens import count_renderings
from contextfuse.kb.vectorizers import NodeVectorizer, vectorize
from contextfuse.kb.writer import FileRecord, fts_rows
from contextfuse.tokenizer import Tokenizer

__all__ = [
    "Outcome",
    "Todo",
    "Unchanged",
    "index_lock",
    "lock_holder",
    "paused_gc",
    "process_batch",
    "process_file",
    "process_files",
    "worker_started",
]


@attrs.frozen(slots=True)
class Todo:
    """A file to read: what discovery found, and what the index holds for it (if anything)."""

    candidate: discovery.Candidate
    language: str
    resource_type: str
    plan: str  # the parser it gets now
    previous_sha256: str | None  # None: not indexed yet, or to be parsed regardless


@attrs.frozen(slots=True)
class Unchanged:
    """A file whose stat changed but whose content did not."""

    path: str
    size: int
    mtime_ns: int


#: What reading a file gives: skipped, unchanged, or a record to write.
Outcome = discovery.Skip | Unchanged | FileRecord


def process_file(
    root: Path, project: str, item: Todo, max_size: int, tokenizer: Tokenizer | None = None
) -> Outcome:
    """Read, classify, parse and render one file; with ``tokenizer``, count its tokens too."""
    return process_files(root, project, [item], max_size, tokenizer)[0]


def process_files(
    root: Path,
    project: str,
    items: Sequence[Todo],
    max_size: int,
    tokenizer: Tokenizer | None = None,
    vectorizers: list[NodeVectorizer] | None = None,
) -> list[Outcome]:
    """:func:`process_file` for several files; with ``vectorizers``, their nodes' vectors too
    (one call per vectorizer for all the files: see ``contextfuse.kb.vectorizers``)."""
    outcomes = [_parsed(root, project, item, max_size) for item in items]
    records = [outcome for outcome in outcomes if isinstance(outcome, FileRecord)]
    if vectorizers:
        found = vectorize(vectorizers, [record.drafts for record in records])
        for record, rows in zip(records, found, strict=True):
            record.vectors = rows
    if tokenizer is not None:
        for record in records:
            record.token_counts = count_renderings(tokenizer, record.drafts)
            for draft in record.drafts:
                draft.drop_source_texts()  # counted: the index slices them from the content
    return outcomes


def _parsed(root: Path, project: str, item: Todo, max_size: int) -> Outcome:
    candidate = item.candidate
    result = discovery.read_file(root, candidate, max_size)
    if isinstance(result, discovery.Skip):
        return result
    data, text = result
    digest = hashlib.sha256(data).hexdigest()
    if digest == item.previous_sha256:
        return Unchanged(candidate.path, candidate.size, candidate.mtime_ns)
    content = text.text
    lines = content.split("\n")
    parsed = parse(content, lines, item.language, candidate.path)
    drafts = render_file(project, candidate.path, lines, parsed)
    search = fts_rows(
        candidate.path,
        parsed.language,
        content,
        [(d.kind, d.name, d.qualname, d.own_text) for d in drafts],
    )
    facts = extract_facts(parsed, drafts)
    for draft in drafts:
        draft.own_text = ""  # no longer needed: do not carry it across processes
    return FileRecord(
        path=candidate.path,
        size=candidate.size,
        mtime_ns=candidate.mtime_ns,
        sha256=digest,
        language=parsed.language,
        resource_type=item.resource_type,
        plan=item.plan,
        content=content,
        facts=facts,
        redactions=text.redactions,
        note=parsed.note,
        drafts=drafts,
        search=search,
    )


def process_batch(
    root: Path, project: str, items: Sequence[Todo], max_size: int, tokenizer: Tokenizer | None
) -> list[Outcome]:
    """:func:`process_files` in a worker process (its unit of work), with the tokenizer it
    keeps and the vectorizers it was started with (:func:`worker_started`)."""
    tokenizer = _kept(tokenizer)
    with paused_gc():
        return process_files(root, project, items, max_size, tokenizer, _VECTORIZERS)


#: The vectorizers of a worker process (``worker_started``); one that fails leaves the list.
_VECTORIZERS: list[NodeVectorizer] = []


#: The tokenizer a worker process counts with, by name: the first one it was sent.
_TOKENIZERS: dict[str, Tokenizer] = {}


def _kept(tokenizer: Tokenizer | None) -> Tokenizer | None:
    """This process's tokenizer of the same name as ``tokenizer`` (which comes unpickled with
    every batch), so that what it loads or learns is kept from one batch to the next.

    tiktoken's tokenizer counts its first two million characters with a pure-Python encoder
    (building its own costs 0.1 s, worth it for an index run only): a fresh copy per batch of
    40 files counted every file of a run that way (Django: 20.7 s of the workers' CPU, 16.6 s
    with the tokenizer kept). A worker counts megabytes, so the one it keeps is told to load
    its full encoder at once (``prepare_bulk``, where the tokenizer has it): the first two
    million characters cost it 1.5 s with the pure-Python encoder, 0.3 s without.
    """
    if tokenizer is None:
        return None
    kept = _TOKENIZERS.get(tokenizer.name)
    if kept is None:
        kept = _TOKENIZERS[tokenizer.name] = tokenizer
        prepare = getattr(kept, "prepare_bulk", None)
        if callable(prepare):
            prepare()
    return kept


def worker_started(parent: int, vectorizers: Sequence[NodeVectorizer] = ()) -> None:
    """Initializer of a worker process: keep ``vectorizers``; die with the indexer that
    started it.

    A worker killed with its parent never outlives it: on Linux the kernel sends it SIGKILL
    when the parent dies (``PR_SET_PDEATHSIG``); a parent already gone when this runs (it died
    between the fork and here) ends the worker at once. Forked workers share the parent's
    open files, the index lock's included: an orphan would hold the lock forever.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the check below still covers a gone parent
            pass
    if os.getppid() != parent:
        os._exit(1)
    _VECTORIZERS[:] = vectorizers


_PR_SET_PDEATHSIG = 1


@contextlib.contextmanager
def index_lock(path: Path, notes: list[str]) -> Iterator[None]:
    """One index run at a time per index; a second one waits for the first.

    The holder writes its process id into the lock file and empties it when done. The lock
    itself (``flock``) goes with its holder's death, so finding a process id there when the
    lock is taken means a run was killed: the lock is taken over and ``notes`` says so.
    """
    try:
        import fcntl
    except ImportError:  # Windows: SQLite's own locking still serialises the writes
        yield
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        raise _lock_error(path, exc) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            if holder and holder != str(os.getpid()):
                notes.append(
                    f"the index lock was held by process {holder}, which ended without "
                    "releasing it (killed?); it was taken over"
                )
            os.ftruncate(fd, 0)
            try:
                os.pwrite(fd, str(os.getpid()).encode(), 0)
            except OSError as exc:
                raise _lock_error(path, exc) from exc
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _lock_error(path: Path, exc: OSError) -> KnowledgeBaseError:
    if is_disk_full(exc):
        return disk_full_error(path.parent)
    return KnowledgeBaseError(f"cannot lock the index ({path}): {exc}")


def lock_holder(path: Path) -> str:
    """The process id written in a lock file (empty: none, or unreadable)."""
    try:
        return path.read_text("ascii", "replace").strip()
    except OSError:
        return ""


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while parsing.

    Parsing allocates millions of short-lived acyclic objects; every collection pass would
    walk all of them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
