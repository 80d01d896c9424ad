"""``TextBackend`` over PostgreSQL: a ``tsvector`` per node with a GIN index.

The terms are the core's code-aware terms (``contextfuse.kb.terms``), computed in Python
and written as a ``tsvector`` literal: PostgreSQL's own parser would split ``get_queryset``
and read ``a/b.py`` as one file-path token, and the two stores must find the same things.
The four columns of the SQLite store map to the four weights: name A, path B, body C,
identifier parts D, ranked by ``ts_rank`` with weights in the SQLite store's proportions.

Regular-expression search (:meth:`PostgresTextBackend.search_regex`) finds the same nodes as
the SQLite store's: PostgreSQL's ``~`` operator narrows the files on the server (the pattern
rewritten to PostgreSQL's flavour, under a statement timeout), and the core's RE2 scan
(``contextfuse.kb.regex_search``) reads the files it keeps. A pattern PostgreSQL reads
otherwise, or cannot read in time, is scanned by RE2 alone over every file. Phrase search
(:meth:`PostgresTextBackend.search_phrase`) is a regular expression of the phrase's words.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextfuse.backends import SearchHit
from contextfuse.kb.compressed import stored_utf8
from contextfuse.kb.regex_search import NodeSpan, compile_pattern, rank_matches
from contextfuse.kb.terms import VARIANT_WEIGHT, is_short_request, weighted_query_terms
from contextfuse.kb.text import choose_terms, term_weights
from contextfuse_postgres.connection import translated
from contextfuse_postgres.nodes import Reader

__all__ = ["PostgresTextBackend", "postgres_pattern", "tsvector_literal"]

_WORD = re.compile(r"\w+")
#: ts_rank weights {D, C, B, A}: parts, body, path, name (the SQLite store's 0.5, 1, 4, 10).
_RANK_WEIGHTS = "{0.05, 0.1, 0.4, 1.0}"
#: Positions kept per term and column: term frequency saturates long before this.
_MAX_POSITIONS = 16
_MAX_TERM_BYTES = 2000  # PostgreSQL refuses lexemes over 2047 bytes
_MAX_LITERAL = 900_000  # and tsvectors over 1 MB
#: How long PostgreSQL may spend narrowing the files for a regex before RE2 scans them all.
_REGEX_TIMEOUT_MS = 5000
_FILES_PER_FETCH = 200
#: RE2 escapes PostgreSQL spells otherwise (``\b`` is a backspace there).
_ESCAPES = {"b": "\\y", "B": "\\Y", "z": "\\Z"}
_UNTRANSLATED = frozenset("pPQEC")  # Unicode classes, quoting, single bytes: RE2 alone
_LEADING_FLAGS = re.compile(r"\(\?([imsU]+)\)")


def postgres_pattern(pattern: str, ignore_case: bool) -> str | None:
    """``pattern`` (RE2 syntax) as a PostgreSQL regular expression matching at least as much,
    or None when it uses what PostgreSQL spells differently (RE2 then scans every file).

    Line mode ``w``: ``^`` and ``$`` match at lines, as ``(?m)`` in RE2; ``.`` may match a
    newline there, so PostgreSQL never keeps fewer files than RE2 matches.
    """
    flags = "w" + ("i" if ignore_case else "")
    leading = _LEADING_FLAGS.match(pattern)
    if leading:
        if "i" in leading.group(1):
            flags += "i"
        pattern = pattern[leading.end() :]
    out: list[str] = []
    position = 0
    while position < len(pattern):
        char = pattern[position]
        if char == "\\" and position + 1 < len(pattern):
            escaped = pattern[position + 1]
            if escaped in _UNTRANSLATED or pattern.startswith("x{", position + 1):
                return None
            out.append(_ESCAPES.get(escaped, char + escaped))
            position += 2
            continue
        if pattern.startswith("(?P<", position) or pattern.startswith("(?<", position):
            close = pattern.find(">", position)
            if close < 0:
                return None
            out.append("(")
            position = close + 1
            continue
        if pattern.startswith("(?", position) and not pattern.startswith("(?:", position):
            return None  # flags inside the pattern: PostgreSQL takes them only at the start
        out.append(char)
        position += 1
    return f"(?{flags})" + "".join(out)


def tsvector_literal(name: str, path: str, body: str, parts: str) -> str:
    """The ``tsvector`` of one search row ``(name, path, body, parts)`` as a literal."""
    positions: dict[str, list[str]] = {}
    position = 0
    for column, weight in ((name, "A"), (path, "B"), (body, "C"), (parts, "D")):
        for term, count in Counter(_WORD.findall(column.lower())).items():
            if len(term.encode()) > _MAX_TERM_BYTES:
                continue
            marks = positions.setdefault(term, [])
            for _ in range(min(count, _MAX_POSITIONS)):
                position = min(position + 1, 16383)
                marks.append(f"{position}{weight}")
    pieces: list[str] = []
    size = 0
    for term, marks in positions.items():
        piece = "'" + term.replace("\\", "\\\\").replace("'", "''") + "':" + ",".join(marks[:255])
        size += len(piece) + 1
        if size > _MAX_LITERAL:  # a huge data file: its first terms are enough to find it
            break
        pieces.append(piece)
    return " ".join(pieces)


def _tsquery(terms: Sequence[str]) -> str:
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


class PostgresTextBackend:
    """Full-text search over every node's own text, name and path, of one project."""

    def __init__(self, reader: Reader) -> None:
        self._reader = reader
        self._nodes: int | None = None  # the project's node count, read once per open

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
        hits = dict(self._match(spelled, limit, kinds))
        # As in the SQLite store: inflections the query did not spell count half.
        for uri, score in self._match(variants, limit, kinds):
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
        reader = self._reader
        with translated(reader.url), reader.pool.connection() as conn:
            candidates = self._narrowed(conn, postgres_pattern(pattern, ignore_case))

            def spans_of(file_id: int) -> list[NodeSpan]:
                rows = conn.execute(
                    "SELECT uri, kind, line_start, line_end FROM cf_nodes WHERE file_id = %s",
                    (file_id,),
                )
                return [NodeSpan(*row) for row in rows]

            return rank_matches(compiled, self._texts(conn, candidates), spans_of, limit, kinds)

    def search_phrase(
        self, words: Sequence[str], limit: int = 50, kinds: Sequence[str] | None = None
    ) -> list[SearchHit]:
        """Nodes whose own text holds ``words`` in a row (the ``PhraseSearch`` extension).

        The ``tsvector`` keeps no word order, so the phrase is a regular expression over the
        files (:meth:`search_regex`): the words, case ignored, apart by anything but word
        characters, as the SQLite store's full-text phrase matches them.
        """
        terms = [term for word in words for term in _WORD.findall(word.lower())]
        if not terms or limit <= 0:
            return []
        pattern = r"\b" + r"\W+".join(re.escape(term) for term in terms) + r"\b"
        return self.search_regex(pattern, limit, kinds, ignore_case=True)

    def _narrowed(self, conn: Any, pattern: str | None) -> list[int] | None:
        """Ids of the project's files PostgreSQL's ``~`` keeps (cold files always: their
        text is compressed), or None when it cannot say (the pattern, the time)."""
        import psycopg

        if pattern is None:
            return None
        try:
            with conn.transaction():
                conn.execute(f"SET LOCAL statement_timeout = {_REGEX_TIMEOUT_MS}")
                rows = conn.execute(
                    "SELECT id FROM cf_files WHERE project = %s"
                    " AND (cold IS NOT NULL OR content ~ %s) ORDER BY id",
                    (self._reader.project, pattern),
                ).fetchall()
        except (psycopg.errors.DataError, psycopg.errors.QueryCanceled):
            return None  # invalid there, or too slow: RE2 reads every file instead
        except psycopg.errors.ProgramLimitExceeded:
            return None  # "regular expression is too complex"
        return [int(row[0]) for row in rows]

    def _texts(self, conn: Any, ids: list[int] | None) -> Iterator[tuple[int, bytes]]:
        """``(file id, text)`` of these files (None: every file of the project with nodes),
        a few at a time."""
        if ids is None:
            ids = [
                int(row[0])
                for row in conn.execute(
                    "SELECT DISTINCT file_id FROM cf_nodes WHERE project = %s ORDER BY file_id",
                    (self._reader.project,),
                ).fetchall()
            ]
        for start in range(0, len(ids), _FILES_PER_FETCH):
            rows = conn.execute(
                "SELECT id, coalesce(cold, convert_to(content, 'UTF8')), cold IS NOT NULL"
                " FROM cf_files WHERE id = ANY(%s) ORDER BY id",
                (ids[start : start + _FILES_PER_FETCH],),
            ).fetchall()
            for file_id, data, cold in rows:
                yield int(file_id), stored_utf8(data, bool(cold))

    def _match(
        self, terms: Sequence[str], limit: int, kinds: Sequence[str] | None
    ) -> list[tuple[str, float]]:
        if not terms:
            return []
        sql = (
            f"SELECT uri, ts_rank('{_RANK_WEIGHTS}', tsv, q, 1) AS rank"
            " FROM cf_nodes, CAST(%s AS tsquery) AS q WHERE tsv @@ q AND project = %s"
        )
        params: list[object] = [_tsquery(terms), self._reader.project]
        if kinds:
            sql += " AND kind = ANY(%s)"
            params.append(list(kinds))
        sql += " ORDER BY rank DESC, id LIMIT %s"
        params.append(limit)
        return [(str(uri), float(rank)) for uri, rank in self._reader.read(sql, params)]

    def select_terms(
        self, terms: Mapping[str, float] | Sequence[str], keep_common: bool = False
    ) -> list[str]:
        """The terms worth searching: present in the project, at most a few.

        The same choice as the SQLite store (``contextfuse.kb.text.choose_terms``).
        """
        weights, candidates = term_weights(terms)
        frequency = {
            str(term): int(docs)
            for term, docs in self._reader.read(
                "SELECT term, docs FROM cf_vocabulary WHERE project = %s AND term = ANY(%s)",
                (self._reader.project, candidates),
            )
        }
        return choose_terms(weights, frequency, self._node_count, keep_common)

    def _node_count(self) -> int:
        if self._nodes is None:
            self._nodes = int(
                self._reader.read(
                    # The SQLite store's search units (contextfuse.kb.term_stats): the nodes
                    # not declared inside a function or method.
                    "SELECT count(*) FROM cf_nodes WHERE project = %s AND (parent_id IS NULL"
                    " OR parent_id NOT IN (SELECT id FROM cf_nodes WHERE project = %s"
                    " AND kind IN ('function', 'method')))",
                    (self._reader.project, self._reader.project),
                )[0][0]
            )
        return self._nodes
