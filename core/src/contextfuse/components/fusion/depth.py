"""``MaxDepthResolver``: the default DetailDepthResolver, and dedup fused with resolution."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from itertools import pairwise

from contextfuse.components.fusion.grouping import distinct_contents, group_by_node
from contextfuse.components.protocols import DepthResolution
from contextfuse.models import ContextBudget, ContextFragment


def _depth_order(fragment: ContextFragment) -> tuple[int, float, datetime, str]:
    """Resolution order: depth desc, relevance desc, created_at asc, fragment_id asc."""
    return (
        -fragment.detail_depth,
        -fragment.relevance_score,
        fragment.created_at,
        fragment.fragment_id,
    )


def _sort_by_depth(group: list[ContextFragment]) -> list[ContextFragment]:
    """``group`` sorted by ``_depth_order``, reading created_at and id only on ties."""
    keyed = sorted([(-f.detail_depth, -f.relevance_score, i) for i, f in enumerate(group)])
    if any(a[:2] == b[:2] for a, b in pairwise(keyed)):
        return sorted(group, key=_depth_order)
    return [group[k[2]] for k in keyed]


def _resolve_groups(
    first: dict[str, ContextFragment],
    repeats: Mapping[str, list[ContextFragment]],
    *,
    dedup: bool,
) -> tuple[DepthResolution, int]:
    """Depth resolution of grouped fragments (``first`` is updated in place); with ``dedup``
    each group is deduplicated first. Returns the resolution and how many dedup removed."""
    alternatives: dict[str, tuple[ContextFragment, ...]] = {}
    resolved = removed = 0
    for node, group in repeats.items():
        if dedup:
            distinct = distinct_contents(group)
            removed += len(group) - len(distinct)
            if len(distinct) == 1:
                first[node] = distinct[0]
                continue
            group = distinct
        ordered = _sort_by_depth(group)
        first[node] = ordered[0]
        alternatives[node] = tuple(ordered[1:])
        resolved += len(ordered) - 1
    resolution = DepthResolution(
        fragments=tuple(first.values()), alternatives=alternatives, resolved_count=resolved
    )
    return resolution, removed


class MaxDepthResolver:
    """One rendering per node: the deepest; equal depths prefer higher relevance.

    Remaining ties go to the earliest ``created_at``, then the smallest ``fragment_id``. The
    other renderings are kept in ``alternatives[uko_node]`` (depth desc, same tie-breakers)
    for the packer's depth fallback; ``resolved_count`` is how many were set aside. Nodes keep
    the order of their first appearance. Idempotent. ``budget`` is not used.
    """

    def resolve(
        self, fragments: Sequence[ContextFragment], budget: ContextBudget
    ) -> DepthResolution:
        first, repeats = group_by_node(fragments)
        return _resolve_groups(first, repeats, dedup=False)[0]


def dedup_and_resolve(
    fragments: Sequence[ContextFragment],
) -> tuple[DepthResolution, int, list[str]]:
    """``ContentHashDedup`` then ``MaxDepthResolver`` with one grouping pass (same result).

    Returns the resolution, the number of fragments dedup removed and the uko_node of each
    resolved fragment (in order).
    """
    first, repeats = group_by_node(fragments)
    resolution, removed = _resolve_groups(first, repeats, dedup=True)
    return resolution, removed, list(first)
