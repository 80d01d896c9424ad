"""Where a command gets its assembler: a new one, or the warm one of the daemon answering it.

The command code is the same either way (``contextfuse daemon`` runs it in its process):
only :func:`open_assembler` differs, through :data:`WARM`, which the daemon sets for the
thread answering a request.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from contextfuse.assembler import ContextAssembler
    from contextfuse.config import ContextfuseConfig

__all__ = ["WARM", "NotServed", "WarmSource", "open_assembler"]


class NotServed(Exception):
    """The warm assembler cannot answer this command (another project, index or store):
    the client then runs the command itself."""


class WarmSource(Protocol):
    """A daemon's warm assembler, lent to one command at a time."""

    def lease(self, root: Path, index_dir: Path | None, store: str | None) -> ContextAssembler:
        """The assembler for these options, up to date; :class:`NotServed` if not this one."""


#: The warm source of the request being answered in this thread (None: no daemon).
WARM: ContextVar[WarmSource | None] = ContextVar("contextfuse_warm_source", default=None)


@contextmanager
def open_assembler(
    root: Path, *, index_dir: Path | None, store: str | None
) -> Iterator[ContextAssembler]:
    """The assembler of ``root`` for one command: the daemon's warm one, else a new one
    (closed at the end)."""
    warm = WARM.get()
    if warm is not None:
        yield warm.lease(root, index_dir, store)
        return
    from contextfuse.assembler import ContextAssembler

    with ContextAssembler(root, index_dir=index_dir, config=with_store(root, store)) as assembler:
        yield assembler


def with_store(repo: Path, store: str | None) -> ContextfuseConfig | None:
    """The configuration with ``--store`` as its ``[index] store`` (None: unchanged)."""
    if store is None:
        return None
    from contextfuse.config import load_config

    return load_config(repo).with_index(store=store)
