"""What a term's document frequency is a share of: the index's search units.

``choose_terms`` (``contextfuse.kb.text``) leaves out near-stopwords, the terms found in more
than a share of the nodes. A declaration nested in a function (an inner function, a closure's
values) is a node of its own, but its words are also in its enclosing function's row: counting
it would dilute every other word's share, so that indexing a file's inner declarations would
change which words of every request are searched. The share is taken of the nodes not declared
inside a function or method. The writer stores that count with the vocabulary, in the same
transaction, so reading it costs one lookup.
"""

from __future__ import annotations

import sqlite3

__all__ = ["SEARCH_UNITS_KEY", "SEARCH_UNITS_SQL", "store_search_units"]

#: The ``meta`` key of the count.
SEARCH_UNITS_KEY = "search_units"
#: The nodes whose parent is not a function or method.
SEARCH_UNITS_SQL = (
    "SELECT count(*) FROM nodes WHERE parent_id IS NULL"
    " OR parent_id NOT IN (SELECT id FROM nodes WHERE kind IN ('function', 'method'))"
)


def store_search_units(conn: sqlite3.Connection) -> None:
    """Count the search units and store the count in ``meta`` (inside the caller's write)."""
    (units,) = conn.execute(SEARCH_UNITS_SQL).fetchone()
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (SEARCH_UNITS_KEY, str(units))
    )
