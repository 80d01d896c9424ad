"""What a request names explicitly: file paths, dotted names and identifiers."""

from __future__ import annotations

import re

import attrs

from contextfuse.plugin import NodeStore

__all__ = [
    "PATH_WEIGHT",
    "SYMBOL_WEIGHT",
    "Mentions",
    "extract_mentions",
    "mention_scores",
    "specific_mentions",
]

#: How much an exact mention scores, relative to the best BM25 hit (which scores 1.0).
PATH_WEIGHT = 1.5
SYMBOL_WEIGHT = 1.0

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
