"""A shared, re-entrant pause of the cyclic garbage collector for the duration of a fuse."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_gc_lock = threading.Lock()
_gc_holders = 0  # fuse calls currently holding the collector paused
_gc_resume = False  # whether the collector was enabled when the first holder paused it


@contextmanager
def gc_paused(enabled: bool = True) -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (a no-op when ``enabled`` is False).

    Concurrent and nested holders share one pause; the last one out re-enables the collector
    only if it was enabled when the first one came in.
    """
    global _gc_holders, _gc_resume
    if not enabled:
        yield
        return
    with _gc_lock:
        if _gc_holders == 0:
            _gc_resume = gc.isenabled()
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0 and _gc_resume:
                gc.enable()
