"""What a parser extracts from one file, independent of the language.

Parsers produce a :class:`ParsedFile`; ``render`` turns it into node renderings and
``links`` turns its imports and names into graph edges.
"""

from __future__ import annotations

import attrs

__all__ = ["Import", "ParsedFile", "Segment", "Symbol"]

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
