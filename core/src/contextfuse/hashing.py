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
    chunks: list[bytes] = []
    for node, content in parts:
        for field in (node, content):
            data = field.encode("utf-8")
            chunks += (len(data).to_bytes(8, "big"), data)
    # One update: hashlib lets go of the interpreter lock for each large one, and under
    # concurrent requests every hand-off is a wait for the lock to come back.
    return hashlib.sha256(b"".join(chunks)).hexdigest()
