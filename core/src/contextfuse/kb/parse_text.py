"""Documents: Markdown and reStructuredText split by heading; other text files whole."""

from __future__ import annotations

import re
from collections.abc import Callable

from contextfuse.kb.parsed import ParsedFile, Segment, Symbol
from contextfuse.kb.parser_versions import MARKDOWN_ID, RST_ID, TEXT_ID

__all__ = [
    "MARKDOWN_ID",
    "RST_ID",
    "TEXT_ID",
    "looks_like_rst",
    "parse_markdown",
    "parse_plain",
    "parse_rst",
]


_HEAD_LINES = 30  # depth 4 of a plain text file: its first lines
_PARAGRAPH_LINES = 5  # depth 4 of a section: its heading and the start of its first paragraph
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*(?:#+[ \t]*)?$|^ {0,3}(#{1,6})[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`*+#:.!$%&,;<>?@_|/\\])\1{2,}[ \t]*$")
_SLUG_DROP = re.compile(r"[^\w\- ]+")


def parse_plain(text: str, lines: list[str], language: str = "text") -> ParsedFile:
    """A text file as one node: depth 4 is its first lines."""
    parsed = ParsedFile(language=language, parser=TEXT_ID)
    head = lines[:_HEAD_LINES]
    if len(lines) > _HEAD_LINES and any(line.strip() for line in lines[_HEAD_LINES:]):
        head.append("...")
    parsed.head.append((1, "\n".join(head)))
    parsed.summary = _first_text_line(lines)
    return parsed


def parse_markdown(text: str, lines: list[str]) -> ParsedFile:
    """Markdown split by ATX (``## Title``) and setext (underlined) headings."""
    headings: list[tuple[int, int, str]] = []  # (line, level, title)
    fence = ""
    previous_text = False
    for number, line in enumerate(lines, 1):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            previous_text = False
            continue
        atx = _ATX.match(line)
        if atx:
            level = len(atx.group(1) or atx.group(3))
            headings.append((number, level, (atx.group(2) or "").strip()))
            previous_text = False
            continue
        setext = _SETEXT.match(line)
        if setext and previous_text and number > 1:
            level = 1 if setext.group(1)[0] == "=" else 2
            headings.append((number - 1, level, lines[number - 2].strip()))
            previous_text = False
            continue
        previous_text = bool(line.strip())
    return _sections(
        ParsedFile(language="markdown", parser=MARKDOWN_ID),
        lines,
        headings,
        title_lines=lambda start: 2 if _setext_at(lines, start) else 1,
        label=lambda level, title: f"{'#' * level} {title}",
    )


def looks_like_rst(lines: list[str]) -> bool:
    """True when a ``.txt`` file has reStructuredText section titles (Django's docs do)."""
    found = 0
    for index in range(1, min(len(lines), 400)):
        if _rst_title(lines, index):
            found += 1
            if found >= 2:
                return True
    return False


def _rst_title(lines: list[str], index: int) -> bool:
    """True when ``lines[index]`` underlines the title on the line before it."""
    under = lines[index]
    title = lines[index - 1].rstrip()
    return (
        bool(title.strip())
        and not title[0].isspace()
        and _RST_ADORNMENT.match(under) is not None
        and len(under.rstrip()) >= len(title)
        and _RST_ADORNMENT.match(title) is None
    )


def parse_rst(text: str, lines: list[str]) -> ParsedFile:
    """reStructuredText split by section titles; levels follow the order styles appear in."""
    styles: dict[tuple[str, bool], int] = {}
    headings: list[tuple[int, int, str]] = []
    overlined: set[int] = set()
    for index in range(1, len(lines)):
        if not _rst_title(lines, index):
            continue
        char = lines[index][0]
        over = index >= 2 and lines[index - 2].rstrip() == lines[index].rstrip()
        level = styles.setdefault((char, over), len(styles) + 1)
        start = index - 1 if over else index  # 1-based line of the overline or title
        if over:
            overlined.add(start)
        headings.append((start, level, lines[index - 1].strip()))
    return _sections(
        ParsedFile(language="rst", parser=RST_ID),
        lines,
        headings,
        title_lines=lambda start: 3 if start in overlined else 2,
        label=lambda level, title: f"{'  ' * (level - 1)}{title}",
    )


def _setext_at(lines: list[str], start: int) -> bool:
    return start < len(lines) and _SETEXT.match(lines[start]) is not None


def _sections(
    parsed: ParsedFile,
    lines: list[str],
    headings: list[tuple[int, int, str]],
    title_lines: Callable[[int], int],
    label: Callable[[int, str], str],
) -> ParsedFile:
    """Symbols of kind ``section`` nested by level; each spans to the next heading <= its level."""
    last = len(lines)
    while last > 1 and not lines[last - 1].strip():
        last -= 1
    slugs: dict[str, int] = {}
    stack: list[tuple[int, str]] = []  # (level, qualname) of the enclosing sections
    for position, (start, level, title) in enumerate(headings):
        end = last
        for later_start, later_level, _ in headings[position + 1 :]:
            if later_level <= level:
                end = later_start - 1
                break
        while end > start and not lines[end - 1].strip():
            end -= 1
        while stack and stack[-1][0] >= level:
            stack.pop()
        slug = _slug(title) or "section"
        count = slugs.get(slug, 0)
        slugs[slug] = count + 1
        qualname = slug if count == 0 else f"{slug}-{count}"
        heading_end = start + title_lines(start) - 1
        parsed.symbols.append(
            Symbol(
                kind="section",
                name=title or slug,
                qualname=qualname,
                parent=stack[-1][1] if stack else "",
                line_start=start,
                line_end=max(end, heading_end),
                label=label(level, title),
                summary=title[:200],
                segments=[_heading_block(lines, start, heading_end, end)],
            )
        )
        stack.append((level, qualname))
    first = headings[0][0] if headings else last + 1
    preface = lines[: first - 1]
    if any(line.strip() for line in preface):
        parsed.head.append((1, "\n".join(_paragraph(preface))))
    parsed.summary = headings[0][2][:200] if headings else _first_text_line(lines)
    return parsed


def _heading_block(lines: list[str], start: int, heading_end: int, end: int) -> Segment:
    """The heading and the first lines of the paragraph after it."""
    body = _paragraph(lines[heading_end:end])
    return (start, "\n".join([*lines[start - 1 : heading_end], *body]))


def _paragraph(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if not line.strip():
            if out:
                break
            continue
        if _ATX.match(line) or _RST_ADORNMENT.match(line):
            break
        out.append(line)
        if len(out) == _PARAGRAPH_LINES:
            out.append("...")
            break
    return out


def _slug(title: str) -> str:
    """GitHub-style anchor: lower case, punctuation dropped, spaces to hyphens."""
    return _SLUG_DROP.sub("", title.lower()).strip().replace(" ", "-")


def _first_text_line(lines: list[str]) -> str:
    for line in lines:
        stripped = line.strip().lstrip("#/*-;! ").strip()
        if stripped:
            return stripped[:200]
    return ""
