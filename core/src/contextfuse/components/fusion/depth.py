"""The depth resolvers (``PolicyDepthResolver``, the default; ``MaxDepthResolver``, the
specification's) and dedup fused with resolution."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from itertools import pairwise

from contextfuse.components.fusion.grouping import distinct_contents, group_by_node
from contextfuse.components.fusion.policy import PackingPolicy
from contextfuse.components.protocols import DepthResolution
from contextfuse.models import ContextBudget, ContextFragment, DetailDepth


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


#: How a resolver orders one node's renderings: the chosen one first, and why (or "").
Chooser = Callable[[list[ContextFragment]], tuple[list[ContextFragment], str]]


def _deepest(group: list[ContextFragment]) -> tuple[list[ContextFragment], str]:
    return _sort_by_depth(group), ""


def _resolve_groups(
    first: dict[str, ContextFragment],
    repeats: Mapping[str, list[ContextFragment]],
    *,
    dedup: bool,
    choose: Chooser = _deepest,
    single: Callable[[ContextFragment], str] | None = None,
) -> tuple[DepthResolution, int]:
    """Depth resolution of grouped fragments (``first`` is updated in place); with ``dedup``
    each group is deduplicated first. Returns the resolution and how many dedup removed.

    ``choose`` orders a node's renderings (chosen first) and says why; ``single`` says why a
    node with one rendering has its depth (None: nothing to say)."""
    alternatives: dict[str, tuple[ContextFragment, ...]] = {}
    reasons: dict[str, str] = {}
    resolved = removed = 0
    for node, group in repeats.items():
        if dedup:
            distinct = distinct_contents(group)
            removed += len(group) - len(distinct)
            if len(distinct) == 1:
                first[node] = distinct[0]
                continue
            group = distinct
        ordered, reason = choose(group)
        first[node] = ordered[0]
        alternatives[node] = tuple(ordered[1:])
        if reason:
            reasons[node] = reason
        resolved += len(ordered) - 1
    if single is not None:
        for node, fragment in first.items():
            if node not in alternatives:
                reason = single(fragment)
                if reason:
                    reasons[node] = reason
    resolution = DepthResolution(
        fragments=tuple(first.values()),
        alternatives=alternatives,
        resolved_count=resolved,
        reasons=reasons,
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


class PolicyDepthResolver:
    """The default resolver: each knowledge-base candidate at the depth its budget affords.

    For a fragment the pipeline rendered from a ranking (``metadata["role"]`` set), per node
    kind and ``PackingPolicy`` (``available`` = the budget's available tokens):

    * a file: whole (depth 9) when it takes at most ``policy.whole_file(available)``
      tokens, else its outline (2), for the file map;
    * a container (a class, an interface, an impl block...) some of whose members are
      candidates themselves: its signatures (4), so each member is shown on its own
      (``policy.split_containers``);
    * a header (a file's lines before its first symbol): as it is;
    * anything else (functions, classes, sections, commits, plans...): full source when it
      takes at most ``policy.max_piece(available)`` tokens, else the deepest shallower
      rendering that does (signatures, outline), else the shallowest it has.

    Any other fragment (the v1 API, a fragment strategy's output) is resolved as
    ``MaxDepthResolver`` does: the deepest. The node's other renderings are kept, deepest
    first, in ``alternatives`` for the packer; each candidate's reason is in ``reasons``.
    """

    def __init__(self, policy: PackingPolicy | None = None) -> None:
        self.policy = policy if policy is not None else PackingPolicy()

    def resolve(
        self, fragments: Sequence[ContextFragment], budget: ContextBudget
    ) -> DepthResolution:
        first, repeats = group_by_node(fragments)
        choose, single = self.choosers(budget.available_tokens, first)
        return _resolve_groups(first, repeats, dedup=False, choose=choose, single=single)[0]

    def choosers(
        self, available: int, nodes: Mapping[str, ContextFragment] | None = None
    ) -> tuple[Chooser, Callable[[ContextFragment], str]]:
        """The group chooser and the single-rendering reason for a budget of ``available``;
        ``nodes``: a fragment of every node being resolved (a container whose members are
        among them, as relevant as it is or nearly, is split)."""
        piece = self.policy.max_piece(available)
        whole = self.policy.whole_file(available)
        members = _members(nodes or {}) if self.policy.split_containers else {}

        def choose(group: list[ContextFragment]) -> tuple[list[ContextFragment], str]:
            ordered = _sort_by_depth(group)
            head = ordered[0]
            if "role" not in head.metadata:
                return ordered, ""
            kind = head.metadata.get("kind", "")
            limit = whole if kind == "file" else piece
            count = members.get(head.uko_node, 0) if kind in _CONTAINERS else 0
            if count:
                for position, fragment in enumerate(ordered):
                    if fragment.detail_depth == _SIGNATURES and fragment.token_count <= limit:
                        reason = (
                            f"signatures: {count} of its members are candidates themselves, "
                            "shown on their own"
                        )
                        rest = [*ordered[:position], *ordered[position + 1 :]]
                        return [fragment, *rest], reason
            for position, fragment in enumerate(ordered):
                if fragment.token_count <= limit and (
                    kind != "file" or fragment.detail_depth in (_FULL, _OUTLINE)
                ):
                    reason = _reason(kind, fragment, head, limit)
                    return [fragment, *ordered[:position], *ordered[position + 1 :]], reason
            shallowest = ordered[-1]
            reason = (
                f"{DetailDepth.describe(shallowest.detail_depth)}: "
                f"even its shallowest rendering ({shallowest.token_count} tokens) is more "
                f"than one piece may take ({limit})"
            )
            return [shallowest, *ordered[:-1]], reason

        def single(fragment: ContextFragment) -> str:
            if "role" not in fragment.metadata:
                return ""
            name = DetailDepth.describe(fragment.detail_depth)
            return f"{name}: the only rendering it has"

        return choose, single


_FULL = DetailDepth.FULL_SOURCE
_SIGNATURES = DetailDepth.SIGNATURES
_OUTLINE = DetailDepth.OUTLINE
#: Kinds of node whose members are nodes too (a class's methods, an impl block's functions).
_CONTAINERS = frozenset(
    {"class", "interface", "struct", "impl", "trait", "enum", "record", "union", "module"}
)


#: A member counts when its relevance is at least this share of its container's.
_MEMBER_SHARE = 0.5


def _members(nodes: Mapping[str, ContextFragment]) -> dict[str, int]:
    """``{container URI: how many nodes are its members}`` (``f#A`` holds ``f#A.b``), counting
    the members about as relevant as the container (``_MEMBER_SHARE`` of it at least)."""
    counts: dict[str, int] = {}
    for node, fragment in nodes.items():
        head, sep, symbol = node.partition("#")
        if not sep or "role" not in fragment.metadata:
            continue
        parts = symbol.split(".")
        for end in range(1, len(parts)):
            container = f"{head}#{'.'.join(parts[:end])}"
            outer = nodes.get(container)
            if outer is not None and (
                fragment.relevance_score >= _MEMBER_SHARE * outer.relevance_score
            ):
                counts[container] = counts.get(container, 0) + 1
    return counts


def _reason(kind: str, chosen: ContextFragment, deepest: ContextFragment, limit: int) -> str:
    name = DetailDepth.describe(chosen.detail_depth)
    if chosen is deepest:
        if kind == "file" and chosen.detail_depth == _FULL:
            return f"full source: the whole file ({chosen.token_count} tokens) is small"
        return f"{name}: the deepest rendering, {chosen.token_count} tokens"
    what = "the whole file" if kind == "file" else "its full source"
    may = "a whole file may take" if kind == "file" else "one piece may take"
    return f"{name}: {what} ({deepest.token_count} tokens) is more than {may} ({limit})"


def dedup_and_resolve(
    fragments: Sequence[ContextFragment],
    resolver: MaxDepthResolver | PolicyDepthResolver | None = None,
    available: int = 0,
) -> tuple[DepthResolution, int, list[str]]:
    """``ContentHashDedup`` then the resolver (default ``MaxDepthResolver``) with one grouping
    pass (same result as calling both).

    Returns the resolution, the number of fragments dedup removed and the uko_node of each
    resolved fragment (in order).
    """
    first, repeats = group_by_node(fragments)
    if isinstance(resolver, PolicyDepthResolver):
        choose, single = resolver.choosers(available, first)
        resolution, removed = _resolve_groups(
            first, repeats, dedup=True, choose=choose, single=single
        )
    else:
        resolution, removed = _resolve_groups(first, repeats, dedup=True)
    return resolution, removed, list(first)
