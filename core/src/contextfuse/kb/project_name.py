"""The project name of an index: the ``<project>`` of its ``project://<project>/<path>`` URIs.

An index keeps the name it was built under: by default its folder's name, or the name it is
served as (``contextfuse serve --project NAME=PATH``). An index run that names it otherwise
renames it in place: only the nodes' URIs hold the name (edges, search rows and vectors refer
to nodes by id or content hash; plans, decisions and commits build their URIs from the name
when read), so one ``UPDATE`` in the run's transaction renames the whole index, and a
payload then hashes exactly as one from an index built under the new name.
"""

from __future__ import annotations

import sqlite3

from contextfuse.errors import KnowledgeBaseError

__all__ = ["check_project_name", "rename_project"]


def check_project_name(name: str) -> str:
    """``name`` if it can stand in a URI's authority (no ``/``, ``#``, ``?``, space or ``:``)."""
    if not name or any(c in name for c in "/#?: \t\n\\") or not name.isprintable():
        raise KnowledgeBaseError(
            f"{name!r} cannot name a project: a name is non-empty and holds no '/', '#', "
            "'?', ':', '\\' or white space"
        )
    return name


def rename_project(conn: sqlite3.Connection, old: str, new: str) -> int:
    """Rename the nodes of project ``old`` to ``new`` (in the caller's transaction); returns
    how many URIs changed."""
    before, after = f"project://{old}/", f"project://{new}/"
    cursor = conn.execute(
        "UPDATE nodes SET uri = ? || substr(uri, ?) WHERE substr(uri, 1, ?) = ?",
        (after, len(before) + 1, len(before), before),
    )
    return cursor.rowcount
