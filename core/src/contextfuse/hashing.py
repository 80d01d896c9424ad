"""The reproducible context hash of a payload."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def context_hash(parts: Iterable[tuple[str, str]]) -> str:
    """SHA-256 over ``(uko_node, content)`` pairs in order.

    Each field is length-prefixed so that no two different sequences hash alike, and nothing
    that varies between runs (ids, timestamps) takes part: the same content gives the same
    hash on any machine.
    """
    digest = hashlib.sha256()
    for node, content in parts:
        for field in (node, content):
            data = field.encode("utf-8")
            digest.update(len(data).to_bytes(8, "big"))
            digest.update(data)
    return digest.hexdigest()
