"""Warm projects: one assembler per served project, refreshed incrementally, shared by threads.

Assemblies of a project run concurrently (each thread reads the index through its own SQLite
connection, or a pooled one of a server store such as PostgreSQL); a refresh waits for them
to finish, rebuilds the index incrementally and swaps the backends, while new assemblies
wait for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from contextfuse.assembler import ContextAssembler
from contextfuse.config import load_config
from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb.files import inside_repository
from contextfuse.kb.tiers import tier_store_of
from contextfuse.models import ContextPayload

__all__ = ["ProjectPool", "ReadWriteLock", "WarmProject"]

logger = logging.getLogger(__name__)


class ReadWriteLock:
    """Many readers or one writer; a waiting writer holds off new readers."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    def acquire_read(self) -> None:
        """Enter as a reader."""
        with self._cond:
            while self._writing or self._writers_waiting:
                self._cond.wait()
            self._readers += 1

    def release_read(self) -> None:
        """Leave as a reader."""
        with self._cond:
            self._readers -= 1
            if not self._readers:
                self._cond.notify_all()

    def acquire_write(self) -> None:
        """Enter as the only writer."""
        with self._cond:
            self._writers_waiting += 1
            while self._writing or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writing = True

    def release_write(self) -> None:
        """Leave as the writer."""
        with self._cond:
            self._writing = False
            self._cond.notify_all()


class WarmProject:
    """A served project: its assembler, kept warm and refreshed at most every interval."""

    def __init__(
        self,
        name: str,
        repo: Path,
        *,
        refresh_interval_s: float,
        store: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.repo = repo
        config = load_config(repo).with_index(store=store)
        # The URIs name the project as served, whatever its folder's name.
        self.assembler = ContextAssembler(repo, config=config, project=name)
        self._interval = refresh_interval_s
        self._clock = clock
        self._lock = ReadWriteLock()
        self._refreshing = threading.Lock()
        self._refreshed_at: float | None = None
        self._open = False
        #: Why the last refresh failed (the index served is then the one before it), or None.
        self.problem: str | None = None

    def refresh(self) -> Any:
        """Refresh the index incrementally and reopen its backends; returns the index stats.

        A refresh that fails (a full disk, say) leaves the index as it was: when there is
        one, it is served on, ``problem`` says why it is not fresh, and the next refresh is
        tried an interval later. With no index to serve, the error is raised.
        """
        with self._refreshing:
            return self._refresh()

    def _refresh(self) -> Any:
        if self._open and self.problem is None and self.assembler.unchanged():
            # Proven from stats alone: requests go on, nothing is locked or reopened.
            self._refreshed_at = self._clock()
            return None
        self._lock.acquire_write()
        try:
            if self._open:
                self.assembler.backends.nodes.close()
            try:
                stats = self.assembler.refresh(force=True)
            except KnowledgeBaseError as exc:
                if not self.assembler.has_index():
                    raise
                stats = None
                if str(exc) != self.problem:  # said once, not at every interval
                    logger.warning("project %s: serving the index as it was: %s", self.name, exc)
                self.problem = str(exc)
            else:
                if self.problem is not None:
                    logger.warning("project %s: the index is fresh again", self.name)
                self.problem = None
            self._open = self.assembler.backends is not None  # opens them now, not per request
            self._refreshed_at = self._clock()
            return stats
        finally:
            self._lock.release_write()

    def _due(self) -> bool:
        return self._refreshed_at is None or self._clock() - self._refreshed_at >= self._interval

    def assemble(self, query: str, budget: int, **options: Any) -> ContextPayload:
        """Assemble context (refreshing first when the interval has passed)."""
        # One thread refreshes at a time; requests arriving meanwhile wait for the new index.
        if self._due() and self._refreshing.acquire(blocking=False):
            try:
                if self._due():
                    self._refresh()
            finally:
                self._refreshing.release()
        self._lock.acquire_read()
        try:
            return self.assembler.assemble(query, budget, **options)
        finally:
            self._lock.release_read()

    def strategies(self) -> list[dict[str, Any]]:
        """The registry's view of every strategy, judged against this project's index."""
        self._lock.acquire_read()
        try:
            rows: list[dict[str, Any]] = self.assembler.registry.describe(self.assembler.backends)
            return rows
        finally:
            self._lock.release_read()

    def file_paths(self) -> list[str]:
        """Repository-relative paths of the indexed files."""
        self._lock.acquire_read()
        try:
            return [node.path for node in self.assembler.backends.nodes.files()]
        finally:
            self._lock.release_read()

    def read_file(self, path: str) -> str:
        """The indexed (redacted) text of the file at ``path``, repository-relative.

        Refused when the path leads through a symbolic link now, whatever the index holds.
        A file read is promoted to the hot tier (``contextfuse.kb.tiers``).

        :raises KnowledgeBaseError: the path is not served (not indexed, or behind a link).
        """
        if not inside_repository(self.repo, path):
            raise KnowledgeBaseError(f"{path} is not a file of project {self.name}")
        self._lock.acquire_read()
        try:
            nodes = self.assembler.backends.nodes
            uri = f"project://{nodes.project}/{path}"
            renderings = nodes.get_renderings([uri]).get(uri, {})
            tiers = tier_store_of(self.assembler.backends) if renderings else None
            if tiers is not None:
                tiers.touch([path])
        finally:
            self._lock.release_read()
        if not renderings:
            raise KnowledgeBaseError(f"{path} is not in the index of project {self.name}")
        content: str = renderings[max(renderings)].content
        return content

    def close(self) -> None:
        """Close the index."""
        self._lock.acquire_write()
        try:
            if self._open:
                self.assembler.backends.nodes.close()
                self._open = False
        finally:
            self._lock.release_write()


class ProjectPool:
    """The projects a server was started with, by name.

    ``store`` (a backend provider's name or URL) serves every project; None: each
    project's own ``[index] store``.
    """

    def __init__(
        self,
        projects: Mapping[str, Path],
        *,
        refresh_interval_s: float,
        store: str | None = None,
    ) -> None:
        self.projects = {
            name: WarmProject(name, path, refresh_interval_s=refresh_interval_s, store=store)
            for name, path in projects.items()
        }

    def names(self) -> Sequence[str]:
        """Served project names, sorted."""
        return sorted(self.projects)

    def warm(self) -> None:
        """Index every project (incrementally) and open its backends."""
        for project in self.projects.values():
            project.refresh()

    def problems(self) -> dict[str, str]:
        """Why a project serves an index older than its last refresh, by project name."""
        return {
            name: project.problem
            for name, project in sorted(self.projects.items())
            if project.problem is not None
        }

    def get(self, name: str) -> WarmProject | None:
        """The project called ``name``, if served."""
        return self.projects.get(name)

    def close(self) -> None:
        """Close every project's index."""
        for project in self.projects.values():
            project.close()
