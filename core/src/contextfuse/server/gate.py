"""A lock shared by the processes of one service: many requests, or one index run.

An index run commits the files, nodes and edges in one transaction, and each index
contributor (the embeddings) its vectors in another: between those commits the index is
readable but not whole. A service whose workers are processes holds requests off for that
time with this lock: each request holds it shared, the refresher exclusively while a run
that changes something writes. It is two ``flock`` locks (a gate and the data), so that a
waiting refresher holds off new requests rather than waiting for a moment with none:
a request passes the gate shared for an instant, then holds the data lock shared; the
refresher closes the gate, then waits for the data lock's readers to finish.

Each holder opens its own file descriptions: ``flock`` locks belong to them, so threads of
one process lock independently.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["ServiceGate", "gates_supported"]


def gates_supported() -> bool:
    """True where ``flock`` exists (not on Windows)."""
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return False
    return True


class ServiceGate:
    """The lock of one served project, in ``directory`` (named ``<name>.gate``/``.data``)."""

    def __init__(self, directory: Path, name: str) -> None:
        self._gate = directory / f"{name}.gate"
        self._data = directory / f"{name}.data"
        for path in (self._gate, self._data):
            path.touch(exist_ok=True)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Held by a request: no index run writes meanwhile."""
        import fcntl

        with _opened(self._data) as data:
            with _opened(self._gate) as gate:
                fcntl.flock(gate, fcntl.LOCK_SH)  # waits while a refresher holds the gate
                fcntl.flock(data, fcntl.LOCK_SH)
            yield

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Held by the refresher while an index run writes: no request reads meanwhile."""
        import fcntl

        with _opened(self._gate) as gate, _opened(self._data) as data:
            fcntl.flock(gate, fcntl.LOCK_EX)  # new requests wait at the gate from now on
            fcntl.flock(data, fcntl.LOCK_EX)  # and the ones under way finish
            yield


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    try:
        yield fd
    finally:
        os.close(fd)  # releases this description's lock
