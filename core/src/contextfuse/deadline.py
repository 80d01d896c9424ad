"""The deadline of the work running in this thread, for cooperative cancellation.

The strategy executor runs each strategy inside :func:`deadline_scope` with the time its
allowance ends. A thread cannot be stopped from outside, so a strategy past its deadline is
stopped where it touches shared resources: the index checks :func:`expired` before every
read and, through SQLite's progress handler, while a long query runs, and stops with an
error instead of going on. A strategy (or a store) may check it too, to give up early.

The deadline is a context variable: it belongs to the thread (or task) that set it, so one
strategy's deadline never stops another's work or a refresh.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["deadline_scope", "expired"]

_DEADLINE: ContextVar[float | None] = ContextVar("contextfuse_deadline", default=None)


@contextmanager
def deadline_scope(at: float) -> Iterator[None]:
    """Work inside must be done by ``at`` (a ``time.monotonic()`` value)."""
    token = _DEADLINE.set(at)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def expired() -> bool:
    """True when the work running here has a deadline and it has passed."""
    at = _DEADLINE.get()
    return at is not None and time.monotonic() >= at
