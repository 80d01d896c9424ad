"""Real token counts of a file's renderings, with nested texts counted once.

A class's full source contains its methods' and a file's contains everything: counted one by
one, a file's tokens would be counted three or four times. For tiktoken's ``cl100k_base``
the count of a container is composed exactly from its children's counts, because its
pre-tokenizer never lets a piece run into a line that has text: the start of a non-blank line
is always a piece boundary. (``o200k_base`` lets ``;\n//`` be one piece, so it is not
composable.) With the container's text cut at its children's first lines,

    count(container) = count(head) + sum(count(child) - count(last line of child)
                                         + count(last line of child + text up to the next cut))

where every term on the right is a short text or a count already known. Other tokenizers
count every text in full.
"""

from __future__ import annotations

from collections.abc import Sequence

from contextfuse.kb.render import NodeDraft
from contextfuse.tokenizer import Tokenizer

__all__ = ["COMPOSABLE", "count_renderings"]

#: Tokenizers whose counts compose over line boundaries (see the module docstring).
COMPOSABLE = frozenset({"tiktoken:cl100k_base"})


def count_renderings(
    tokenizer: Tokenizer, lines: Sequence[str], drafts: Sequence[NodeDraft]
) -> list[int]:
    """Token counts of every draft's four texts (depths 9, 4, 2, 0), in order.

    ``drafts`` are a file's nodes as ``render_file`` made them: the file first, parents
    before children.
    """
    plans: dict[int, tuple[str, list[tuple[int, str, str]]]] = {}
    if tokenizer.name in COMPOSABLE:
        children: dict[str, list[int]] = {}
        for index, draft in enumerate(drafts):
            if draft.parent_uri is not None:
                children.setdefault(draft.parent_uri, []).append(index)
        for index, draft in enumerate(drafts):
            kids = sorted(children.get(draft.uri, ()), key=lambda k: drafts[k].line_start)
            if not kids:
                continue
            # A file's text is all of its lines, including a final empty one.
            end = len(lines) if index == 0 else draft.line_end
            plan = _plan(lines, draft.line_start, end, [drafts[k] for k in kids])
            if plan is not None:
                head, segments = plan
                plans[index] = (head, [(k, *s) for k, s in zip(kids, segments, strict=True)])
    positions: dict[str, int] = {}  # each distinct text is counted once

    def add(text: str) -> int:
        return positions.setdefault(text, len(positions))

    direct = [
        [-1 if depth == 0 and index in plans else add(text) for depth, text in enumerate(d.texts)]
        for index, d in enumerate(drafts)
    ]
    pieces = {
        index: (add(head), [(kid, add(last), add(segment)) for kid, last, segment in segments])
        for index, (head, segments) in plans.items()
    }
    # One text at a time: a batch call would start threads for every file.
    counts = [tokenizer.count(text) for text in positions]
    full: dict[int, int] = {}
    for index in range(len(drafts) - 1, -1, -1):  # children before their parents
        composed = pieces.get(index)
        if composed is None:
            full[index] = counts[direct[index][0]]
        else:
            head_at, parts = composed
            full[index] = counts[head_at] + sum(
                full[kid] - counts[last] + counts[segment] for kid, last, segment in parts
            )
    out: list[int] = []
    for index, at in enumerate(direct):
        out.append(full[index])
        out.extend(counts[p] for p in at[1:])
    return out


def _plan(
    lines: Sequence[str], start: int, end: int, kids: Sequence[NodeDraft]
) -> tuple[str, list[tuple[str, str]]] | None:
    """The head and each child's (last line, last line to the next cut) of a container.

    ``kids`` are the container's children in line order.

    None when the children do not cut the text cleanly (overlap, blank first or last line):
    the container is then counted in full.
    """
    ordered = kids
    previous_end = start
    for kid in ordered:
        first, last = kid.line_start, kid.line_end
        if first <= previous_end or last < first or last > end:
            return None
        if not lines[first - 1].strip() or not lines[last - 1].strip():
            return None
        previous_end = last
    head = "\n".join(lines[start - 1 : ordered[0].line_start - 1]) + "\n"
    segments: list[tuple[str, str]] = []
    for position, kid in enumerate(ordered):
        cut = ordered[position + 1].line_start if position + 1 < len(ordered) else end + 1
        segment = "\n".join(lines[kid.line_end - 1 : cut - 1])
        if cut <= end:
            segment += "\n"
        segments.append((lines[kid.line_end - 1], segment))
    return head, segments
