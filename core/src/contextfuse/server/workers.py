"""The service in several processes: workers answer requests, the main process refreshes.

One Python process answers one request at a time on the CPU (the GIL), whatever its
threads: a project the size of flask costs about 60 ms of CPU per assembly, so one process
tops out near 16 requests a second. ``contextfuse serve --workers N`` starts N worker
processes (spawned: a clean interpreter each, on every platform with ``flock``) that
accept connections on one listening socket, each with its own warm assemblers reading the
same index files. The main process indexes every project before the workers start, then
refreshes them every ``refresh_interval_s``: when file-system stats prove nothing changed
(``contextfuse.kb.freshness``) nothing is locked or written; otherwise it takes each
project's :class:`~contextfuse.server.gate.ServiceGate` exclusively for the run, so no
worker answers from an index some of whose transactions are committed and some not.
A worker follows the index's generation and reopens its backends when it changed.

A worker that dies is started again; the main process stops them all (SIGTERM, which
uvicorn turns into a graceful shutdown) when it is interrupted or terminated.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import multiprocessing
import os
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, MutableSequence
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

from contextfuse.backends import BackendSet
from contextfuse.errors import ConfigError, KnowledgeBaseError
from contextfuse.kb import generation
from contextfuse.kb.store import Database
from contextfuse.models import ContextPayload
from contextfuse.server.gate import ServiceGate, gates_supported
from contextfuse.server.projects import ProjectPool, WarmProject
from contextfuse.server.settings import ServerSettings

__all__ = ["ServedPool", "ServedProject", "serve_workers", "warm_backends"]

logger = logging.getLogger(__name__)

_EMPTY = np.zeros(1, dtype=np.float32)
_STOP_GRACE_S = 30.0  # a stopping worker finishes the requests under way within this
_RESTART_PAUSE_S = 1.0  # between restarts of a worker that keeps dying


class ServedProject(WarmProject):
    """A project in a worker process: it reads the index that the main process refreshes."""

    def __init__(
        self, name: str, repo: Path, *, gate: ServiceGate, store: str | None = None
    ) -> None:
        super().__init__(name, repo, refresh_interval_s=math.inf, store=store)
        self._gate = gate
        self._generation: str | None = None

    def assemble(self, query: str, budget: int, **options: Any) -> ContextPayload:
        """Assemble context from the index as the last complete refresh left it."""
        with self._gate.shared():
            self._read_current()
            try:
                return self.assembler.assemble(query, budget, **options)
            finally:
                self._lock.release_read()

    def strategies(self) -> list[dict[str, Any]]:
        """The registry's view of every strategy, judged against this project's index."""
        with self._gate.shared():
            self._read_current()
            try:
                rows: list[dict[str, Any]] = self.assembler.registry.describe(
                    self.assembler.backends
                )
                return rows
            finally:
                self._lock.release_read()

    def _read_current(self) -> None:
        """Enter as a reader of backends opened on the index as it now is.

        The backends are only ever used, and compared with the index, under the lock: a
        reopening (under the write lock) closes connections no request holds. A store
        without generations (a server database) is read live and never reopened.
        """
        while True:
            self._lock.acquire_read()
            if self._open and self._current_generation() == self._generation:
                return
            self._lock.release_read()
            self._lock.acquire_write()
            try:
                if not self._open or self._current_generation() != self._generation:
                    self.assembler.reopen()
                    self._generation = self._current_generation()
                    self._open = True
            finally:
                self._lock.release_write()

    def _current_generation(self) -> str | None:
        database = getattr(self.assembler.backends.nodes, "database", None)
        return generation.read_key(database) if isinstance(database, Database) else None

    def warm(self) -> None:
        """Open the backends and map the arrays every request reads (the vector matrices,
        the graph's), so that the first request pays for neither."""
        with self._gate.shared():
            self._read_current()
            try:
                warm_backends(self.assembler.backends)
            finally:
                self._lock.release_read()


def warm_backends(backends: BackendSet) -> None:
    """Map the arrays every request reads (the vector matrices, the graph's), so that the
    first request pays for neither."""
    if backends.vector is not None:
        for model in backends.vector.models():
            backends.vector.search(model, _EMPTY, limit=0)  # loads, returns []
    backends.graph.personalized_pagerank({}, limit=1)


class ServedPool(ProjectPool):
    """The projects of a worker process, each behind its gate in ``locks``."""

    def __init__(self, projects: Mapping[str, Path], *, locks: Path, store: str | None) -> None:
        self.projects: dict[str, WarmProject] = {
            name: ServedProject(name, path, gate=ServiceGate(locks, name), store=store)
            for name, path in projects.items()
        }


def serve_workers(settings: ServerSettings, *, announce: Callable[[str], None] = print) -> None:
    """Serve with ``settings.workers`` worker processes until interrupted."""
    from contextfuse.server.run import bind

    if not gates_supported():
        raise ConfigError(
            "more than one worker needs flock (Linux, macOS, BSD); on this system serve "
            "with one worker",
            section="server",
            key="workers",
        )
    settings.check_exposure()
    pool = ProjectPool(
        settings.projects, refresh_interval_s=settings.refresh_interval_s, store=settings.store
    )
    pool.warm()  # every project indexed here, once, before any worker reads it
    sock = bind(settings.host, settings.port)
    try:
        with tempfile.TemporaryDirectory(prefix="contextfuse-serve-") as locks:
            gates = {name: ServiceGate(Path(locks), name) for name in pool.names()}
            supervisor = _Supervisor(settings, sock, Path(locks))
            supervisor.start()
            host, port = sock.getsockname()[:2]
            announce(f"http://{f'[{host}]' if ':' in host else host}:{port}")
            supervisor.run(lambda: _refresh_all(pool, gates))
    finally:
        sock.close()
        pool.close()


def _refresh_all(pool: ProjectPool, gates: Mapping[str, ServiceGate]) -> None:
    """Refresh every project whose files changed, its workers locked out meanwhile.

    A run that fails (a full disk) leaves the index as it was and the workers serve it on
    (see :meth:`WarmProject.refresh`); the service never stops for it.
    """
    for name in pool.names():
        project = pool.projects[name]
        if project.problem is None and project.assembler.unchanged():
            continue
        with gates[name].exclusive():
            try:
                project.refresh()
            except KnowledgeBaseError as exc:  # no index at all: the next interval tries again
                logger.warning("project %s: the index could not be built: %s", name, exc)


class _Supervisor:
    """Starts the worker processes, restarts the ones that die, stops them all at the end."""

    def __init__(self, settings: ServerSettings, sock: socket.socket, locks: Path) -> None:
        self._settings = settings
        self._sock = sock
        self._locks = locks
        self._context = multiprocessing.get_context("spawn")
        self._workers: list[Any] = []
        self._stop = threading.Event()
        # Requests under way per worker, shared with them all (server/balance.py).
        self._loads = self._context.RawArray("i", settings.workers)

    def start(self) -> None:
        """Start every worker and wait until each listens."""
        events = []
        for slot in range(self._settings.workers):
            process, ready = self._spawn(slot)
            self._workers.append(process)
            events.append((process, ready))
        for process, ready in events:
            while not ready.wait(0.1):
                if not process.is_alive():
                    self.stop()
                    raise ConfigError(f"a worker process exited with {process.exitcode}")

    def _spawn(self, slot: int) -> tuple[Any, Any]:
        ready = self._context.Event()
        self._loads[slot] = 0  # a worker that died answering left its count behind
        # The settings (token and store URL included) reach the worker through a pipe,
        # never its command line.
        process = self._context.Process(
            target=_worker_main,
            args=(
                self._settings.model_dump(mode="json"),
                self._sock,
                str(self._locks),
                ready,
                self._loads,
                slot,
            ),
            name="contextfuse-worker",
        )
        process.start()
        return process, ready

    def run(self, refresh: Callable[[], None]) -> None:
        """Refresh every interval and keep the workers alive until a signal stops it all."""
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        interval = self._settings.refresh_interval_s
        due = time.monotonic() + interval
        try:
            while not self._stop.wait(min(1.0, max(interval, 0.05))):
                if time.monotonic() >= due:
                    refresh()
                    due = time.monotonic() + interval
                self._restart_dead()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.stop()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop.set()

    def _restart_dead(self) -> None:
        for i, process in enumerate(self._workers):
            if not process.is_alive() and not self._stop.is_set():
                time.sleep(_RESTART_PAUSE_S)  # a worker that dies at once must not spin
                self._workers[i], _ = self._spawn(i)

    def stop(self) -> None:
        """Ask every worker to finish its requests and exit; kill the ones that do not."""
        self._stop.set()
        for process in self._workers:
            if process.is_alive():
                with contextlib.suppress(OSError):
                    os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE_S
        for process in self._workers:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()


def _worker_main(
    data: dict[str, Any],
    sock: socket.socket,
    locks: str,
    ready: Any,
    loads: MutableSequence[int],
    slot: int,
) -> None:
    """Worker ``slot``: the app over served projects, on the shared socket."""
    import uvicorn

    from contextfuse.compaction import collect_providers
    from contextfuse.plugin_manager import make_plugin_manager
    from contextfuse.server.app import build_asgi
    from contextfuse.server.balance import ConnectionBalancer
    from contextfuse.server.run import collect_for_requests, configured_providers

    collect_for_requests()
    settings = ServerSettings.model_validate(data)
    pm = make_plugin_manager()
    pool = ServedPool(settings.projects, locks=Path(locks), store=settings.store)
    for project in pool.projects.values():
        if isinstance(project, ServedProject):
            project.warm()
    providers = collect_providers(pm, configured_providers(settings))
    app = ConnectionBalancer(build_asgi(settings, pool, providers), loads, slot)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_keep_alive=30)
    server = uvicorn.Server(config)

    def announce_ready() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.02)
        gc.freeze()  # what start-up built lives as long as the process: never scan it again
        ready.set()

    threading.Thread(target=announce_ready, daemon=True).start()
    server.run(sockets=[sock])
