"""``TextBackend`` over the index file: SQLite FTS5 with BM25 over code-aware terms.

Any query string is safe: only word characters survive :func:`~contextfuse.kb.terms.query_terms`,
each term is quoted, and terms are OR-ed. A long query (a whole issue) keeps only its most
informative terms, the rarest by document frequency, so search stays fast.
"""

from __future__ import annotations

from collections.abc import Sequence

from contextfuse.backends import SearchHit
from contextfuse.kb.nodes import chunked
from contextfuse.kb.store import Database
from contextfuse.kb.terms import query_terms

__all__ = ["MAX_QUERY_TERMS", "SQLiteTextBackend"]

#: Terms kept from a query. Each OR-ed term adds its whole posting list to the scan.
MAX_QUERY_TERMS = 24
#: Terms found in more than this share of the nodes are near-stopwords (``self``, ``the``):
#: BM25 gives them almost no weight, but they cost the most to scan.
_COMMON_SHARE = 0.25
#: bm25() weights of the columns name, path, body, parts.
_WEIGHTS = (10.0, 4.0, 1.0, 0.5)


class SQLiteTextBackend:
    """Full-text search over every node's own text, name and path."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def search(
        self, query: str, limit: int = 50, kinds: Sequence[str] | None = None
    ) -> list[SearchHit]:
        """Best-matching nodes for a free-text query, best first (score: higher is better)."""
        if limit <= 0:
            return []
        terms = self.select_terms(query_terms(query))
        if not terms:
            return []
        match = " OR ".join(f'"{term}"' for term in terms)
        weights = ", ".join(str(w) for w in _WEIGHTS)
        sql = (
            f"SELECT n.uri, bm25(fts, {weights}) AS rank FROM fts JOIN nodes n ON n.id = fts.rowid"
            " WHERE fts MATCH ?"
        )
        params: list[object] = [match]
        if kinds:
            sql += f" AND n.kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        sql += " ORDER BY rank LIMIT ?"
        params.append(limit)
        return [SearchHit(uri, -float(rank)) for uri, rank in self._db.read(sql, params)]

    def select_terms(self, terms: list[str]) -> list[str]:
        """The terms worth searching: present in the index, rarest first, at most a few."""
        if not terms:
            return []
        frequency: dict[str, int] = {}
        for chunk in chunked(terms):
            marks = ",".join("?" * len(chunk))
            for term, docs in self._db.read(
                f"SELECT term, docs FROM vocabulary WHERE term IN ({marks})", chunk
            ):
                frequency[term] = int(docs)
        present = sorted((t for t in terms if t in frequency), key=lambda t: frequency[t])
        if len(present) <= MAX_QUERY_TERMS:
            return present
        total = self._db.read("SELECT count(*) FROM nodes")[0][0]
        informative = [t for t in present if frequency[t] <= total * _COMMON_SHARE]
        return (informative or present)[:MAX_QUERY_TERMS]
