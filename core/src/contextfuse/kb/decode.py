"""A file's bytes as text: by its byte-order mark, as UTF-16 when its bytes say so, by the
encoding it declares, else as UTF-8; or None for a binary file.

Declarations honoured, each where its language reads it: a coding cookie in the first two
lines (PEP 263 for Python; the same ``coding:``/``coding=`` form is Ruby's magic comment and
Emacs's and Vim's file variables, so any comment line carries it); an XML declaration
(``<?xml ... encoding="..."?>``) or a CSS ``@charset`` at the very start; an HTML ``<meta
charset>`` (or ``http-equiv`` content type) in the first 1024 bytes of an HTML file, as a
browser's prescan reads it. A declaration that names no known text encoding, one that is not
ASCII-compatible (it could not have been written in the file's own bytes) or one the bytes
do not fit falls back to UTF-8, undecodable bytes becoming U+FFFD.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["declared_encoding", "decode_text"]

_SNIFF = 8192  # bytes looked at to tell text from binary
#: Bytes of text in an 8-bit encoding: printable, whitespace, backspace, bell, escape.
_TEXT_BYTES = bytes({7, 8, 9, 10, 12, 13, 27} | set(range(0x20, 0x100)) - {0x7F})
#: Control characters of decoded text that a text file holds (as ``_TEXT_BYTES``).
_TEXT_CONTROLS = frozenset("\a\b\t\n\f\r\x1b\v")

# Longest first: the UTF-32 little-endian mark begins with UTF-16's.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_COOKIE = re.compile(
    rb"^[ \t\f]*(?:#|//|/\*|--|;|%|<!--|\.\.|\(\*|\{-).*?coding[:=][ \t]*([-\w.]+)"
)
_XML = re.compile(rb"""^<\?xml[^>]*?\sencoding\s*=\s*["']([-\w.:]+)["']""")
_CSS = re.compile(rb'^@charset "([-\w.:]+)";')
_HTML_META = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?([-\w.:]+)""", re.IGNORECASE)
_HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")
_HTML_STARTS = (b"<!doctype html", b"<html")
_HTML_PRESCAN = 1024
_COOKIE_LINES = 4096  # bytes in which the first two lines are looked for


def decode_text(data: bytes, path: str) -> str | None:
    """The text of the file at ``path`` (repository-relative) holding ``data``; None when
    it is binary."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            text = data[len(bom) :].decode(encoding, "replace")
            return text if _looks_like_text(text[:_SNIFF]) else None
    head = data[:_SNIFF]
    if b"\0" in head:  # binary, or UTF-16 (whose Latin letters have a zero byte)
        wide = _utf16_without_bom(head)
        if wide is None:
            return None
        try:
            text = data.decode(wide)
        except UnicodeDecodeError:
            return None
        return text if _reads_as_prose(text[:_SNIFF]) else None
    if len(head.translate(None, _TEXT_BYTES)) * 10 > len(head):
        return None
    declared = declared_encoding(data, path)
    if declared is not None:
        try:
            return data.decode(declared)
        except UnicodeDecodeError:
            pass  # the declaration is wrong: the bytes are read as UTF-8
    return data.decode("utf-8", "replace")


def declared_encoding(data: bytes, path: str) -> str | None:
    """The usable encoding that the start of ``data`` declares, or None (see the module)."""
    found = _XML.match(data) or _CSS.match(data)
    start = data[:_COOKIE_LINES]
    if found is None and b"coding" in start:
        first_two = start.split(b"\n", 2)[:2]
        found = next(filter(None, map(_COOKIE.match, first_two)), None)
    if found is None and _is_html(data, path):
        found = _HTML_META.search(data[:_HTML_PRESCAN])
    if found is None:
        return None
    return _usable(found.group(1).decode("ascii"))


def _is_html(data: bytes, path: str) -> bool:
    if path.lower().endswith(_HTML_SUFFIXES):
        return True
    start = data[:_HTML_PRESCAN].lstrip()
    return start[:1] == b"<" and start.lower().startswith(_HTML_STARTS)


def _usable(name: str) -> str | None:
    """The codec's name when ``name`` is a text encoding that reads ASCII as ASCII."""
    try:
        codec = codecs.lookup(name)
        # Raises LookupError for a codec that is not a text encoding (hex, base64...).
        if "=coding:".encode(codec.name) != b"=coding:":
            return None
    except (LookupError, UnicodeError, ValueError):
        return None
    return codec.name


def _utf16_without_bom(head: bytes) -> str | None:
    """``utf-16-le``/``-be`` when the zero bytes fall on one side of the byte pairs (text in
    a Latin script, the common case), else None."""
    pairs = len(head) // 2
    if pairs < 2:
        return None
    even, odd = head[0 : pairs * 2 : 2].count(0), head[1 : pairs * 2 : 2].count(0)
    if odd >= 0.3 * pairs and even <= 0.05 * pairs:
        return "utf-16-le"
    if even >= 0.3 * pairs and odd <= 0.05 * pairs:
        return "utf-16-be"
    return None


def _reads_as_prose(text: str) -> bool:
    """Stricter than :func:`_looks_like_text`, for text found without a mark: nearly all of
    it printable or line breaks (an array of 16-bit numbers is not)."""
    shown = sum(1 for c in text if c.isprintable() or c in "\t\n\r\f")
    return shown >= 0.95 * len(text)


def _looks_like_text(text: str) -> bool:
    """True unless more than a tenth of ``text`` is control characters (as for bytes)."""
    controls = sum(1 for c in text if (c < " " and c not in _TEXT_CONTROLS) or c == "\x7f")
    return controls * 10 <= len(text)
