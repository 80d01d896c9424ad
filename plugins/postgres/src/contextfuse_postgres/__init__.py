"""contextfuse's knowledge base on PostgreSQL with pgvector (a backend provider plugin).

``PostgresStoreProvider`` is what the ``contextfuse_backend_providers`` hook contributes;
``open_postgres_backends`` opens one project's backends directly.
"""

from contextfuse_postgres.provider import PostgresStoreProvider, open_postgres_backends

__all__ = ["PostgresStoreProvider", "open_postgres_backends"]
