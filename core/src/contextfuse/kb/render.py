"""Nodes of one parsed file with their renderings at depths 9, 4, 2 and 0.

* 9: the exact source lines of the node (the whole file for a file node);
* 4: signatures and docstrings, bodies elided (the parsers' segments, merged in line order);
* 2: an outline, one ``L<line> <label>`` line per symbol, indented by nesting;
* 0: one listing line, ``path — summary``.

A lower depth is never longer than the one above it: when a summary would be as long as
what it summarises, the fuller text is used instead.
"""

from __future__ import annotations

import hashlib

import attrs

from contextfuse.kb.parsed import ParsedFile, Segment, Symbol

__all__ = ["DEPTHS", "NodeDraft", "own_text", "render_file"]

DEPTHS = (9, 4, 2, 0)
_OUTLINE_TEXT_LINES = 5  # outline of a file without symbols: its first non-empty lines
_LISTED_SYMBOLS = 6


@attrs.define(slots=True)
class NodeDraft:
    """A node ready to be stored: metadata, the four rendering texts, and its FTS text."""

    uri: str
    kind: str
    name: str
    qualname: str
    parent_uri: str | None
    line_start: int
    line_end: int
    summary: str
    content_hash: str
    texts: tuple[str, str, str, str]  # depths 9, 4, 2, 0
    own_text: str  # the node's lines without its children's: what search and links read
    #: Depths whose text is the node's source lines, once :meth:`drop_source_texts` ran.
    source_depths: frozenset[int] = frozenset()

    def drop_source_texts(self) -> None:
        """Forget the texts that are the node's own source lines (after counting tokens).

        The index stores those as NULL and slices them from the file's content, so a worker
        process need not send them back: they are most of what it would send.
        """
        full, signatures, outline, listing = self.texts
        source = {9} | {d for d, t in ((4, signatures), (2, outline), (0, listing)) if t == full}
        self.source_depths = frozenset(source)
        self.texts = (
            "",
            "" if 4 in source else signatures,
            "" if 2 in source else outline,
            "" if 0 in source else listing,
        )


def render_file(project: str, path: str, lines: list[str], parsed: ParsedFile) -> list[NodeDraft]:
    """The file node first, then one node per symbol, in source order."""
    file_uri = f"project://{project}/{path}"
    symbols = parsed.symbols
    children: dict[str, list[Symbol]] = {}
    for symbol in symbols:
        children.setdefault(symbol.parent, []).append(symbol)
    total = len(lines)
    while total > 1 and not lines[total - 1]:
        total -= 1  # the empty string after a final newline is not a line
    full = "\n".join(lines)

    segments_cache: dict[str, list[Segment]] = {}

    def segments(qualname: str, own: list[Segment]) -> list[Segment]:
        cached = segments_cache.get(qualname)
        if cached is None:
            cached = list(own)
            for child in children.get(qualname, ()):
                merged = segments(child.qualname, child.segments)
                if child.kind == "block":  # its first line may be one the container keeps
                    merged = _not_shown(merged, cached)
                cached.extend(merged)
            segments_cache[qualname] = cached
        return cached

    def outline(qualname: str, level: int) -> list[str]:
        rows: list[str] = []
        for child in children.get(qualname, ()):
            rows.append(f"L{child.line_start} {'  ' * level}{child.label}")
            rows.extend(outline(child.qualname, level + 1))
        return rows

    summary = parsed.summary or _symbol_listing(children.get("", [])) or _first_line(lines)
    file_outline = outline("", 0) or _text_outline(lines)
    drafts = [
        _draft(
            uri=file_uri,
            kind="file",
            name=path.rsplit("/", 1)[-1],
            qualname="",
            parent_uri=None,
            first=1,
            last=total,
            summary=summary,
            full=full,
            signatures=_join(segments("", parsed.head)) or full,
            outline="\n".join(file_outline),
            listing=f"{path} — {summary}" if summary else path,
            own=own_text(
                lines, 1, total, [(s.line_start, s.line_end) for s in children.get("", ())]
            ),
        )
    ]
    for symbol in symbols:
        source = "\n".join(lines[symbol.line_start - 1 : symbol.line_end])
        own_summary = symbol.summary or symbol.label
        drafts.append(
            _draft(
                uri=f"{file_uri}#{symbol.qualname}",
                kind=symbol.kind,
                name=symbol.name,
                qualname=symbol.qualname,
                parent_uri=f"{file_uri}#{symbol.parent}" if symbol.parent else file_uri,
                first=symbol.line_start,
                last=symbol.line_end,
                summary=symbol.summary,
                full=source,
                signatures=_join(segments(symbol.qualname, symbol.segments)) or source,
                outline="\n".join(
                    [f"L{symbol.line_start} {symbol.label}", *outline(symbol.qualname, 1)]
                ),
                listing=f"{path}#{symbol.qualname} — {own_summary}",
                own=own_text(
                    lines,
                    symbol.line_start,
                    symbol.line_end,
                    [(c.line_start, c.line_end) for c in children.get(symbol.qualname, ())],
                ),
            )
        )
    return drafts


def _not_shown(candidates: list[Segment], shown: list[Segment]) -> list[Segment]:
    """The ``candidates`` starting on a line that no segment of ``shown`` covers."""
    covered = {line for start, text in shown for line in range(start, start + text.count("\n") + 1)}
    return [(start, text) for start, text in candidates if start not in covered]


def own_text(lines: list[str], first: int, last: int, holes: list[tuple[int, int]]) -> str:
    """Lines ``first..last`` without the line ranges of the node's children."""
    if not holes:
        return "\n".join(lines[first - 1 : last])
    parts: list[str] = []
    cursor = first
    for start, end in sorted(holes):
        if start > cursor:
            parts.append("\n".join(lines[cursor - 1 : start - 1]))
        cursor = max(cursor, end + 1)
    if cursor <= last:
        parts.append("\n".join(lines[cursor - 1 : last]))
    return "\n".join(parts)


def _draft(
    *,
    uri: str,
    kind: str,
    name: str,
    qualname: str,
    parent_uri: str | None,
    first: int,
    last: int,
    summary: str,
    full: str,
    signatures: str,
    outline: str,
    listing: str,
    own: str,
) -> NodeDraft:
    if len(signatures) >= len(full):
        signatures = full
    if len(outline) >= len(signatures):
        outline = signatures
    return NodeDraft(
        uri=uri,
        kind=kind,
        name=name,
        qualname=qualname,
        parent_uri=parent_uri,
        line_start=first,
        line_end=last,
        summary=summary,
        content_hash=hashlib.sha256(full.encode("utf-8")).hexdigest(),
        texts=(full, signatures, outline, listing),
        own_text=own,
    )


def _join(segments: list[Segment]) -> str:
    """Blocks in line order; a blank line before an unindented block after a gap."""
    out: list[str] = []
    end = 0
    # sorted() is stable: blocks starting on the same line keep their parse order.
    for start, text in sorted(segments, key=lambda s: s[0]):
        if not text:
            continue
        if out and start > end + 1 and not text[0].isspace():
            out.append("")
        out.append(text)
        end = max(end, start + text.count("\n"))
    return "\n".join(out)


def _symbol_listing(top: list[Symbol]) -> str:
    if not top:
        return ""
    names = [s.name for s in top[:_LISTED_SYMBOLS]]
    more = ", …" if len(top) > _LISTED_SYMBOLS else ""
    return f"defines {', '.join(names)}{more}"


def _first_line(lines: list[str]) -> str:
    for line in lines:
        stripped = line.strip()
        if stripped:
            return stripped[:200]
    return ""


def _text_outline(lines: list[str]) -> list[str]:
    rows: list[str] = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            rows.append(f"L{number} {line.strip()[:120]}")
            if len(rows) == _OUTLINE_TEXT_LINES:
                break
    return rows
