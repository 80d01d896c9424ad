"""contextfuse's knowledge base on PostgreSQL with pgvector (a backend provider plugin).

``PostgresStoreProvider`` is what the ``contextfuse_backend_providers`` hook contributes;
``open_postgres_backends`` opens one project's backends directly. Both are imported on
first use, so loading the plugin does not import psycopg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextfuse_postgres.provider import PostgresStoreProvider, open_postgres_backends

__all__ = ["PostgresStoreProvider", "open_postgres_backends"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from contextfuse_postgres import provider

        return getattr(provider, name)
    raise AttributeError(f"module 'contextfuse_postgres' has no attribute {name!r}")
