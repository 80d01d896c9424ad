"""Blocks: the top-level code of a large file that no declaration holds.

A config file, a route table, a test script or a 5,000-line schema module is mostly
statements, calls and literals, not declarations; without blocks its code is reachable only
through the file node, which a budget rarely fits. Both parsers describe the statements of a
large file, namespace or value (:class:`Statement`) and :func:`add_blocks` turns the runs of
statements that no symbol holds into ``block`` symbols of a manageable size: consecutive
small statements are grouped, and a statement longer than a piece is opened into its parts
(the body of a callback, the entries of a literal), recursively. A class's own lines (its
docstring, its fields) are not split: its signatures show them, and its methods are nodes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import attrs

from contextfuse.kb.parsed import ParsedFile, Qualnames, Segment, Symbol

__all__ = [
    "DECLARATION_LINES",
    "GROUP_LINES",
    "PIECE_LINES",
    "Statement",
    "add_blocks",
    "first_line_segments",
]

#: A container (file, class) longer than this is split into blocks; a statement longer than
#: this is opened into its parts. About 1,500 tokens: several fit in the smallest budgets.
PIECE_LINES = 150
#: Consecutive small statements are grouped into blocks of up to this many lines.
GROUP_LINES = 60
#: A declaration (a struct, an enum, a type) is one unit up to this size; a longer one (a
#: generated table of hundreds of variants) is opened into blocks of its entries.
DECLARATION_LINES = 3 * PIECE_LINES
#: A run of statements shorter than this stays in its container (a stray one-liner between
#: two functions would be a node of a few tokens).
_MIN_LINES = 3
#: Blocks opened inside blocks at most this deep: deeper nesting (generated data) stays in
#: the innermost block, and the recursion stays bounded whatever the input.
_MAX_OPENED = 8
_COMMENT_MARKS = ("#", "//", "/*", "*", "--")
_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*|\d\w*")
#: Leading words that say how a statement binds, not what it is.
_SKIPPED_WORDS = frozenset(
    {
        "export",
        "default",
        "declare",
        "pub",
        "const",
        "let",
        "var",
        "static",
        "final",
        "public",
        "private",
        "protected",
        "async",
        "await",
        "new",
        "return",
        "void",
    }
)


@attrs.frozen
class Statement:
    """One statement (or entry of a literal) of a container, by its 1-based lines.

    ``claimed``: a symbol or an import already holds it, so no block takes it; ``weak``: a
    comment, which joins the block of the statement after it but never makes a block alone;
    ``parts``: the statement's own statements or entries, to open it when it is too long.
    """

    first: int
    last: int
    claimed: bool = False
    weak: bool = False
    parts: Callable[[], Sequence[Statement]] | None = None

    @property
    def lines(self) -> int:
        """How many lines the statement spans."""
        return self.last - self.first + 1


def add_blocks(
    parsed: ParsedFile,
    lines: list[str],
    statements: Sequence[Statement],
    parent: str,
    names: Qualnames,
) -> None:
    """Add ``block`` symbols for the unclaimed runs of ``statements`` to ``parsed``.

    ``parent`` is the qualname of the container ("" for the file); a block opened into parts
    is the parent of the blocks made of them.
    """
    _Blocks(parsed, lines, names).split(statements, parent)


def first_line_segments(lines: list[str], first: int, last: int) -> list[Segment]:
    """Depth-4 text of a piece of code: its first line, ``...`` and its closing line."""
    if last - first + 1 <= 2:
        return [(first, "\n".join(lines[first - 1 : last]))]
    head = lines[first - 1]
    indent = head[: len(head) - len(head.lstrip())]
    segments: list[Segment] = [(first, head), (last, f"{indent}    ...")]
    closing = lines[last - 1].strip()
    if closing[:1] in ("}", ")", "]"):
        segments.append((last, indent + closing))
    return segments


class _Blocks:
    def __init__(self, parsed: ParsedFile, lines: list[str], names: Qualnames) -> None:
        self.parsed = parsed
        self.lines = lines
        self.names = names

    def split(self, statements: Sequence[Statement], parent: str, opened: int = 0) -> None:
        run: list[Statement] = []
        for statement in statements:
            if statement.claimed:
                self.run(run, parent, opened)
                run = []
            else:
                run.append(statement)
        self.run(run, parent, opened)

    def run(self, run: list[Statement], parent: str, opened: int) -> None:
        """Group a run of unclaimed statements into blocks; open the long ones."""
        group: list[Statement] = []
        for statement in run:
            long = statement.lines > PIECE_LINES and not statement.weak
            if long and opened < _MAX_OPENED and statement.parts is not None:
                self.emit(_without_trailing_comments(group), parent)
                block = self.block(statement.first, statement.last, parent)
                self.split(statement.parts(), block, opened + 1)
                group = []
                continue
            if group and statement.last - group[0].first + 1 > GROUP_LINES and _strong(group):
                carried = _trailing_comments(group)  # comments go with what they precede
                self.emit(group[: len(group) - len(carried)], parent)
                group = carried
            group.append(statement)
        self.emit(group, parent)

    def emit(self, group: list[Statement], parent: str) -> None:
        strong = [s for s in group if not s.weak]
        if not strong or sum(s.lines for s in strong) < _MIN_LINES:
            return
        self.block(group[0].first, strong[-1].last, parent, strong[0].first)

    def block(self, first: int, last: int, parent: str, code: int | None = None) -> str:
        """A block of lines ``first..last`` whose code (after any comment) starts at ``code``."""
        code = _code_line(self.lines, first if code is None else code, last)
        label = " ".join(self.lines[code - 1].split())[:160]
        name = _block_name(self.lines, code, last)
        qualname = self.names.unique(f"{parent}.{name}" if parent else name)
        self.parsed.symbols.append(
            Symbol(
                kind="block",
                name=name,
                qualname=qualname,
                parent=parent,
                line_start=first,
                line_end=last,
                label=label,
                segments=first_line_segments(self.lines, first, last),
            )
        )
        return qualname


def _strong(group: list[Statement]) -> bool:
    return any(not s.weak for s in group)


def _trailing_comments(group: list[Statement]) -> list[Statement]:
    count = 0
    while count < len(group) and group[len(group) - 1 - count].weak:
        count += 1
    return group[len(group) - count :]


def _without_trailing_comments(group: list[Statement]) -> list[Statement]:
    return group[: len(group) - len(_trailing_comments(group))]


def _code_line(lines: list[str], first: int, last: int) -> int:
    """The first line from ``first`` that is neither blank nor a comment (``first`` if none)."""
    for number in range(first, last + 1):
        stripped = lines[number - 1].lstrip()
        if stripped and not stripped.startswith(_COMMENT_MARKS):
            return number
    return first


def _block_name(lines: list[str], first: int, last: int) -> str:
    """A name from the block's first words: ``app.get``, ``describe``, ``if``, ``EMOJI``."""
    for number in range(first, min(last, first + 3) + 1):
        for word in _NAME.findall(lines[number - 1]):
            if word not in _SKIPPED_WORDS:
                return str(word)[:60]
    return "block"
