"""The plugin module named by the ``contextfuse`` entry point: contributes the store."""

from __future__ import annotations

from collections.abc import Sequence

from contextfuse.hookspecs import hookimpl
from contextfuse_postgres.connection import SCHEMES
from contextfuse_postgres.provider import PostgresStoreProvider

__all__ = ["contextfuse_backend_providers"]


@hookimpl
def contextfuse_backend_providers() -> Sequence[PostgresStoreProvider]:
    """The PostgreSQL store, under each URL scheme libpq accepts."""
    return [PostgresStoreProvider(name) for name in SCHEMES]
