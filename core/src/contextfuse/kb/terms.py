"""Code-aware terms for full-text search.

The FTS5 table tokenises raw text with ``unicode61 tokenchars '_'``, so identifiers such as
``get_queryset`` stay whole (lower-cased). This module adds what that tokenizer cannot see:
the parts of identifiers (``get``, ``queryset``; ``QuerySet`` -> ``query``, ``set``) and whole
paths (``django/db/models/query.py`` -> ``django_db_models_query_py``), and turns a free-text
query into a list of the same terms.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache

__all__ = [
    "STOPWORDS",
    "identifier_parts",
    "name_terms",
    "parts_text",
    "path_terms",
    "query_terms",
    "weighted_query_terms",
    "word_variants",
]

_WORD = re.compile(r"\w+")
# A path-like token in a query: at least one separator between word characters. It may
# start only where a run of word characters and dashes starts (leading dashes skipped): tried
# at every position inside a long run, the failed match rescans the rest of the run each
# time, quadratic in the run's length (a 20,000-letter query took 24 s, holding the GIL).
_PATHLIKE = re.compile(r"(?<![\w\-])-*(\w[\w\-]*(?:[./]\w[\w\-]*)+)")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+")
_SEP = re.compile(r"[^\w]+")
#: A fence line of a Markdown code block (``` or ~~~), where pasted code and output go.
_FENCE = re.compile(r"[ \t]*(?:```|~~~)")
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
_TEMPLATE_LINE = re.compile(r"^\s*(?:[-*] \[[ xX]\]|#{1,6}\s)")
#: Extra weight of a word a long report says in its own sentences (not only in pasted blocks).
_PROSE_WEIGHT = 0.25

#: Parts shorter than this carry no signal (``i``, ``x``) and bloat the index.
_MIN_PART = 2


@lru_cache(maxsize=1 << 18)
def identifier_parts(word: str) -> tuple[str, ...]:
    """Lower-cased parts of an identifier, without the whole word itself.

    ``get_queryset`` -> ``("get", "queryset")``, ``HTTPResponse`` -> ``("http", "response")``,
    ``_private`` -> ``("private",)``, ``save`` -> ``()`` (nothing to add).
    """
    lowered = word.lower()
    pieces = (p.lower() for chunk in word.split("_") if chunk for p in _CAMEL.findall(chunk))
    return tuple(p for p in pieces if len(p) >= _MIN_PART and p != lowered)


class _PartsCache(dict[str, str]):
    """word -> its parts joined by spaces; computed on first sight (``__missing__``)."""

    def __missing__(self, word: str) -> str:
        if len(self) > _CACHE_LIMIT:  # data files can hold millions of distinct words
            self.clear()
        value = self[word] = " ".join(identifier_parts(word))
        return value


_CACHE_LIMIT = 1 << 20
_PARTS = _PartsCache()


def parts_text(text: str) -> str:
    """The identifier parts of ``text``, joined by spaces, as often as they occur.

    Repetition keeps BM25's term frequencies right for the parts column. The loop runs in C
    (``map``/``filter``/``join``); only words never seen before reach Python code.
    """
    return " ".join(filter(None, map(_PARTS.__getitem__, _WORD.findall(text))))


def path_terms(path: str) -> str:
    """Terms of a repository path: its parts, their identifier parts, and the path as one term.

    ``django/db/models/query.py`` -> ``django db models query py query_py ...
    django_db_models_query_py``.
    """
    words = _WORD.findall(path)
    extra = [p for w in words for p in identifier_parts(w)]
    name = path.rsplit("/", 1)[-1]
    whole = [_joined(name), _joined(path)] if ("." in name or "/" in path) else []
    return " ".join([*words, *extra, *whole])


def name_terms(name: str, qualname: str) -> str:
    """Terms of a node's name and qualified name (``QuerySet.filter``)."""
    words = _WORD.findall(f"{name} {qualname}")
    return " ".join([*words, *(p for w in words for p in identifier_parts(w))])


def _joined(path: str) -> str:
    return "_".join(w.lower() for w in _SEP.split(path) if w)


def query_terms(query: str) -> list[str]:
    """Distinct search terms of a free-text query, in order of first appearance.

    Whole words (lower-cased), their identifier parts, and path-like tokens as one term each.
    Only word characters survive, so any input (quotes, ``*``, parentheses) is safe to quote
    into an FTS5 MATCH expression.
    """
    return [t for t, weight in weighted_query_terms(query).items() if weight > VARIANT_WEIGHT]


#: English function words: frequent in issue texts and docs, never what a search is about.
_FUNCTION_WORDS = (
    "a about after all also an and any are as at be been before but by can could did do does "
    "for from had has have how i if in into is it its just me more most my no not of on or "
    "our should so some than that the their then there these they this those to too very was "
    "we were what when where which who why will with would you your"
)
STOPWORDS = frozenset(_FUNCTION_WORDS.split())
#: Suffixes a light stemmer strips, longest first: plain English inflections and the common
#: derivations that turn a verb into a noun ("redirection", "handler").
_SUFFIXES = (
    "ations",
    "ation",
    "ings",
    "ions",
    "ing",
    "ion",
    "ers",
    "ies",
    "ied",
    "er",
    "es",
    "ed",
    "s",
)
_ENDINGS = ("", "s", "es", "ed", "ing", "er", "ers", "ion", "ions", "e", "ation")
#: Weight of a variant that the query did not spell: below every word it did.
VARIANT_WEIGHT = 0.5
#: Numbers rarely name what a request is about (line numbers, versions, counts).
_NUMBER_WEIGHT = 0.75
#: Requests longer than this many words (issues, tracebacks) get first-line and repetition
#: emphasis; a short question is all subject.
_SHORT_REQUEST = 40


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if suffix in ("ies", "ied"):
                return base + "y"
            if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # "running" -> "run"
            return base
    return word


@lru_cache(maxsize=1 << 14)
def word_variants(word: str) -> tuple[str, ...]:
    """Inflections of an English word, itself excluded: ``redirects`` -> ``redirect``,
    ``redirected``, ``redirection``... (only the ones an index holds will match)."""
    lowered = word.lower()
    if len(lowered) < 4 or not lowered.isalpha():
        return ()
    base = _stem(lowered)
    forms = {base + ending for ending in _ENDINGS}
    if base.endswith("e"):
        forms.update((base[:-1] + "ing", base + "d", base[:-1] + "ation"))
    if base.endswith("y"):
        forms.update((base[:-1] + "ies", base[:-1] + "ied"))
    forms.discard(lowered)
    return tuple(sorted(f for f in forms if len(f) >= 3))


def _is_rule(word: str) -> bool:
    """A run of underscores (``____``): a drawn line of output, not a word."""
    return not word.strip("_")


def _reporters_lines(query: str) -> Iterator[tuple[str, bool]]:
    """Each line of a report with whether it is pasted (inside a fenced block).

    Left out: HTML comments, headings and check-list lines: an issue template's parts, not
    what the reporter says or pastes.
    """
    pasted = False
    for line in _COMMENT.sub(" ", query).splitlines():
        if _FENCE.match(line):
            pasted = not pasted
        elif not _TEMPLATE_LINE.match(line):
            yield line.strip(), pasted


def _emphasis_counts(query: str) -> tuple[Counter[str], set[str]]:
    """How often each word occurs, and the words of the report's own sentences."""
    counts: Counter[str] = Counter()
    told: set[str] = set()
    for line, pasted in _reporters_lines(query):
        words = [w.lower() for w in _WORD.findall(line)]
        counts.update(words)
        if not pasted:
            told.update(words)
    return counts, told


def is_short_request(query: str) -> bool:
    """Whether ``query`` is a short question (at most ``_SHORT_REQUEST`` words), whose every
    word was chosen, rather than a long report (an issue, a traceback)."""
    return len([w for w in _WORD.findall(query) if not _is_rule(w)]) <= _SHORT_REQUEST


def weighted_query_terms(query: str) -> dict[str, float]:
    """:func:`query_terms` with a weight each: 2 for what looks like code, 1 for words.

    Code is a path, or a word with an inner underscore or an inner capital (``bulk_create``,
    ``QuerySet``); prose words, words with digits (``utf8``, ``r0914``), words in capitals
    (``INSERT``) and the parts of identifiers weigh 1, numbers 0.75. A long request (an issue)
    states its subject first and repeats it: a word of the first line gains 1, and each
    repetition 0.25 (up to 0.75); and it says what matters in its own sentences, beside the
    code, output and package lists it pastes in fenced blocks: a word of those sentences gains
    0.25. An issue template's comments, headings and check-list lines count for neither, and
    runs of underscores (output's drawn lines) are no words. The inflections of prose words
    (``redirects`` for ``redirect``) follow at ``VARIANT_WEIGHT``, so a question finds code
    that spells a word another way, and they never crowd out what the query spelled.
    """
    words = [w for w in _WORD.findall(query) if not _is_rule(w)]
    long_request = len(words) > _SHORT_REQUEST
    first_line = {w.lower() for w in _WORD.findall(query.lstrip().split("\n", 1)[0][:300])}
    counts, told = _emphasis_counts(query) if long_request else (Counter(), set())

    def emphasis(term: str) -> float:
        if not long_request:
            return 0.0
        return (
            (1.0 if term in first_line else 0.0)
            + (_PROSE_WEIGHT if term in told else 0.0)
            + 0.25 * min(counts[term] - 1, 3)
        )

    weights: dict[str, float] = {}
    prose: list[str] = []
    for token in _PATHLIKE.findall(query):
        weights.setdefault(_joined(token), 2)
        name = token.rsplit("/", 1)[-1]
        if name != token and "." in name:
            weights.setdefault(_joined(name), 2)
    for word in words:
        lowered = word.lower()
        if lowered.isdigit():
            weights.setdefault(lowered, _NUMBER_WEIGHT)
        elif len(lowered) >= _MIN_PART:
            code = "_" in word.strip("_") or (
                word[1:] != word[1:].lower() and word != word.upper()  # camelCase
            )
            weight = (2 if code else 1) + emphasis(lowered)
            weights[lowered] = max(weights.get(lowered, 0.0), weight)
            if not code:
                prose.append(lowered)
        for part in identifier_parts(word):
            weights.setdefault(part, 1)
    for word in prose:
        if word in STOPWORDS:
            continue
        for variant in word_variants(word):
            weights.setdefault(variant, VARIANT_WEIGHT)
    return weights
