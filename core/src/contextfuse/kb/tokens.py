"""Real token counts of a file's renderings, each distinct piece of text counted once.

A class's full source contains its methods' and a file's contains everything; a file's
signatures (depth 4) hold its classes' and their methods', and so on: counted text by text,
most lines would be counted three or four times, and the same lines recur from file to
file (imports, ``return None``, a closing bracket, translation keys).

For tiktoken's ``cl100k_base`` a count is the sum of the counts of a text's pieces, cut
before every line that has text: its pre-tokenizer never lets a piece run from one line
into the next when that next line holds a non-space character with no carriage return
before it (a newline ends the only patterns that cross lines, and none of them looks
behind). So every text is cut there, and each piece is counted once per process and then
looked up, with its newline (inside a text) or without (its last piece). (``o200k_base``
lets ``;\\n//`` be one piece, so it does not compose.) Other tokenizers count every distinct
text of a file in full.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Sequence

from contextfuse.kb.render import NodeDraft
from contextfuse.tokenizer import Tokenizer

__all__ = ["COMPOSABLE", "count_renderings"]

#: Tokenizers whose counts compose over line boundaries (see the module docstring).
COMPOSABLE = frozenset({"tiktoken:cl100k_base"})

#: Where a text is cut: after a newline, before a line with a non-space character and no
#: carriage return or newline before it.
_CUT = re.compile(r"\n(?=[^\S\r\n]*\S)")
#: Pieces remembered per process and kind; past this many the memory starts again (it only
#: saves time), about 10 MB each.
_MAX_PIECES = 50_000


class _Counts(dict[str, int]):
    """Token counts of pieces of text, each counted on first use (with ``suffix``)."""

    def __init__(self, tokenizer: Tokenizer, suffix: str) -> None:
        super().__init__()
        # Without the tokenizer's own memory of short texts, where it offers that: this
        # dict is the memory (of every piece, however long).
        plain = getattr(tokenizer, "plain_counter", None)
        count = plain() if callable(plain) else None
        self._count: Callable[[str], int] = count or tokenizer.count
        self._suffix = suffix

    def __missing__(self, piece: str) -> int:
        if len(self) >= _MAX_PIECES:
            self.clear()
        count = self[piece] = self._count(piece + self._suffix)
        return count


class _PieceCounter:
    """Counts texts of a composable tokenizer piece by piece (see the module docstring)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.inner = _Counts(tokenizer, "\n")  # a piece followed by more text
        self.last = _Counts(tokenizer, "")  # the last piece of a text

    def count(self, text: str) -> int:
        pieces = _CUT.split(text)
        last = pieces.pop()
        return sum(map(self.inner.__getitem__, pieces)) + self.last[last]


#: One counter per tokenizer, kept while the tokenizer lives (a worker process keeps its
#: tokenizer for the whole run: ``contextfuse.kb.process``).
_COUNTERS: weakref.WeakKeyDictionary[Tokenizer, _PieceCounter] = weakref.WeakKeyDictionary()


def _piece_counter(tokenizer: Tokenizer) -> _PieceCounter:
    try:
        counter = _COUNTERS.get(tokenizer)
        if counter is None:
            counter = _COUNTERS[tokenizer] = _PieceCounter(tokenizer)
    except TypeError:  # not weakly referable, or not hashable: a counter for this call only
        return _PieceCounter(tokenizer)
    return counter


def count_renderings(tokenizer: Tokenizer, drafts: Sequence[NodeDraft]) -> list[int]:
    """Token counts of every draft's four texts (depths 9, 4, 2, 0), in order."""
    count = _piece_counter(tokenizer).count if tokenizer.name in COMPOSABLE else tokenizer.count
    known: dict[str, int] = {}  # each distinct text of the file is counted once
    out: list[int] = []
    for draft in drafts:
        for text in draft.texts:
            found = known.get(text)
            if found is None:
                found = known[text] = count(text)
            out.append(found)
    return out
