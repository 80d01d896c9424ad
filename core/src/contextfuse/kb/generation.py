"""The index's content generation: a token in ``meta`` that every change of its content renews.

Caches of what is derived from the index (the vector matrix, the graph's arrays, split file
texts) must be dropped when nodes, edges, vectors or file texts change, and only then.
``PRAGMA data_version`` is no such signal: it changes on every commit of another connection,
and every assembly commits a little (the storage tiers record which files it delivered), so
caches keyed on it were rebuilt on every request of a busy service. The generation changes
with the content only: :func:`renew` runs inside each transaction that writes nodes, edges,
file texts or vectors (``IndexWriter``, ``SQLiteVectorBackend.upsert``, the indexer's removal
of unused vectors), and readers compare it within their own read snapshot.

The token is random, not a counter: a rebuilt or replaced index never repeats an old token,
so a cache file named for one (``contextfuse.kb.arrays``) can never describe another state.
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextfuse.kb.store import Database

__all__ = ["GENERATION_KEY", "cache_key", "current", "read_key", "renew"]

#: The ``meta`` key holding the token.
GENERATION_KEY = "generation"


def renew(conn: sqlite3.Connection) -> None:
    """Give the index a new generation, inside the caller's write transaction."""
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        (GENERATION_KEY, os.urandom(8).hex()),
    )


def current(conn: sqlite3.Connection) -> str | None:
    """The generation ``conn`` sees; None for an index written before generations existed."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (GENERATION_KEY,)).fetchone()
    return str(row[0]) if row else None


def cache_key(conn: sqlite3.Connection) -> str:
    """What a cache of derived data is valid for, as ``conn`` sees the index.

    The generation when the index has one; else this connection's ``data_version`` (which
    only this connection can compare, and which changes more often than needed).
    """
    token = current(conn)
    if token is not None:
        return token
    version = conn.execute("PRAGMA data_version").fetchone()[0]
    return f"connection-{id(conn)}-{version}"


def read_key(db: Database) -> str:
    """:func:`cache_key` through this thread's connection to ``db``."""
    try:
        return cache_key(db.connection())
    except sqlite3.DatabaseError as exc:
        raise db.error(exc) from exc
