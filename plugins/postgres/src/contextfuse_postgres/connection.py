"""Where the database is and how to reach it, without ever showing a password.

The URL goes to libpq as it is, so everything libpq reads applies: the URL's own user and
password, the ``PG*`` environment variables (``PGPASSWORD``, ``PGHOST``...), a service file
(``?service=name``, ``PGSERVICEFILE``) and ``~/.pgpass``. What contextfuse prints about a
database (stats, log lines, errors) is :func:`display_url`: host, port and database only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from contextfuse.errors import KnowledgeBaseError

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

__all__ = ["SCHEMES", "connect_error", "display_url", "open_pool", "scrub", "translated"]

#: URL schemes this store answers to (libpq accepts both).
SCHEMES = ("postgresql", "postgres")
_DEFAULT_POOL_SIZE = 8
_CONNECT_TIMEOUT = 10  # seconds
# user:password@ in a URL, and password=... in a key/value connection string.
_URL_SECRET = re.compile(r"(://[^/@:]*):[^@/]*@")
_KV_SECRET = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def scrub(text: str, url: str = "") -> str:
    """``text`` with every password it may contain replaced by ``***``."""
    text = _KV_SECRET.sub(r"\1***", _URL_SECRET.sub(r"\1:***@", text))
    password = _password(url)
    return text.replace(password, "***") if password else text


def _password(url: str) -> str:
    if not url:
        return ""
    try:
        from psycopg.conninfo import conninfo_to_dict

        return str(conninfo_to_dict(url).get("password") or "")
    except Exception:  # an unparsable URL: the regular expressions still apply
        return ""


def display_url(url: str) -> str:
    """``postgresql://host:port/dbname``: what may be shown of ``url`` (no user, no password)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(url)
    except Exception:
        return "postgresql://(unparsable URL)"
    host = str(parts.get("host") or "localhost")
    if host.startswith("/"):
        host = "[socket]"
    port = f":{parts['port']}" if parts.get("port") else ""
    service = f"?service={parts['service']}" if parts.get("service") else ""
    return f"postgresql://{host}{port}/{parts.get('dbname') or ''}{service}"


def connect_error(url: str, exc: BaseException) -> KnowledgeBaseError:
    """A ``KnowledgeBaseError`` for a failed connection or query, with no secret in it."""
    return KnowledgeBaseError(f"PostgreSQL store {display_url(url)}: {scrub(_reason(exc), url)}")


def open_pool(url: str, *, max_size: int = _DEFAULT_POOL_SIZE) -> ConnectionPool[Any]:
    """A connection pool to ``url`` with pgvector's types registered on every connection.

    :raises KnowledgeBaseError: the server cannot be reached or refused the credentials.
    """
    import psycopg
    from psycopg_pool import ConnectionPool, PoolTimeout

    def configure(conn: psycopg.Connection[Any]) -> None:
        try:
            from pgvector.psycopg import register_vector

            register_vector(conn)
        except psycopg.ProgrammingError:  # the extension is created by the first migration
            pass
        conn.commit()

    # One direct attempt first: a refused or misconfigured connection fails at once with
    # libpq's reason, where the pool would retry until its timeout and only say it timed out.
    try:
        psycopg.connect(url, connect_timeout=_CONNECT_TIMEOUT).close()
    except psycopg.Error as exc:
        raise KnowledgeBaseError(
            f"PostgreSQL store {display_url(url)}: cannot connect ({scrub(_reason(exc), url)})"
        ) from None
    pool: ConnectionPool[Any] = ConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        configure=configure,
        open=False,
        name="contextfuse",
    )
    try:
        pool.open(wait=True, timeout=_CONNECT_TIMEOUT)
    except PoolTimeout:
        pool.close()
        raise KnowledgeBaseError(
            f"PostgreSQL store {display_url(url)}: cannot connect (no connection within "
            f"{_CONNECT_TIMEOUT} s)"
        ) from None
    return pool


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@contextmanager
def translated(url: str) -> Iterator[None]:
    """Turn a psycopg error raised inside into a ``KnowledgeBaseError`` without secrets."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        raise connect_error(url, exc) from None
