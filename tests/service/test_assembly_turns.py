"""Assemblies take turns: at most ``assemblies_at_once`` run in a process at a time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from contextfuse.models import ContextPayload
from contextfuse.server.projects import ProjectPool, WarmProject
from contextfuse.server.settings import ServerSettings


class CountingProject(WarmProject):
    """A served project that records how many of its assemblies run at the same time."""

    def __init__(self, name: str, repo: Path, *, together: int = 1) -> None:
        super().__init__(name, repo, refresh_interval_s=3600)
        self._count = threading.Lock()
        self._running = 0
        self.most = 0
        # ``together`` assemblies must meet here, or the barrier breaks after its timeout.
        self._meet = threading.Barrier(together, timeout=10) if together > 1 else None

    def assemble(self, query: str, budget: int, **options: Any) -> ContextPayload:
        with self._count:
            self._running += 1
            self.most = max(self.most, self._running)
        try:
            if self._meet is not None:
                self._meet.wait()
            time.sleep(0.1)  # long enough for the other requests to arrive meanwhile
            return super().assemble(query, budget, **options)
        finally:
            with self._count:
                self._running -= 1


def served(project: CountingProject) -> ProjectPool:
    pool = ProjectPool({}, refresh_interval_s=3600)
    pool.projects = {project.name: project}
    project.refresh()
    return pool


def ask_at_once(url: str, count: int) -> list[int]:
    """``count`` assemblies sent together; their status codes."""

    def ask(i: int) -> int:
        body = {"project": "demo", "query": f"add numbers {i}", "budget": 500}
        return httpx.post(f"{url}/v1/assemble", json=body, timeout=60).status_code

    with ThreadPoolExecutor(count) as clients:
        return list(clients.map(ask, range(count)))


def test_requests_beyond_the_limit_wait_their_turn(
    tmp_path: Path, new_repo: Callable[[Path], Path], serve: Callable[..., Any]
) -> None:
    project = CountingProject("demo", new_repo(tmp_path / "demo"))
    with serve(ServerSettings(assemblies_at_once=1), served(project)) as url:
        assert ask_at_once(url, 6) == [200] * 6
    assert project.most == 1


def test_assemblies_at_once_run_side_by_side(
    tmp_path: Path, new_repo: Callable[[Path], Path], serve: Callable[..., Any]
) -> None:
    project = CountingProject("demo", new_repo(tmp_path / "demo"), together=3)
    with serve(ServerSettings(assemblies_at_once=3), served(project)) as url:
        assert ask_at_once(url, 6) == [200] * 6
    assert project.most == 3
