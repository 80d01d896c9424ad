"""The backend provider: opens and indexes a project's store in a PostgreSQL database.

Selected by a URL (``--store postgresql://host/db``, ``[index] store = "postgresql://..."``);
the project is the repository folder's name unless ``config["project"]`` says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contextfuse.backends import BackendSet
from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb.files import DEFAULT_MAX_FILE_SIZE
from contextfuse.kb.indexer import IndexStats, ProgressCallback
from contextfuse.tokenizer import Tokenizer, default_tokenizer
from contextfuse_postgres.connection import display_url, open_pool, translated
from contextfuse_postgres.graph import PostgresGraphBackend
from contextfuse_postgres.history import PostgresTemporalBackend
from contextfuse_postgres.indexer import (
    PostgresIndexSession,
    fill_totals,
    index_project,
    run_contributors,
)
from contextfuse_postgres.nodes import PostgresNodeStore, Reader
from contextfuse_postgres.plans import PostgresPlanStore
from contextfuse_postgres.schema import migrate
from contextfuse_postgres.text import PostgresTextBackend
from contextfuse_postgres.vector import PostgresVectorBackend

__all__ = ["PostgresStoreProvider", "open_postgres_backends", "project_meta"]

#: When the URL is just the scheme, libpq takes everything from PG* variables or a service.
_DEFAULT_URL = "postgresql://"


def _url(config: Mapping[str, Any]) -> str:
    return str(config.get("url") or _DEFAULT_URL)


def _project(root: Path, config: Mapping[str, Any]) -> str:
    return str(config.get("project") or root.name)


def project_meta(pool: Any, url: str, project: str) -> dict[str, str] | None:
    """The project's stored facts (``indexed_at``, ``head``...), or None if never indexed."""
    with translated(url), pool.connection() as conn:
        row = conn.execute("SELECT meta FROM cf_projects WHERE project = %s", (project,)).fetchone()
    return None if row is None else dict(row[0])


def _migrated_pool(url: str, pool_size: int) -> Any:
    pool = open_pool(url, max_size=pool_size)
    try:
        with translated(url), pool.connection() as conn:
            migrate(conn)
    except BaseException:
        pool.close()
        raise
    return pool


def open_postgres_backends(
    url: str, project: str, *, pool_size: int = 8, tokenizer: Tokenizer | None = None
) -> BackendSet:
    """The backends of ``project`` in the database at ``url``. Close with ``nodes.close()``.

    :raises KnowledgeBaseError: the database cannot be reached or holds no index of the
        project (the message names the database without credentials).
    """
    tokenizer = tokenizer or default_tokenizer()
    pool = _migrated_pool(url, pool_size)
    try:
        meta = project_meta(pool, url, project)
        if meta is None or "indexed_at" not in meta:
            raise KnowledgeBaseError(
                f"{display_url(url)} holds no index of project {project!r}; build it with "
                f"`contextfuse index --store {display_url(url)}`"
            )
        reader = Reader(pool, url, project)
        with translated(url), pool.connection() as conn:
            has_vectors = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM cf_vectors WHERE project = %s)", (project,)
            ).fetchone()[0]
    except BaseException:
        pool.close()
        raise
    return BackendSet(
        nodes=PostgresNodeStore(reader),
        text=PostgresTextBackend(reader),
        vector=PostgresVectorBackend(reader) if has_vectors else None,
        graph=PostgresGraphBackend(reader),
        temporal=PostgresTemporalBackend(reader) if meta.get("git") == "1" else None,
        plans=PostgresPlanStore(reader, tokenizer),
        tokenizer=tokenizer,
    )


def _contributors(pm: Any) -> list[Any]:
    """The index contributors the plugins of ``pm`` offer (default: the installed plugins)."""
    if pm is None:
        from contextfuse.plugin_manager import make_plugin_manager

        pm = make_plugin_manager(on_error="warn")
    return [given.item for given in pm.collect("contextfuse_index_contributors")]


class PostgresStoreProvider:
    """Backend provider ``postgresql``: every backend of a project in a shared database."""

    provides: frozenset[str] = frozenset({"nodes", "text", "vector", "graph", "temporal", "plans"})

    def __init__(self, name: str = "postgresql") -> None:
        self.name = name

    def open(self, root: Path, config: Mapping[str, Any]) -> BackendSet:
        """The backends of ``root``'s project; ``config``: ``url``, optional ``project``."""
        return open_postgres_backends(_url(config), _project(root, config))

    def exists(self, root: Path, config: Mapping[str, Any]) -> bool:
        """True when the database holds an index of ``root``'s project."""
        url = _url(config)
        pool = _migrated_pool(url, 1)
        try:
            meta = project_meta(pool, url, _project(root, config))
        finally:
            pool.close()
        return meta is not None and "indexed_at" in meta

    def index(
        self,
        root: Path,
        config: Mapping[str, Any],
        *,
        rebuild: bool = False,
        progress: ProgressCallback | None = None,
        pm: Any = None,
        contributors: Sequence[Any] | None = None,
        tokenizer: Tokenizer | None = None,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        **_options: Any,
    ) -> IndexStats:
        """Build or refresh ``root``'s project in the database; returns what was done."""
        import multiprocessing
        import time

        if getattr(multiprocessing.current_process(), "_inheriting", False):
            # A worker process is importing a script that indexes at import time.
            raise KnowledgeBaseError(
                "index() was called while a worker process imported the main script; "
                "guard the script with `if __name__ == '__main__':`"
            )
        started = time.perf_counter()
        url = _url(config)
        project = _project(Path(root).resolve(), config)
        tokenizer = tokenizer or default_tokenizer()
        chosen = _contributors(pm) if contributors is None else list(contributors)
        pool = _migrated_pool(url, 2)
        try:
            with translated(url):
                stats, changed, removed = index_project(
                    pool,
                    Path(root).resolve(),
                    project,
                    location=display_url(url),
                    tokenizer=tokenizer,
                    rebuild=rebuild,
                    progress=progress,
                    max_file_size=max_file_size,
                )
                if chosen:
                    reader = Reader(pool, url, project)
                    session = PostgresIndexSession(
                        project=project,
                        root=Path(root).resolve(),
                        backends=BackendSet(
                            nodes=PostgresNodeStore(reader),
                            text=PostgresTextBackend(reader),
                            vector=PostgresVectorBackend(reader),
                            graph=PostgresGraphBackend(reader),
                            temporal=PostgresTemporalBackend(reader) if stats.git else None,
                            tokenizer=tokenizer,
                        ),
                        changed_uris=frozenset(changed),
                        removed_uris=frozenset(removed) - frozenset(changed),
                        pool=pool,
                        progress=progress,
                    )
                    run_contributors(session, chosen, stats)
                fill_totals(pool, project, stats)
        finally:
            pool.close()
        stats.seconds = time.perf_counter() - started
        return stats
