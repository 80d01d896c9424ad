"""The knowledge base's Python API: build an index, open its backends."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextfuse.backends import BackendSet
from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb import freshness
from contextfuse.kb.files import DEFAULT_MAX_FILE_SIZE, git_toplevel
from contextfuse.kb.graph import SQLiteGraphBackend
from contextfuse.kb.history import SQLiteTemporalBackend
from contextfuse.kb.layout import DEFAULT_INDEX_DIR
from contextfuse.kb.nodes import SQLiteNodeStore
from contextfuse.kb.plans import SQLitePlanStore, ensure_plan_schema, has_plan_schema
from contextfuse.kb.store import DB_NAME, Database
from contextfuse.kb.text import SQLiteTextBackend
from contextfuse.kb.vector import SQLiteVectorBackend
from contextfuse.tokenizer import Tokenizer, default_tokenizer

if TYPE_CHECKING:  # the indexer is imported by the functions that index, when they run
    from contextfuse.kb.indexer import IndexStats, ProgressCallback

__all__ = [
    "contributors_of",
    "index",
    "index_exists",
    "index_path",
    "index_unchanged",
    "open_backends",
    "open_plan_store",
    "open_sqlite_backends",
    "resolve_root",
]

PathLike = str | os.PathLike[str]


def resolve_root(path: PathLike = ".") -> Path:
    """The folder to index: ``"."`` means the current repository (its top level), if any."""
    if str(path) == ".":
        cwd = Path.cwd()
        return git_toplevel(cwd) or cwd.resolve()
    return Path(path).expanduser().resolve()


def index_path(path: PathLike = ".", index_dir: PathLike | None = None) -> Path:
    """Where the index file of ``path`` lives (``<repo>/.contextfuse/index.db`` by default)."""
    root = resolve_root(path)
    directory = Path(index_dir).expanduser().resolve() if index_dir else root / DEFAULT_INDEX_DIR
    return directory / DB_NAME


def index_exists(path: PathLike = ".", *, index_dir: PathLike | None = None) -> bool:
    """True when ``path`` has an index file (whether it is valid is checked on open)."""
    return index_path(path, index_dir).is_file()


def index(
    path: PathLike = ".",
    *,
    index_dir: PathLike | None = None,
    rebuild: bool = False,
    progress: ProgressCallback | None = None,
    pm: Any = None,
    contributors: Sequence[Any] | None = None,
    tokenizer: Tokenizer | None = None,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    workers: int | None = None,
) -> IndexStats:
    """Build or refresh the index of a repository and return what was done.

    :param path: the repository (default: the current one).
    :param index_dir: where the index lives (default ``<repo>/.contextfuse``).
    :param rebuild: start from scratch; also replaces a corrupt or foreign index file.
    :param progress: called as ``progress(description, done, total)``.
    :param pm: the pluggy manager whose ``contextfuse_index_contributors`` hook supplies index
        contributors (default: the installed plugins).
    :param contributors: index contributors to run instead of asking ``pm``.
    :param tokenizer: counts the renderings' tokens (default: tiktoken ``cl100k_base``).
    :param max_file_size: larger files are skipped, in bytes.
    :param workers: processes that parse files. Default: one per CPU (at most 4) for large
        runs where processes can fork (Linux, no other thread running), else this process.
        A number above 1 forces worker processes; where they are spawned, the calling script
        needs the usual ``if __name__ == "__main__":`` guard.
    :raises KnowledgeBaseError: the index cannot be built or its file is corrupt or foreign.
    """
    from contextfuse.kb.indexer import build_index, prepare_index_dir

    root = resolve_root(path)
    directory = _index_dir(root, index_dir)
    tokenizer = tokenizer or default_tokenizer()
    found = contributors_of(pm) if contributors is None else list(contributors)
    prepare_index_dir(directory, root)
    before = freshness.survey(root, directory)  # before the run: a change during it shows
    stats = build_index(
        root,
        index_dir=directory,
        rebuild=rebuild,
        progress=progress,
        contributors=found,
        tokenizer=tokenizer,
        max_file_size=max_file_size,
        workers=workers,
    )
    settings = freshness.settings(tokenizer.name, max_file_size, found)
    freshness.write_snapshot(directory, before, settings)
    _map_arrays(root, directory)
    return stats


def _map_arrays(root: Path, directory: Path) -> None:
    """Write the array files of the new generation now, not in the first assembly after it.

    The vector matrix of each model and the graph's arrays of every edge kind (what the
    built-in strategies read) are built from the index once (``contextfuse.kb.arrays``); a
    strategy asking for other kinds builds those on first use.
    """
    import numpy as np

    try:
        backends = open_sqlite_backends(root, index_dir=directory)
    except KnowledgeBaseError:  # the first assembly will say what is wrong
        return
    try:
        if backends.vector is not None:
            for model in backends.vector.models():
                backends.vector.search(model, np.zeros(1, dtype=np.float32), limit=0)
        if backends.graph is not None:
            backends.graph.personalized_pagerank({}, limit=1)
    finally:
        backends.close()


def index_unchanged(
    path: PathLike = ".",
    *,
    index_dir: PathLike | None = None,
    pm: Any = None,
    contributors: Sequence[Any] | None = None,
    tokenizer: Tokenizer | None = None,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
) -> bool:
    """True when an :func:`index` run with these arguments would change nothing.

    Answered from file-system stats in milliseconds (see ``contextfuse.kb.freshness``); False
    whenever that cannot be proven, e.g. before the first run.
    """
    root = resolve_root(path)
    tokenizer = tokenizer or default_tokenizer()
    found = contributors_of(pm) if contributors is None else contributors
    settings = freshness.settings(tokenizer.name, max_file_size, found)
    return freshness.unchanged(root, _index_dir(root, index_dir), settings)


def _index_dir(root: Path, index_dir: PathLike | None) -> Path:
    return (Path(index_dir).expanduser() if index_dir else root / DEFAULT_INDEX_DIR).resolve()


def contributors_of(pm: Any) -> list[Any]:
    """The index contributors the plugins of ``pm`` supply (default: the installed plugins)."""
    if pm is None:
        try:
            from contextfuse.plugins import make_plugin_manager
        except ImportError:  # the plugin system is optional for the knowledge base
            return []
        pm = make_plugin_manager(on_error="warn")
    found: list[Any] = []
    for result in pm.hook.contextfuse_index_contributors():
        found.extend(result or ())
    return found


def open_backends(
    path: PathLike = ".",
    *,
    index_dir: PathLike | None = None,
    store: str | None = None,
    pm: Any = None,
) -> BackendSet:
    """The backends of a repository's store, from the backend provider ``store`` names.

    ``store`` is a provider name or a URL whose scheme names one (hook
    ``contextfuse_backend_providers``; ``pm`` is the plugin manager to ask); the default is
    the embedded SQLite store, see ``open_sqlite_backends``. Close with ``backends.close()``.
    """
    from contextfuse.stores import open_store

    return open_store(resolve_root(path), index_dir=index_dir, store=store, pm=pm)


def open_sqlite_backends(path: PathLike = ".", *, index_dir: PathLike | None = None) -> BackendSet:
    """The backends of an existing embedded index, for strategies to query.

    ``temporal`` is None when the repository has no git history and ``vector`` is None when
    no vectors are stored; ``plans`` is the plan and decision store (None only for an index
    built before it existed, until the next index run). Close with ``backends.close()``.

    :raises KnowledgeBaseError: there is no index, or its file is corrupt, foreign or was
        built by an incompatible version (the message says how to rebuild it).
    """
    root = resolve_root(path)
    db_path = index_path(root, index_dir)
    if not db_path.is_file():
        raise KnowledgeBaseError(f"no index at {db_path}; build it with `contextfuse index {root}`")
    db = Database(db_path)
    try:
        if db.check(create=False) == "outdated":
            raise KnowledgeBaseError(
                f"the index {db_path} was built by another version of contextfuse; "
                "rebuild it with `contextfuse index --rebuild`"
            )
        meta = dict(db.read("SELECT key, value FROM meta"))
        if "indexed_at" not in meta:  # created, but no index run has committed yet
            raise KnowledgeBaseError(
                f"{db_path} holds no index yet; build it with `contextfuse index {root}`"
            )
        has_vectors = bool(db.read("SELECT 1 FROM vectors LIMIT 1"))
        has_plans = has_plan_schema(db)
    except BaseException:
        db.close()
        raise
    project = meta.get("project", root.name)
    tokenizer = default_tokenizer()
    return BackendSet(
        nodes=SQLiteNodeStore(db, project),
        text=SQLiteTextBackend(db),
        vector=SQLiteVectorBackend(db) if has_vectors else None,
        graph=SQLiteGraphBackend(db),
        temporal=SQLiteTemporalBackend(db, project) if meta.get("git") == "1" else None,
        plans=SQLitePlanStore(db, project, tokenizer) if has_plans else None,
        tokenizer=tokenizer,
    )


def open_plan_store(
    path: PathLike = ".", *, index_dir: PathLike | None = None, tokenizer: Tokenizer | None = None
) -> SQLitePlanStore:
    """The plan and decision store of a repository, for reading and writing.

    It lives in the index file, which is created (empty) when the repository has no index
    yet; indexing later fills in the rest and keeps the plans. Close with ``store.close()``.

    :raises KnowledgeBaseError: the index file is foreign or corrupt, or its plan tables were
        written by a newer contextfuse.
    """
    from contextfuse.kb.indexer import prepare_index_dir

    root = resolve_root(path)
    db_path = index_path(root, index_dir)
    prepare_index_dir(db_path.parent, root)
    db = Database(db_path)
    try:
        db.check(create=True)
        conn = db.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            ensure_plan_schema(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        meta = dict(db.read("SELECT key, value FROM meta"))
    except BaseException:
        db.close()
        raise
    return SQLitePlanStore(db, meta.get("project", root.name), tokenizer)
