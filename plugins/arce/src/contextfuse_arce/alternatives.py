"""Parallel definitions: the same symbol in sibling files is one answer written several ways.

A directory of translations, locales or per-platform variants holds the same symbol once per
file (``locales/en.ts#error``, ``locales/de.ts#error``). They share every word of a question,
so they rank together and would fill the budget with copies of one answer. The best-ranked
one keeps its score; each sibling with the same name and kind in the same directory counts
only a fraction of it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from contextfuse.plugin import BackendSet

__all__ = ["ALTERNATIVE_SHARE", "damp_alternatives"]

#: What a parallel definition keeps of its score once a sibling file's copy ranks above it.
ALTERNATIVE_SHARE = 0.3
#: How many of the best-scored nodes are compared (the rest are beyond any budget).
_COMPARED = 300


def damp_alternatives(scores: Mapping[str, float], backends: BackendSet) -> dict[str, float]:
    """``scores`` with every parallel definition below the best one of its kind damped."""
    best = sorted(scores, key=lambda u: (-scores[u], u))[:_COMPARED]
    nodes = backends.nodes.get_nodes(best)
    seen: set[tuple[str, str, str]] = set()
    damped = dict(scores)
    for uri in best:
        node = nodes.get(uri)
        if node is None or node.kind == "file" or not node.qualname:
            continue
        key = (posixpath.dirname(node.path), node.kind, node.qualname)
        if key in seen:
            damped[uri] = scores[uri] * ALTERNATIVE_SHARE
        seen.add(key)
    return damped
