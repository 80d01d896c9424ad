"""Grouping of fragments by node and by content, shared by dedup and depth resolution."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from contextfuse.models import ContextFragment


def _keep_first(candidate: ContextFragment, kept: ContextFragment) -> bool:
    """True when ``candidate`` beats ``kept``: relevance desc, created_at asc, id asc."""
    if candidate.relevance_score != kept.relevance_score:
        return candidate.relevance_score > kept.relevance_score
    if candidate.created_at != kept.created_at:
        return candidate.created_at < kept.created_at
    return candidate.fragment_id < kept.fragment_id


def group_by_node(
    fragments: Sequence[ContextFragment],
) -> tuple[dict[str, ContextFragment], dict[str, list[ContextFragment]]]:
    """``(first, repeats)``: each node's first fragment (in order of first appearance) and,
    only for nodes seen more than once, all of the node's fragments in input order.

    The hot loop reads one attribute and does one dict operation per fragment; no container
    is allocated for the (common) nodes seen once.
    """
    first: dict[str, ContextFragment] = {}
    later: list[ContextFragment] = []  # second and later occurrences of a node
    later_nodes: list[str] = []  # (parallel lists: no per-item allocation)
    setdefault, add_later, add_node = first.setdefault, later.append, later_nodes.append
    for fragment in fragments:
        node = fragment.uko_node
        if setdefault(node, fragment) is not fragment:
            add_later(fragment)
            add_node(node)
    if len(first) + len(later) != len(fragments):
        # The same object occurs more than once: group exactly, occurrence by occurrence.
        first.clear()
        later.clear()
        later_nodes.clear()
        for fragment in fragments:
            node = fragment.uko_node
            if node in first:
                later.append(fragment)
                later_nodes.append(node)
            else:
                first[node] = fragment
    repeats: dict[str, list[ContextFragment]] = {}
    get = repeats.get
    for node, fragment in zip(later_nodes, later, strict=True):
        group = get(node)
        if group is None:
            repeats[node] = [first[node], fragment]
        else:
            group.append(fragment)
    return first, repeats


def distinct_contents(group: list[ContextFragment]) -> list[ContextFragment]:
    """One fragment per distinct content of one node's fragments (ContentHashDedup rules).

    Contents are compared by SHA-256. A content whose length no other fragment of the node
    shares cannot be a duplicate and is not hashed: the grouping is exactly that of the
    SHA-256, which is computed only where it can matter, once per fragment.
    """
    contents = [f.content for f in group]
    sizes = [len(c) for c in contents]
    if len(set(sizes)) == len(sizes):
        return group
    shared = {size for size in sizes if sizes.count(size) > 1}
    sha256 = hashlib.sha256
    kept: dict[int | bytes, ContextFragment] = {}
    for fragment, content, size in zip(group, contents, sizes, strict=True):
        key: int | bytes = sha256(content.encode("utf-8")).digest() if size in shared else size
        current = kept.get(key)
        if current is None or _keep_first(fragment, current):
            kept[key] = fragment
    return list(kept.values())
