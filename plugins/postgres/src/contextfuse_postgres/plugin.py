"""The plugin module named by the ``contextfuse`` entry point: contributes the store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextfuse.plugin import hookimpl
from contextfuse_postgres.connection import SCHEMES

__all__ = ["DeferredPostgresStore", "contextfuse_backend_providers"]


class DeferredPostgresStore:
    """The PostgreSQL store provider, imported on first use.

    Every ``contextfuse`` command loads the installed plugins; psycopg and the store's
    modules cost 0.15 s to import, which only a command that uses this store should pay.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._provider: Any = None

    def __getattr__(self, item: str) -> Any:
        # provides, open, index, exists: the real provider's.
        if item.startswith("__") or item == "_provider":
            raise AttributeError(item)
        if self._provider is None:
            from contextfuse_postgres.provider import PostgresStoreProvider

            self._provider = PostgresStoreProvider(self.name)
        return getattr(self._provider, item)


@hookimpl
def contextfuse_backend_providers() -> Sequence[DeferredPostgresStore]:
    """The PostgreSQL store, under each URL scheme libpq accepts."""
    return [DeferredPostgresStore(name) for name in SCHEMES]
