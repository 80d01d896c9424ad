"""Regular-expression search over node text, linear in the text searched.

Patterns use RE2 syntax (Python's ``re`` without backreferences and look-around): RE2 matches
in time linear in the text whatever the pattern, so no pattern can stall a search. ``^`` and
``$`` match at line boundaries, ``.`` does not match a newline. A match counts for the node
whose own text holds the line it starts on: the innermost node around that line (a method
rather than its class, a class rather than its file). Both stores share this scan: they
differ only in how they list the files to scan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import attrs

from contextfuse.backends import SearchHit
from contextfuse.errors import InvalidPatternError

__all__ = [
    "MAX_MATCHED_LINES",
    "MAX_PATTERN_LENGTH",
    "CompiledPattern",
    "NodeSpan",
    "compile_pattern",
    "matching_lines",
    "rank_matches",
]

#: Longer patterns are refused: RE2's work grows with the pattern's size too.
MAX_PATTERN_LENGTH = 500
#: A search stops counting after this many matching lines: a pattern that matches more says
#: little about where to look, and the count bounds the work done in Python.
MAX_MATCHED_LINES = 5000
_MAX_PROGRAM_BYTES = 8 << 20  # RE2's memory for one compiled pattern

K = TypeVar("K")  # how a store names a file (its row id)


@attrs.frozen
class CompiledPattern:
    """A pattern ready to search UTF-8 text, with the text it was written as."""

    source: str
    ignore_case: bool
    regexp: Any  # re2._Regexp over bytes


@attrs.frozen
class NodeSpan:
    """A node of a file by its lines (1-based, inclusive), for attributing matches."""

    uri: str
    kind: str
    first: int
    last: int


def compile_pattern(pattern: str, *, ignore_case: bool = False) -> CompiledPattern:
    """Compile ``pattern``; :class:`InvalidPatternError` names what is wrong with it."""
    shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    shown = shown.encode("utf-8", "backslashreplace").decode("utf-8")  # printable in a message
    if not pattern:
        raise InvalidPatternError("empty regular expression")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidPatternError(
            f"regular expression of {len(pattern)} characters: at most "
            f"{MAX_PATTERN_LENGTH} are searched"
        )
    import re2  # google-re2: loaded on the first regex search only

    options = re2.Options()
    options.log_errors = False
    options.never_capture = True
    options.max_mem = _MAX_PROGRAM_BYTES
    options.case_sensitive = not ignore_case
    try:
        source = pattern.encode("utf-8")
        re2.compile(source, options)  # alone first, so that an error quotes only the pattern
        regexp = re2.compile(b"(?m)" + source, options)
    except UnicodeError:
        raise InvalidPatternError(f"regular expression /{shown}/ is not valid text") from None
    except (re2.error, ValueError, TypeError) as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise InvalidPatternError(f"invalid regular expression /{shown}/: {reason}") from None
    return CompiledPattern(pattern, ignore_case, regexp)


def matching_lines(pattern: CompiledPattern, text: str | bytes, limit: int) -> list[int]:
    """The 1-based lines of ``text`` (or its UTF-8 bytes) on which a match starts, at most
    ``limit`` of them."""
    if limit <= 0:
        return []
    data = text.encode("utf-8", "replace") if isinstance(text, str) else text
    regexp = pattern.regexp
    found: list[int] = []
    position = 0
    counted = 0  # bytes of ``data`` whose newlines are counted in ``line``
    line = 1
    end = len(data)
    while position <= end and len(found) < limit:
        match = regexp.search(data, position)
        if match is None:
            break
        start = match.start()
        line += data.count(b"\n", counted, start)
        counted = start
        found.append(line)
        newline = data.find(b"\n", start)
        if newline < 0:
            break
        position = newline + 1  # one match per line is enough
    return found


def rank_matches(
    pattern: CompiledPattern,
    files: Iterable[tuple[K, str | bytes]],
    spans_of: Callable[[K], Sequence[NodeSpan]],
    limit: int,
    kinds: Sequence[str] | None = None,
) -> list[SearchHit]:
    """Nodes ranked by how many of their own lines match, best first.

    ``files`` yields each file's key and text (or UTF-8 bytes: a store reads them without
    decoding); ``spans_of(key)`` gives the spans of its nodes
    (the file node spanning all of it), read only for files with a match. With ``kinds``, a
    line counts for the innermost node of those kinds around it.
    """
    if limit <= 0:
        return []
    wanted = frozenset(kinds) if kinds else None
    counts: dict[str, int] = {}
    budget = MAX_MATCHED_LINES
    for key, text in files:
        if budget <= 0:
            break
        lines = matching_lines(pattern, text, budget)
        budget -= len(lines)
        if not lines:
            continue
        spans = [s for s in spans_of(key) if wanted is None or s.kind in wanted]
        for uri in _innermost(spans, lines):
            if uri is not None:
                counts[uri] = counts.get(uri, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return [SearchHit(uri, float(count)) for uri, count in ranked]


def _innermost(spans: Sequence[NodeSpan], lines: Sequence[int]) -> list[str | None]:
    """For each of ``lines`` (ascending), the URI of the smallest span holding it, or None.

    Node spans nest (a method inside its class inside its file), so one sweep with a stack
    of the open spans finds them all: the top of the stack is the innermost.
    """
    order = sorted(spans, key=lambda s: (s.first, -s.last))
    stack: list[NodeSpan] = []
    owners: list[str | None] = []
    position = 0
    for line in lines:
        while position < len(order) and order[position].first <= line:
            span = order[position]
            position += 1
            while stack and stack[-1].last < span.first:
                stack.pop()
            stack.append(span)
        while stack and stack[-1].last < line:
            stack.pop()
        owners.append(stack[-1].uri if stack else None)
    return owners
