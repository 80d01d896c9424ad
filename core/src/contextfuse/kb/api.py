"""The embedded index's Python API: where it lives, open its backends and its plan store.

Nothing here asks the plugins: ``contextfuse.kb.repository`` builds an index with the
installed index contributors and opens a repository's store through its backend provider.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contextfuse.backends import BackendSet
from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb import freshness
from contextfuse.kb.files import DEFAULT_MAX_FILE_SIZE
from contextfuse.kb.graph import SQLiteGraphBackend
from contextfuse.kb.history import SQLiteTemporalBackend
from contextfuse.kb.layout import DEFAULT_INDEX_DIR
from contextfuse.kb.nodes import SQLiteNodeStore
from contextfuse.kb.plans import SQLitePlanStore, ensure_plan_schema, has_plan_schema
from contextfuse.kb.store import DB_NAME, Database
from contextfuse.kb.text import SQLiteTextBackend
from contextfuse.kb.vector import SQLiteVectorBackend
from contextfuse.repo_root import find_repo_root
from contextfuse.tokenizer import Tokenizer, default_tokenizer

__all__ = [
    "index_dir_of",
    "index_exists",
    "index_path",
    "index_unchanged",
    "open_plan_store",
    "open_sqlite_backends",
    "resolve_root",
]

PathLike = str | os.PathLike[str]


def resolve_root(path: PathLike = ".") -> Path:
    """The folder to index: ``"."`` means the current project (see
    :func:`contextfuse.repo_root.find_repo_root`), any other path that folder."""
    if str(path) == ".":
        return find_repo_root(Path.cwd())
    return Path(path).expanduser().resolve()


def index_path(path: PathLike = ".", index_dir: PathLike | None = None) -> Path:
    """Where the index file of ``path`` lives (``<repo>/.contextfuse/index.db`` by default)."""
    root = resolve_root(path)
    directory = Path(index_dir).expanduser().resolve() if index_dir else root / DEFAULT_INDEX_DIR
    return directory / DB_NAME


def index_exists(path: PathLike = ".", *, index_dir: PathLike | None = None) -> bool:
    """True when ``path`` has an index file (whether it is valid is checked on open)."""
    return index_path(path, index_dir).is_file()


def index_dir_of(root: Path, index_dir: PathLike | None = None) -> Path:
    """The index directory of the repository ``root`` (resolved)."""
    return (Path(index_dir).expanduser() if index_dir else root / DEFAULT_INDEX_DIR).resolve()


def index_unchanged(
    path: PathLike = ".",
    *,
    index_dir: PathLike | None = None,
    contributors: Sequence[Any] = (),
    tokenizer: Tokenizer | None = None,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    project: str | None = None,
) -> bool:
    """True when an index run with these arguments would change nothing.

    Answered from file-system stats in milliseconds (see ``contextfuse.kb.freshness``); False
    whenever that cannot be proven, e.g. before the first run, or when ``project`` names the
    index otherwise than it is named (the run renames it).
    """
    root = resolve_root(path)
    tokenizer = tokenizer or default_tokenizer()
    settings = freshness.settings(tokenizer.name, max_file_size, contributors)
    return freshness.unchanged(root, index_dir_of(root, index_dir), settings, project)


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
