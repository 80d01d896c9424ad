"""The compressed form in which a cold file's text is kept (see ``contextfuse.kb.tiers``).

A file demoted to the cold tier keeps its outline, signatures, summaries and search rows as
they are; only its full text, from which depth-9 renderings are sliced, is compressed.
Everything that reads a file's stored text reads it through :func:`stored_text`, which
accepts either form.
"""

from __future__ import annotations

import zlib

__all__ = ["compress_text", "stored_text", "stored_utf8"]

#: zlib's level 6: within a few percent of the best ratio at a fraction of level 9's time.
_LEVEL = 6


def compress_text(text: str) -> bytes:
    """``text`` in its cold form (zlib-compressed UTF-8)."""
    return zlib.compress(text.encode("utf-8"), _LEVEL)


def stored_text(value: str | bytes | memoryview) -> str:
    """A file's text from its stored form: as it is, or decompressed from its cold form."""
    if isinstance(value, str):
        return value
    return zlib.decompress(bytes(value)).decode("utf-8")


def stored_utf8(value: bytes | memoryview, cold: bool) -> bytes:
    """A file's text as UTF-8 bytes, from its stored bytes (compressed when ``cold``).

    For scans that read bytes (a regular-expression search), without decoding the text.
    """
    return zlib.decompress(bytes(value)) if cold else bytes(value)
