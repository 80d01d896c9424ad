"""What a parser extracts from one file, independent of the language.

Parsers produce a :class:`ParsedFile`; ``render`` turns it into node renderings and
``links`` turns its imports and names into graph edges.
"""

from __future__ import annotations

import attrs

__all__ = ["Import", "ParsedFile", "Qualnames", "Segment", "Symbol", "preorder"]

#: A block of depth-4 text that starts at a 1-based line of the file.
Segment = tuple[int, str]


@attrs.define(slots=True)
class Symbol:
    """A class, function, method, type or document section found in a file.

    ``segments`` are this symbol's own contribution to the depth-4 (signatures) rendering,
    verbatim source blocks keyed by their first line; a container's rendering merges its
    children's segments in line order.
    """

    kind: str
    name: str
    qualname: str
    parent: str  # qualname of the enclosing symbol, "" for the file
    line_start: int
    line_end: int
    label: str  # one outline line, e.g. ``def bar(self, x)``
    summary: str = ""
    segments: list[Segment] = attrs.field(factory=list)
    bases: list[str] = attrs.field(factory=list)


@attrs.define(slots=True)
class Import:
    """An import as written: a module specifier and the names taken from it (may be empty).

    Python: ``from ..a import b`` -> ``Import("..a", ("b",))``; JavaScript: ``Import("./x")``.
    """

    module: str
    names: tuple[str, ...] = ()


@attrs.define(slots=True)
class ParsedFile:
    """Symbols, depth-4 head, summary and links of one file."""

    language: str
    parser: str  # parser id and version; a different one forces a re-parse
    symbols: list[Symbol] = attrs.field(factory=list)
    head: list[Segment] = attrs.field(factory=list)  # the file's own depth-4 blocks
    summary: str = ""
    imports: list[Import] = attrs.field(factory=list)
    # local name -> (module specifier, imported name): ``from m import A as B`` -> B: (m, A)
    bindings: dict[str, tuple[str, str]] = attrs.field(factory=dict)
    note: str = ""  # why a parser fell back to plain text, for the stats


class Qualnames:
    """Unique qualified names within one file: a repeated one gets ``@2``, ``@3``, ...

    Overloads, a TypeScript interface and the const of the same name, a Python function
    redefined in another branch: each keeps its own node. The suffix counts same-named
    declarations in file order, so it does not change when lines are added above them.
    """

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def unique(self, qualname: str) -> str:
        """``qualname``, or ``qualname@<n>`` when it is the n-th use of that name."""
        count = self._counts.get(qualname, 0) + 1
        self._counts[qualname] = count
        if count == 1:
            return qualname
        suffixed = f"{qualname}@{count}"
        while suffixed in self._counts:  # a real name that looks like a suffixed one
            count += 1
            suffixed = f"{qualname}@{count}"
        self._counts[qualname] = count
        self._counts[suffixed] = 1
        return suffixed

    def __contains__(self, qualname: object) -> bool:
        return qualname in self._counts


def preorder(symbols: list[Symbol]) -> list[Symbol]:
    """Symbols with every parent before its children, siblings in line order.

    The index writer resolves a node's parent among the nodes written before it, and outlines
    list siblings in this order.
    """
    by_name = {s.qualname: s for s in symbols}
    children: dict[str, list[Symbol]] = {}
    for symbol in symbols:
        parent = symbol.parent if symbol.parent in by_name else ""
        children.setdefault(parent, []).append(symbol)
    ordered: list[Symbol] = []
    stack = _in_line_order(children.get("", []))
    while stack:
        symbol = stack.pop()
        ordered.append(symbol)
        stack.extend(_in_line_order(children.get(symbol.qualname, [])))
    return ordered


def _in_line_order(symbols: list[Symbol]) -> list[Symbol]:
    """Reversed line order: what a stack pops first is the first in the file."""
    return list(reversed(sorted(symbols, key=lambda s: (s.line_start, -s.line_end))))
