"""Worker threads kept between execution rounds, and the shared state of one round."""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Round", "WorkerPool"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class WorkerPool:
    """Daemon threads that run jobs, kept between rounds (at most ``keep`` of them idle).

    Starting threads every round costs a hand-off per thread; idle workers only need a queue
    put. A worker stuck in a strategy that never returns is simply not idle: later rounds start
    new workers, so it can delay nothing but itself. Daemon threads never hold up exit.
    """

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._idle = 0
        self._closed = False
        self._pid = os.getpid()
        self._serial = itertools.count()

    def run(self, job: Callable[[], None], copies: int) -> int:
        """Run ``copies`` copies of ``job``, each on its own worker; returns how many could."""
        with self._lock:
            if self._pid != os.getpid():  # a forked child has none of the parent's threads
                self._jobs, self._idle, self._pid = queue.SimpleQueue(), 0, os.getpid()
            self._closed = False
            reused = min(self._idle, copies)
            self._idle -= reused
            jobs = self._jobs
        for _ in range(copies):
            jobs.put(job)
        running = reused
        for _ in range(copies - reused):
            thread = threading.Thread(
                target=self._work,
                args=(jobs,),
                name=f"contextfuse-strategy-{next(self._serial)}",
                daemon=True,
            )
            try:
                thread.start()
            except RuntimeError:  # "can't start new thread": make do with the workers we have
                logger.exception("could not start a strategy worker")
                break
            running += 1
        return running

    def _work(self, jobs: queue.SimpleQueue[Callable[[], None] | None]) -> None:
        while (job := jobs.get()) is not None:
            try:
                job()
            except BaseException:  # a job is ours and catches strategy errors; never die silently
                logger.exception("strategy worker job failed")
            with self._lock:
                if self._closed or jobs is not self._jobs or self._idle >= self._keep:
                    return
                self._idle += 1

    def close(self) -> None:
        """Let the idle workers exit (a busy one exits when its job ends)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, 0
            jobs = self._jobs
        for _ in range(idle):
            jobs.put(None)


class Round(Generic[T]):
    """The shared state of one execution round: tasks are claimed by worker threads."""

    __slots__ = ("_count", "_lock", "_next", "closed", "done", "outcomes", "pending", "started")

    def __init__(self, count: int) -> None:
        self._lock = threading.Lock()
        self._next = 0
        self._count = count
        self.closed = False
        self.pending = count
        self.done = threading.Event()
        self.outcomes: list[T | None] = [None] * count
        self.started: list[float | None] = [None] * count

    def claim(self) -> int | None:
        with self._lock:
            if self.closed or self._next >= self._count:
                return None
            index = self._next
            self._next += 1
            self.started[index] = time.perf_counter()
            return index

    def finish(self, index: int, outcome: T) -> None:
        with self._lock:
            if self.closed:  # the round is over: a late result is dropped
                return
            self.outcomes[index] = outcome
            self.pending -= 1
            if self.pending == 0:
                self.done.set()

    def close(self) -> tuple[list[T | None], list[float | None]]:
        with self._lock:
            self.closed = True
            return list(self.outcomes), list(self.started)
