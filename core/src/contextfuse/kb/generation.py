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

Inside a read snapshot (``Database.snapshot``), which sees one committed state throughout,
the token is read once and remembered on the connection until the snapshot ends: a
strategy's reads share one snapshot (``BackendSet.reading``) and asked ``meta`` at each
call, every query a hand-off of the interpreter lock that threads side by side wait for.
"""

from __future__ import annotations

import enum
import os
import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextfuse.kb.store import Database

__all__ = [
    "GENERATION_KEY",
    "SEEN_ATTRIBUTE",
    "Unseen",
    "cache_key",
    "current",
    "read_key",
    "renew",
]

#: The ``meta`` key holding the token.
GENERATION_KEY = "generation"
#: The attribute of a connection (``kb/store.py``'s) that remembers the token its current
#: snapshot sees: an :class:`Unseen` mark, or the token once read.
SEEN_ATTRIBUTE = "seen_generation"


class Unseen(enum.Enum):
    """What a connection's :data:`SEEN_ATTRIBUTE` holds when it remembers no token."""

    OUTSIDE_SNAPSHOT = "outside"  # every read may see a newer state: ask each time
    NOT_READ = "not read"  # inside a snapshot: the first read is remembered


def renew(conn: sqlite3.Connection) -> None:
    """Give the index a new generation, inside the caller's write transaction."""
    token = os.urandom(8).hex()
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (GENERATION_KEY, token))
    if _seen(conn) is not Unseen.OUTSIDE_SNAPSHOT:
        setattr(conn, SEEN_ATTRIBUTE, token)


def current(conn: sqlite3.Connection) -> str | None:
    """The generation ``conn`` sees; None for an index written before generations existed."""
    seen = _seen(conn)
    if not isinstance(seen, Unseen) and conn.in_transaction:
        return seen
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (GENERATION_KEY,)).fetchone()
    token = str(row[0]) if row else None
    if seen is not Unseen.OUTSIDE_SNAPSHOT and conn.in_transaction:
        setattr(conn, SEEN_ATTRIBUTE, token)
    return token


def _seen(conn: sqlite3.Connection) -> str | Unseen | None:
    seen: str | Unseen | None = getattr(conn, SEEN_ATTRIBUTE, Unseen.OUTSIDE_SNAPSHOT)
    return seen


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
