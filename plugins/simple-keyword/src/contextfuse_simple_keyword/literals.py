"""Literal evidence: the option names, setting keys and messages a request quotes, found in code.

A bug report names what the user typed or read, not the function behind it: an option
(``--collect-only``), a setting (``ignore-paths``) or a message quoted from the output
(``"Unrecognized QDP line: 1 2 3"``). The code spells these the same way, as string literals
(``addoption("--collect-only", ...)``, a dict key, the text of an exception), and those
literals sit in the code that handles them. Full-text search cannot see them: it reads
``collect`` and ``only`` apart, each common. Searched as phrases (the words in a row) over
implementation code alone (not tests, not prose), the few places that hold them are strong
evidence; a phrase found in many places (``in-place``, ``for the``) says nothing and is
dropped.
"""

from __future__ import annotations

import re

import attrs

from contextfuse.plugin import SYMBOL_KINDS, BackendSet, PhraseSearch, is_test_path, uri_path

__all__ = ["Literal", "extract_literals", "literal_evidence"]

#: Literals searched per request, the first ones found (a report states its subject first).
MAX_LITERALS = 12
#: A literal held by more places of implementation code than this names nothing specific.
MAX_PLACES = 8
#: Hits asked of the text backend per literal: tests are dropped after the search.
_SEARCH_DEPTH = 40

# A long option, ``--collect-only`` or ``--recursive=y`` (the value is not part of it).
_FLAG = re.compile(r"(?<![\w-])--([A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*)")
# A hyphenated name, ``ignore-paths``, ``too-many-locals``: every part starts with a letter
# and has two characters at least, so versions (``pytest-5``), ranges (``a-z``) and
# encodings (``utf-8``) are not names.
_HYPHENATED = re.compile(
    r"(?<![\w./-])([A-Za-z][A-Za-z0-9_]+(?:-[A-Za-z][A-Za-z0-9_]+)+)(?![\w/-]|\.\w)"
)
# Text between matching quotes on one line; a message of a few words.
_QUOTED = re.compile(r"""(?<!\w)(["'`])([^"'`\n]{6,120})\1(?!\w)""")
# Text in quotes or backquotes on one line, and the key of a setting's line.
_SPAN = re.compile(r"""(["'`])([^"'`\n]{1,120})\1""")
_KEY = re.compile(r"(?m)^[ \t]*([A-Za-z][\w.-]*)[ \t]*[=:]")
_WORD = re.compile(r"\w+")
# A word of a message: letters, with an apostrophe inside (``don't``).
_PLAIN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
# Every kind of code symbol but containers of other symbols: the literal's own place.
_KINDS = tuple(sorted(SYMBOL_KINDS - {"module"}))


@attrs.frozen
class Literal:
    """A literal of a request: its words, as they must follow each other in the code."""

    text: str
    words: tuple[str, ...]


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in _WORD.findall(text))


def _message(quoted: str) -> str:
    """The longest run of plain words of a quoted text, if it reads as a message.

    The values a program put in its message (a path, a number, ``{line}`` in the code) break
    the run; the words around them are the part the code spells. A message has three words
    at least, two of them long (not ``'for the'`` nor a fragment of code such as
    ``'a', 'b'`` or a command line).
    """
    best: list[str] = []
    run: list[str] = []
    for token in [*quoted.split(), ""]:
        word = token.rstrip(".,:;!?")
        if word and _PLAIN.fullmatch(word):
            run.append(word)
            continue
        if len(run) > len(best):
            best = run
        run = []
    long_words = sum(len(word) >= 4 for word in best)
    return " ".join(best) if len(best) >= 3 and long_words >= 2 else ""


def _name_places(text: str) -> list[tuple[int, str]]:
    """Where a request writes a name as a name, with their offsets: its first line (the
    title), text in quotes or backquotes, and the key of a ``key = value`` or ``key: value``
    line (a setting). Elsewhere a hyphenated word is prose (``side-effects``) or a program's
    output (a list of message names), not what the request is about."""
    title = text.lstrip()
    places = [(len(text) - len(title), title.split("\n", 1)[0])]
    places += [(m.start(2), m.group(2)) for m in _SPAN.finditer(text)]
    places += [(m.start(1), m.group(1)) for m in _KEY.finditer(text)]
    return places


def extract_literals(text: str, limit: int = MAX_LITERALS) -> list[Literal]:
    """Options, hyphenated names and quoted messages of ``text``, in order of appearance."""
    found: dict[tuple[str, ...], tuple[int, str]] = {}
    for match in _FLAG.finditer(text):
        found.setdefault(_words(match.group(1)), (match.start(), match.group(0)))
    for offset, place in _name_places(text):
        for match in _HYPHENATED.finditer(place):
            found.setdefault(_words(match.group(1)), (offset + match.start(), match.group(0)))
    for match in _QUOTED.finditer(text):
        message = _message(match.group(2))
        if message:
            found.setdefault(_words(message), (match.start(), message))
    ordered = sorted(found.items(), key=lambda item: item[1][0])
    return [Literal(raw, words) for words, (_, raw) in ordered if words][:limit]


def literal_evidence(text: str, backends: BackendSet) -> list[str]:
    """Nodes of implementation code holding the literals of ``text``, most specific first.

    A literal found in ``n`` places gives each ``1 / n``; a node's evidence is the sum over
    the literals it holds. Empty when the text backend cannot search phrases.
    """
    search = backends.text
    if not isinstance(search, PhraseSearch):
        return []
    evidence: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for literal in extract_literals(text):
        hits = search.search_phrase(literal.words, limit=_SEARCH_DEPTH, kinds=_KINDS)
        places = [h.uri for h in hits if not is_test_path(uri_path(h.uri))]
        if not places or len(places) > MAX_PLACES:
            continue
        for uri in places:
            evidence[uri] = evidence.get(uri, 0.0) + 1.0 / len(places)
            first_seen.setdefault(uri, len(first_seen))
    return sorted(evidence, key=lambda uri: (-evidence[uri], first_seen[uri]))
