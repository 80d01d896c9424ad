"""What a request names explicitly: file paths, dotted names, identifiers and patterns.

A regular expression in a request is written between slashes, ``/def\\s+dispatch_\\w+/``,
with ``i`` after the closing slash to ignore case (``/todo|fixme/i``) and ``\\/`` for a slash
inside it; it stands alone, after a space, a quote, a bracket or a backquote, and neither
starts nor ends with a space (so paths such as ``src/app/main.py``, words such as ``and/or``
and separators such as ``3 passed / 2 failed /`` are not patterns). It is searched as a
regular expression over the nodes' text (RE2 syntax, linear in the text whatever the
pattern), not as words; one that is not valid RE2 is searched as words instead.
"""

from __future__ import annotations

import re

import attrs

from contextfuse.plugin import InvalidPatternError, NodeStore, RegexSearch

__all__ = [
    "PATH_WEIGHT",
    "PATTERN_WEIGHT",
    "SYMBOL_WEIGHT",
    "Mentions",
    "Pattern",
    "extract_mentions",
    "extract_patterns",
    "mention_scores",
    "pattern_scores",
    "specific_mentions",
]

#: How much an exact mention scores, relative to the best BM25 hit (which scores 1.0).
PATH_WEIGHT = 1.5
SYMBOL_WEIGHT = 1.0
#: The node with the most lines matching a pattern of the request scores this much; others in
#: proportion to their matching lines.
PATTERN_WEIGHT = 1.0
PATTERN_HITS = 100
_MAX_PATTERNS = 5  # patterns searched per request; the rest are searched as words
# Alternatives that cannot both match the same character, so this scans in linear time.
_PATTERN = re.compile(r"""(?:^|(?<=[\s`'"(\[]))/((?:[^/\\\n]|\\.)+)/(i?)(?=$|[\s`'")\],.;:!?])""")

_EXTENSIONS = (
    "py|pyi|js|jsx|ts|tsx|go|rs|java|kt|c|h|cc|cpp|hpp|cs|rb|php|swift|scala|md|rst|txt|"
    "toml|yaml|yml|json|cfg|ini|sh"
)
_PATH = re.compile(rf"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:{_EXTENSIONS}))\b")
_TRACEBACK = re.compile(r'File "([^"]+)", line \d+(?:, in (\w+))?')
_DOTTED = re.compile(r"\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\b")
_BACKTICK = re.compile(r"`([^`\n]{1,120})`")
_CAMEL = re.compile(r"\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]+[A-Z]\w*)\b")
_SNAKE = re.compile(r"\b([A-Za-z]\w*_\w+)\b")
_CALL = re.compile(r"\b([A-Za-z_]\w{2,})\(")
_IDENT = re.compile(r"[A-Za-z_]\w*")

# Words that look like identifiers in prose but name nothing in a codebase.
_NOISE = frozenset(
    {
        "e.g",
        "i.e",
        "etc",
        "self",
        "cls",
        "none",
        "true",
        "false",
        "null",
        "print",
        "return",
        "import",
        "from",
        "def",
        "class",
        "the",
        "this",
        "that",
        "with",
        "for",
        "and",
        "not",
        "python",
        "http",
        "https",
        "www",
        "com",
        "org",
    }
)


@attrs.frozen
class Mentions:
    """Paths and symbol names a request mentions, most specific first."""

    paths: tuple[str, ...]
    symbols: tuple[str, ...]


def _keep(name: str) -> bool:
    return len(name) > 2 and name.lower() not in _NOISE


def extract_mentions(text: str, limit: int = 60) -> Mentions:
    """Find file paths, dotted names and identifiers in ``text``."""
    paths: dict[str, None] = {}
    symbols: dict[str, None] = {}
    for match in _TRACEBACK.finditer(text):
        paths[match.group(1).replace("\\", "/")] = None
        if match.group(2) and _keep(match.group(2)):
            symbols[match.group(2)] = None
    for match in _PATH.finditer(text):
        candidate = match.group(1).strip("./")
        if "/" in candidate or candidate.count(".") == 1:
            paths[candidate] = None
    for pattern in (_BACKTICK,):
        for match in pattern.finditer(text):
            for ident in _IDENT.findall(match.group(1)):
                if _keep(ident):
                    symbols[ident] = None
    for match in _DOTTED.finditer(text):
        dotted = match.group(1)
        if _PATH.fullmatch(dotted) or "." not in dotted.strip("."):
            continue
        parts = [p for p in dotted.split(".") if _keep(p)]
        if len(parts) >= 2:
            symbols[".".join(parts[-2:])] = None
        if parts:
            symbols[parts[-1]] = None
    for pattern in (_CALL, _CAMEL, _SNAKE):
        for match in pattern.finditer(text):
            if _keep(match.group(1)):
                symbols[match.group(1)] = None
    return Mentions(tuple(list(paths)[:limit]), tuple(list(symbols)[:limit]))


def mention_scores(text: str, nodes: NodeStore) -> dict[str, float]:
    """Node URI -> score for the files and symbols ``text`` names exactly.

    A path scores ``PATH_WEIGHT`` shared among the files it matches; a name defined in one
    place scores ``SYMBOL_WEIGHT``, one defined in twenty places a fifth of that per place.
    """
    scores: dict[str, float] = {}
    mentions = extract_mentions(text)
    for path in mentions.paths:
        found = nodes.find_paths(path, limit=5)
        for node in found:
            scores[node.uri] = scores.get(node.uri, 0.0) + PATH_WEIGHT / len(found)
    for name in mentions.symbols:
        found = nodes.find_symbols(name, limit=20)
        for node in found:
            scores[node.uri] = scores.get(node.uri, 0.0) + SYMBOL_WEIGHT / len(found) ** 0.5
    return scores


#: A mention scoring below this names too many places to say where the request points
#: (``__init__.py`` matches every package, ``run`` is defined everywhere).
SPECIFIC = 0.5


def specific_mentions(text: str, nodes: NodeStore) -> dict[str, float]:
    """:func:`mention_scores` without the mentions that match many places.

    For strategies that fuse mentions by rank: a rank says nothing of how weak a match is,
    so weak matches must not enter the ranking at all.
    """
    return {uri: score for uri, score in mention_scores(text, nodes).items() if score >= SPECIFIC}


@attrs.frozen
class Pattern:
    """A regular expression written in a request, and where it was written."""

    source: str  # as RE2 reads it: ``\\/`` is a slash
    ignore_case: bool
    start: int
    end: int


def extract_patterns(text: str, limit: int = _MAX_PATTERNS) -> list[Pattern]:
    """The ``/pattern/`` and ``/pattern/i`` of a request, in order, at most ``limit``."""
    found: list[Pattern] = []
    for match in _PATTERN.finditer(text):
        if len(found) == limit:
            break
        source = match.group(1).replace("\\/", "/")
        if source != source.strip():
            continue  # ``passed / 180 deselected / 2 errors``: slashes between words
        found.append(Pattern(source, match.group(2) == "i", match.start(), match.end()))
    return found


def pattern_scores(text: str, backend: object) -> tuple[str, dict[str, float]]:
    """Search the patterns of ``text``: ``(text left for word search, node URI -> score)``.

    A pattern that the backend cannot search (not valid RE2, or a text backend without the
    ``RegexSearch`` extension) stays in the text, to be searched as words.
    """
    patterns = extract_patterns(text)
    if not patterns or not isinstance(backend, RegexSearch):
        return text, {}
    scores: dict[str, float] = {}
    words: list[str] = []
    cursor = 0
    for pattern in patterns:
        try:
            hits = backend.search_regex(
                pattern.source, limit=PATTERN_HITS, ignore_case=pattern.ignore_case
            )
        except InvalidPatternError:
            continue
        words.append(text[cursor : pattern.start])
        cursor = pattern.end
        best = max((h.score for h in hits), default=1.0) or 1.0
        for hit in hits:
            scores[hit.uri] = scores.get(hit.uri, 0.0) + PATTERN_WEIGHT * hit.score / best
    words.append(text[cursor:])
    return " ".join(part.strip() for part in words if part.strip()), scores
