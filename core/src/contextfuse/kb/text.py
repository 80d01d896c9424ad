"""``TextBackend`` over the index file: SQLite FTS5 with BM25 over code-aware terms.

Any query string is safe: only word characters survive :func:`~contextfuse.kb.terms.query_terms`,
each term is quoted, and terms are OR-ed. A long query (a whole issue) keeps only its most
informative terms, the rarest by document frequency, so search stays fast.

:meth:`SQLiteTextBackend.search_regex` (the ``RegexSearch`` extension) scans the stored files
with RE2 (``contextfuse.kb.regex_search``): linear in the text whatever the pattern.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence

from contextfuse.backends import SearchHit
from contextfuse.kb.compressed import stored_utf8
from contextfuse.kb.nodes import chunked
from contextfuse.kb.regex_search import NodeSpan, compile_pattern, rank_matches
from contextfuse.kb.scored_matches import WEIGHTS, MatchScorer
from contextfuse.kb.store import Database
from contextfuse.kb.term_stats import SEARCH_UNITS_KEY, SEARCH_UNITS_SQL
from contextfuse.kb.terms import STOPWORDS, VARIANT_WEIGHT, is_short_request, weighted_query_terms

__all__ = ["MAX_QUERY_TERMS", "SQLiteTextBackend", "choose_terms", "term_weights"]

#: Terms kept from a query. Each OR-ed term adds its whole posting list to the scan.
MAX_QUERY_TERMS = 24
#: Terms found in more than this share of the nodes (of the search units, ``kb/term_stats``)
#: are near-stopwords (``self``, ``the``, ``update`` in Django): BM25 gives them little
#: weight, but they cost the most to scan.
#: They are left out of queries that have at least ``_ENOUGH_TERMS`` others. A short
#: question keeps those in at most ``_COMMON_NODES`` nodes: its words were chosen, and a
#: common one (``plugin`` in a plugin framework) still tells which of the nodes holding its
#: rarer words answer it; a long report's common words are mostly noise.
_COMMON_SHARE = 0.05
_COMMON_NODES = 5000
_ENOUGH_TERMS = 8
#: A term of a phrase: what the FTS5 tokenizer keeps of a word (``unicode61 tokenchars '_'``).
_WORD = re.compile(r"\w+")


class SQLiteTextBackend:
    """Full-text search over every node's own text, name and path."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._scorer = MatchScorer()

    def search(
        self, query: str, limit: int = 50, kinds: Sequence[str] | None = None
    ) -> list[SearchHit]:
        """Best-matching nodes for a free-text query, best first (score: higher is better)."""
        if limit <= 0:
            return []
        weighted = weighted_query_terms(query)
        terms = self.select_terms(weighted, keep_common=is_short_request(query))
        if not terms:
            return []
        spelled = [t for t in terms if weighted.get(t, 1.0) > VARIANT_WEIGHT]
        variants = [t for t in terms if weighted.get(t, 1.0) <= VARIANT_WEIGHT]
        with self._db.snapshot() as conn:
            hits = dict(self._match(conn, spelled, limit, kinds))
            # Inflections the query did not spell are searched apart and count half, so a word
            # spelled differently in the code is found without outranking the exact words.
            for uri, score in self._match(conn, variants, limit, kinds):
                hits[uri] = max(hits.get(uri, 0.0), score * VARIANT_WEIGHT)
        ranked = sorted(hits.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return [SearchHit(uri, score) for uri, score in ranked]

    def search_regex(
        self,
        pattern: str,
        limit: int = 50,
        kinds: Sequence[str] | None = None,
        ignore_case: bool = False,
    ) -> list[SearchHit]:
        """Nodes whose own text matches an RE2 ``pattern``, most matching lines first.

        Raises ``InvalidPatternError`` for a pattern that cannot be searched.
        """
        compiled = compile_pattern(pattern, ignore_case=ignore_case)
        if limit <= 0:
            return []
        with self._db.snapshot() as conn:

            def spans_of(file_id: int) -> list[NodeSpan]:
                rows = conn.execute(
                    "SELECT uri, kind, line_start, line_end FROM nodes WHERE file_id = ?",
                    (file_id,),
                )
                return [NodeSpan(*row) for row in rows]

            files = conn.execute(
                "SELECT id, typeof(content) = 'blob', CAST(content AS BLOB) FROM files"
                " WHERE id IN (SELECT file_id FROM nodes)"
            )
            texts = ((file_id, stored_utf8(data, bool(cold))) for file_id, cold, data in files)
            return rank_matches(compiled, texts, spans_of, limit, kinds)

    def search_phrase(
        self, words: Sequence[str], limit: int = 50, kinds: Sequence[str] | None = None
    ) -> list[SearchHit]:
        """Nodes whose own text holds ``words`` in a row (the ``PhraseSearch`` extension)."""
        terms = [term for word in words for term in _WORD.findall(word.lower())]
        if not terms or limit <= 0:
            return []
        phrase = " ".join(terms)
        return [
            SearchHit(uri, score) for uri, score in self._query(f'body : "{phrase}"', limit, kinds)
        ]

    def _match(
        self,
        conn: sqlite3.Connection,
        terms: Sequence[str],
        limit: int,
        kinds: Sequence[str] | None,
    ) -> list[tuple[str, float]]:
        if not terms:
            return []
        return self._scorer.best(conn, terms, limit, kinds)

    def _query(
        self, match: str, limit: int, kinds: Sequence[str] | None
    ) -> list[tuple[str, float]]:
        weights = ", ".join(str(w) for w in WEIGHTS)
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
        return [(uri, -float(rank)) for uri, rank in self._db.read(sql, params)]

    def select_terms(
        self, terms: Mapping[str, float] | Sequence[str], keep_common: bool = False
    ) -> list[str]:
        """The terms worth searching: present in the index, at most a few (:func:`choose_terms`).

        ``terms`` may carry weights (see ``weighted_query_terms``).
        """
        weights, candidates = term_weights(terms)
        frequency: dict[str, int] = {}
        for chunk in chunked(candidates):
            marks = ",".join("?" * len(chunk))
            for term, docs in self._db.read(
                f"SELECT term, docs FROM vocabulary WHERE term IN ({marks})", chunk
            ):
                frequency[term] = int(docs)
        return choose_terms(weights, frequency, self._search_units, keep_common)

    def _search_units(self) -> int:
        """The nodes a term's document frequency is a share of (``kb/term_stats``): stored with
        the vocabulary, counted here for an index written before it was."""
        stored = self._db.read("SELECT value FROM meta WHERE key = ?", (SEARCH_UNITS_KEY,))
        return int(stored[0][0] if stored else self._db.read(SEARCH_UNITS_SQL)[0][0])


def term_weights(
    terms: Mapping[str, float] | Sequence[str],
) -> tuple[Mapping[str, float], list[str]]:
    """The weight of each term (1 when none is given) and the ones worth looking up: all but
    English function words, unless nothing else is left."""
    weights: Mapping[str, float] = (
        terms if isinstance(terms, Mapping) else dict.fromkeys(terms, 1.0)
    )
    return weights, [t for t in weights if t not in STOPWORDS] or list(weights)


def choose_terms(
    weights: Mapping[str, float],
    frequency: Mapping[str, int],
    count_nodes: Callable[[], int],
    keep_common: bool = False,
) -> list[str]:
    """The terms a store searches, given each one's weight and document frequency.

    Terms the index holds, heavier ones (code) first, then, within a weight, the rarer ones;
    near-stopwords only when too few others are left; at most ``MAX_QUERY_TERMS``. With
    ``keep_common`` (a short question, whose every word was chosen) a word is a
    near-stopword only in a large index. ``count_nodes`` is asked only when the choice
    needs it.
    """
    present = sorted(
        (t for t in weights if t in frequency), key=lambda t: (-weights[t], frequency[t])
    )
    if len(present) <= _ENOUGH_TERMS:
        return present
    nodes = count_nodes()
    common = nodes * _COMMON_SHARE
    if keep_common:
        common = max(common, _COMMON_NODES)
    kept = [t for t in present if frequency[t] <= common]
    if len(kept) < _ENOUGH_TERMS:  # top up with the least common of the common ones
        rest = sorted((t for t in present if frequency[t] > common), key=frequency.__getitem__)
        kept += rest[: _ENOUGH_TERMS - len(kept)]
    return kept[:MAX_QUERY_TERMS]
