"""Phase 2 defaults: fragment fusion (spec/acms-fusion.md).

``FusionEngine.fuse`` runs four injectable components and a safety net::

    ContentHashDedup -> MaxDepthResolver -> WeightedCompositeScorer
        -> GreedyKnapsackPacker -> BudgetOverageGuard

Every step is deterministic: the same fragments (and ranks) give the same output in the
same order. The hot path is built for 100k fragments: fragments are never copied; each is
read once per phase, in one pass, and gets one record (its ScoredFragment); the content
SHA-256 is computed only for fragments that could be duplicates (same node, same content
length); with the default components the engine groups once for dedup and resolution and
packs on the scorer's precomputed keys (``bench/bench_fusion.py`` measures it).
"""

from __future__ import annotations

import gc
import hashlib
import logging
import math
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from itertools import chain, islice, pairwise, repeat
from operator import itemgetter, mul, sub
from typing import Any, Final

import attrs
from pydantic import BaseModel, ConfigDict, Field, field_validator

from contextfuse.components.protocols import (
    BudgetPacker,
    DepthResolution,
    DetailDepthResolver,
    FragmentDeduplicator,
    FragmentScorer,
    PackResult,
    ScoredFragment,
)
from contextfuse.models import (
    MAX_DEPTH,
    ContextBudget,
    ContextFragment,
    DetailDepth,
    PlanContext,
)

__all__ = [
    "BudgetOverageGuard",
    "ContentHashDedup",
    "FusionConfig",
    "FusionEngine",
    "FusionResult",
    "GreedyKnapsackPacker",
    "MaxDepthResolver",
    "ScorerWeights",
    "WeightedCompositeScorer",
    "check_depth_steps",
    "dedup_and_resolve",
    "pack_order_key",
]

logger = logging.getLogger("contextfuse.fusion")

#: Tier values of the ``tier`` score component.
_TIER_VALUE: Final[Mapping[str, float]] = {"hot": 1.0, "warm": 0.5, "cold": 0.0}
#: Share of the smallest gap between two rank-fusion values that the bounded components
#: may span together (< 1, so they can never flip two fused ranks).
_TIE_BREAK_SHARE: Final = 0.5
#: Rank-fusion values are quantised to multiples of 2**-50 so that sums that differ only
#: by floating-point rounding compare equal (and are then ordered by the other components).
_QUANTUM: Final = float(2**50)
#: Quality assumed for a strategy missing from ``quality`` (StrategyCapabilities default).
_DEFAULT_QUALITY: Final = 0.5


def check_depth_steps(steps: Sequence[int]) -> tuple[int, ...]:
    """Validate a depth fallback sequence: non-empty, strictly descending, within 0..9."""
    result = tuple(int(s) for s in steps)
    if not result:
        raise ValueError("depth_fallback_steps must not be empty")
    if any(s < 0 or s > MAX_DEPTH for s in result):
        raise ValueError(f"depth_fallback_steps must lie within 0..{MAX_DEPTH}; got {result}")
    if any(a <= b for a, b in pairwise(result)):
        raise ValueError(f"depth_fallback_steps must be strictly descending; got {result}")
    return result


_PackKey = tuple[float, int, int, str, int]  # pack_order_key + position
_POSITION = itemgetter(4)


def pack_order_key(scored: ScoredFragment) -> tuple[float, int, int, str]:
    """The packing order: score desc, depth desc, tokens asc, then uko_node asc."""
    f = scored.fragment
    return (-scored.score, -f.detail_depth, f.token_count, f.uko_node)


def _keep_first(candidate: ContextFragment, kept: ContextFragment) -> bool:
    """True when ``candidate`` beats ``kept``: relevance desc, created_at asc, id asc."""
    if candidate.relevance_score != kept.relevance_score:
        return candidate.relevance_score > kept.relevance_score
    if candidate.created_at != kept.created_at:
        return candidate.created_at < kept.created_at
    return candidate.fragment_id < kept.fragment_id


def _group_by_node(
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


def _distinct_contents(group: list[ContextFragment]) -> list[ContextFragment]:
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


# ---- dedup --------------------------------------------------------------------------------


class ContentHashDedup:
    """Removes fragments repeating a node's content (spec: group by (uko_node, SHA-256)).

    Within a group the fragment with the highest ``relevance_score`` is kept; ties go to the
    earliest ``created_at``, then the smallest ``fragment_id``. Output order: nodes in order of
    first appearance, and within a node each distinct content in order of first appearance.
    Idempotent: deduplicating the output again returns it unchanged.
    """

    def deduplicate(self, fragments: Sequence[ContextFragment]) -> list[ContextFragment]:
        first, repeats = _group_by_node(fragments)
        if not repeats:
            return list(first.values())
        out: list[ContextFragment] = []
        for node, fragment in first.items():
            group = repeats.get(node)
            if group is None:
                out.append(fragment)
            else:
                out.extend(_distinct_contents(group))
        return out


# ---- depth resolution -----------------------------------------------------------------------


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
            distinct = _distinct_contents(group)
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
        first, repeats = _group_by_node(fragments)
        return _resolve_groups(first, repeats, dedup=False)[0]


def dedup_and_resolve(
    fragments: Sequence[ContextFragment],
) -> tuple[DepthResolution, int, list[str]]:
    """``ContentHashDedup`` then ``MaxDepthResolver`` with one grouping pass (same result).

    Returns the resolution, the number of fragments dedup removed and the uko_node of each
    resolved fragment (in order).
    """
    first, repeats = _group_by_node(fragments)
    resolution, removed = _resolve_groups(first, repeats, dedup=True)
    return resolution, removed, list(first)


# ---- scoring -------------------------------------------------------------------------------


class ScorerWeights(BaseModel):
    """Weights of the composite score (see ``WeightedCompositeScorer`` for the formula).

    Every component value lies in [0, 1]; a weight of 0 switches its component off.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    relevance: float = Field(
        default=1.0,
        ge=0.0,
        description=(
            "Weight of relevance. With strategy ranks it scales the rank fusion (quality-"
            "weighted reciprocal rank fusion of every strategy's own order), which is the "
            "primary key: the other components are bounded so they never reorder it. Without "
            "ranks it weighs the fragment's relevance_score. 0 ignores the strategies' orders."
        ),
    )
    agreement: float = Field(
        default=0.2,
        ge=0.0,
        description=(
            "Weight of agreement: the share of the strategies in this round that returned the "
            "fragment's node (1.0 when every strategy did)."
        ),
    )
    quality: float = Field(
        default=0.1,
        ge=0.0,
        description=(
            "Weight of quality: the highest quality_score among the strategies that returned "
            "the node (0 when no strategy is known for it)."
        ),
    )
    tier: float = Field(
        default=0.1,
        ge=0.0,
        description="Weight of the tier: hot = 1.0, warm = 0.5, cold = 0.0.",
    )
    recency: float = Field(
        default=0.05,
        ge=0.0,
        description=(
            "Weight of recency: created_at scaled to [0, 1] between the oldest (0) and the "
            "newest (1) fragment being scored."
        ),
    )
    token_cost: float = Field(
        default=0.05,
        ge=0.0,
        description=(
            "Weight of the penalty for expensive fragments: log(1 + token_count) scaled to "
            "[0, 1] by the most expensive fragment being scored, subtracted from the score."
        ),
    )
    rrf_k: float = Field(
        default=60.0,
        gt=0.0,
        description=(
            "Smoothing constant k of reciprocal rank fusion, 1 / (k + rank + 1): larger values "
            "flatten the difference between top and lower ranks across strategies."
        ),
    )


def _strategy_weight(quality: float) -> float:
    """RRF weight of a strategy: 0.5 + 0.5 * quality, so that no strategy weighs zero."""
    return 0.5 + 0.5 * min(1.0, max(0.0, quality))


class WeightedCompositeScorer:
    """Composite score of each fragment; returns the fragments best first.

    Components (each in [0, 1] before weighting; ``w_*`` from ``ScorerWeights``):

    * ``agreement`` = |strategies that returned the node| / |strategies in the round| (those
      in ``ranks`` and those named in the ``sources`` of the fragments scored)
    * ``quality``   = max quality_score of those strategies (``quality``; default 0.5)
    * ``tier``      = hot 1.0, warm 0.5, cold 0.0
    * ``recency``   = (created_at - oldest) / (newest - oldest), over the fragments scored
    * ``token_cost``= log1p(token_count) / log1p(max token_count), a penalty

    **Without ranks** (``ranks`` None or empty) the score is the weighted sum::

        score = w_rel*relevance_score + w_agr*agreement + w_q*quality + w_tier*tier
                + w_rec*recency - w_cost*token_cost

    **With ranks** (strategy -> {uko_node: rank in that strategy's own order, 0 = best}) the
    strategies' own orders are the primary key, fused by quality-weighted reciprocal rank::

        F(node) = sum over the strategies s ranking node of  q_s / (rrf_k + rank_s(node) + 1)
        q_s     = 0.5 + 0.5 * quality[s]                  (never 0: every order counts)

    floored to a multiple of 2**-50 so that sums differing only by float rounding tie. The
    other components, plus ``relevance_score`` as a tie-breaker, form a bounded term ``B``
    scaled to span less than the smallest gap between two fused values::

        score = w_rel*F + lam*B
        B     = w_rel*relevance_score + w_agr*agreement + w_q*quality + w_tier*tier
                + w_rec*recency - w_cost*token_cost
        lam   = min(1, 0.5 * w_rel * min_gap(F) / (w_rel + w_agr + w_q + w_tier + w_rec + w_cost))

    where ``min_gap`` is the smallest difference between two distinct values of ``F`` over the
    ranked nodes and 0 (the value of a node no strategy ranked). ``B`` therefore only orders
    fragments whose fused rank is equal and can never flip two fused ranks: with one strategy
    the score order equals that strategy's order exactly (while ``rrf_k + rank`` stays below
    ~23 million, where 2**-50 still separates adjacent terms); with several, their orders
    combine by rank, not by raw relevance. With ``w_rel = 0`` the orders are ignored
    (``lam = 1``; the ranks then only feed agreement and quality).

    ``components`` holds each component's weighted contribution (after ``lam``; the rank
    fusion is part of ``relevance``); they sum to ``score`` up to float rounding.
    ``strategies`` lists the node's strategies, sorted. ``sources`` (uko_node -> strategies)
    is derived from ``ranks`` when not given. Output order: score desc, depth desc, tokens
    asc, uko_node asc (the packer's order). ``plan_context`` is accepted for the protocol and
    not used by this scorer.
    """

    def __init__(self, weights: ScorerWeights | None = None) -> None:
        self.weights = weights if weights is not None else ScorerWeights()

    def score(
        self,
        fragments: Sequence[ContextFragment],
        plan_context: PlanContext,
        *,
        sources: Mapping[str, Sequence[str]] | None = None,
        ranks: Mapping[str, Mapping[str, int]] | None = None,
        quality: Mapping[str, float] | None = None,
    ) -> list[ScoredFragment]:
        scored, keys = self._score_keyed(
            fragments, None, sources=sources, ranks=ranks, quality=quality
        )
        return [scored[k[4]] for k in keys]

    def _score_keyed(
        self,
        fragments: Sequence[ContextFragment],
        nodes: Sequence[str] | None,
        *,
        sources: Mapping[str, Sequence[str]] | None,
        ranks: Mapping[str, Mapping[str, int]] | None,
        quality: Mapping[str, float] | None,
    ) -> tuple[list[ScoredFragment], list[_PackKey]]:
        """The scored fragments (in input order) and their packing keys, sorted: position
        ``k[4]`` of each key is its fragment's index in the first list.

        ``nodes``: the fragments' uko_node values when the caller already has them. Each
        fragment's fields are read once; the arithmetic runs column-wise through ``map``
        (C loops) and one Python loop builds the ScoredFragments and packing keys.
        """
        if not fragments:
            return [], []
        w = self.weights
        qualities = dict(quality or {})
        ranks = ranks if ranks is not None else {}
        ranked_names = sorted(ranks)

        # Rank fusion; node membership (one bit per strategy) only when sources are not given.
        fused: dict[str, float] = {}
        masks: dict[str, int] = {}
        offset = w.rrf_k + 1.0
        for bit, name in enumerate(ranked_names):
            weight = _strategy_weight(qualities.get(name, _DEFAULT_QUALITY))
            get_f = fused.get
            if sources is None:
                flag, get_m = 1 << bit, masks.get
                for node, rank in ranks[name].items():
                    fused[node] = get_f(node, 0.0) + weight / (offset + (rank if rank > 0 else 0))
                    masks[node] = get_m(node, 0) | flag
            else:
                for node, rank in ranks[name].items():
                    fused[node] = get_f(node, 0.0) + weight / (offset + (rank if rank > 0 else 0))
        if fused:
            fused = {node: int(value * _QUANTUM) / _QUANTUM for node, value in fused.items()}

        # One read of each fragment's fields, then columns.
        if nodes is None:
            nodes = [f.uko_node for f in fragments]
        rows = [
            (f.token_count, f.detail_depth, f.relevance_score, f.tier, f.created_at)
            for f in fragments
        ]
        tokens_col, depth_col, relevance_col, tier_col, created_col = zip(*rows, strict=True)

        # Membership: per distinct strategy set (names, agreement, best quality), once.
        member_keys: list[Any]
        if sources is not None:
            member_keys = list(map(tuple, map(sources.get, nodes, repeat(()))))
        elif ranked_names:
            member_keys = list(map(masks.get, nodes, repeat(0)))
        else:
            member_keys = [0] * len(nodes)
        named: dict[Any, tuple[str, ...]] = {}
        for key in set(member_keys):
            if isinstance(key, int):
                named[key] = tuple(n for b, n in enumerate(ranked_names) if key >> b & 1)
            else:
                named[key] = tuple(sorted(set(key)))
        n_round = len(set(ranked_names).union(*named.values()))
        info: dict[Any, tuple[tuple[str, ...], float, float]] = {}
        for key, names in named.items():
            best = max((qualities.get(n, _DEFAULT_QUALITY) for n in names), default=0.0)
            agreement = len(names) / n_round if names else 0.0
            info[key] = (names, agreement, min(1.0, max(0.0, best)))
        names_col, agreement_col, quality_col = zip(
            *map(info.__getitem__, member_keys), strict=True
        )

        w_rel, w_agr, w_q, w_tier = w.relevance, w.agreement, w.quality, w.tier
        w_rec, w_cost = w.recency, w.token_cost
        ranked = bool(fused) and w_rel > 0.0
        lam = 1.0
        if ranked:
            distinct = sorted({0.0, *fused.values()})  # 0.0: the value of an unranked node
            bounded = w_rel + w_agr + w_q + w_tier + w_rec + w_cost
            if len(distinct) > 1 and bounded > 0.0:
                gap = w_rel * min(map(sub, distinct[1:], distinct[:-1]))
                lam = min(1.0, _TIE_BREAK_SHARE * gap / bounded)

        stamps = list(map(datetime.timestamp, created_col))
        oldest = min(stamps)
        span = max(stamps) - oldest
        max_tokens = max(tokens_col)
        b_rec = lam * w_rec / span if span > 0 else 0.0
        b_cost = -lam * w_cost / math.log1p(max_tokens) if max_tokens > 0 else 0.0
        c_rel = map(mul, relevance_col, repeat(lam * w_rel))
        c_agr = map(mul, agreement_col, repeat(lam * w_agr))
        c_q = map(mul, quality_col, repeat(lam * w_q))
        c_tier = map(mul, map(_TIER_VALUE.__getitem__, tier_col), repeat(lam * w_tier))
        c_rec = map(mul, map(sub, stamps, repeat(oldest)), repeat(b_rec))
        c_cost = map(mul, map(math.log1p, tokens_col), repeat(b_cost))
        primary: Iterable[float] = (
            map(mul, map(fused.get, nodes, repeat(0.0)), repeat(w_rel))
            if ranked
            else repeat(0.0, len(nodes))
        )

        scored: list[ScoredFragment] = []
        keys: list[_PackKey] = []
        add_scored, add_key = scored.append, keys.append
        for i, (f, node, tokens, depth, names, rel, agr, q, tier, rec, cost, by_rank) in enumerate(
            zip(
                fragments, nodes, tokens_col, depth_col, names_col,
                c_rel, c_agr, c_q, c_tier, c_rec, c_cost, primary,
                strict=True,
            )
        ):  # fmt: skip
            # The bounded terms are summed first, then added to the fused rank in one step.
            value = by_rank + (rel + agr + q + tier + rec + cost)
            add_scored(
                ScoredFragment(
                    f,
                    value,
                    {
                        "relevance": by_rank + rel,
                        "agreement": agr,
                        "quality": q,
                        "tier": tier,
                        "recency": rec,
                        "token_cost": cost,
                    },
                    names,
                )
            )
            add_key((-value, -depth, tokens, node, i))
        keys.sort()
        return scored, keys


# ---- packing -------------------------------------------------------------------------------


class GreedyKnapsackPacker:
    """Greedy fill with depth fallback; deterministic; never over budget.

    Order: score desc, depth desc, tokens asc, uko_node asc (stable for full ties). Each
    fragment that fits is packed. One that does not fit falls back to the node's shallower
    renderings from ``detail_level_maps[uko_node]`` at the ``depth_fallback_steps`` below its
    depth, deepest first; the first that fits is packed (same score, components, strategies)
    and ``fallbacks[uko_node] = (from_depth, to_depth)`` is recorded. Among several renderings
    at one depth, the higher relevance, then fewer tokens, then smaller fragment_id wins.

    ``min_fragment_tokens``: packing stops once fewer than that many tokens remain (a smaller
    fragment is still packed while more remain). Everything not packed is ``omitted``, best
    first.
    """

    def __init__(
        self,
        depth_fallback_steps: Sequence[int] = DetailDepth.FALLBACK,
        min_fragment_tokens: int = 10,
    ) -> None:
        if min_fragment_tokens < 0:
            raise ValueError(f"min_fragment_tokens must be >= 0; got {min_fragment_tokens}")
        self.depth_fallback_steps = check_depth_steps(depth_fallback_steps)
        self.min_fragment_tokens = min_fragment_tokens

    def _fallback(
        self, fragment: ContextFragment, renderings: Sequence[ContextFragment], room: int
    ) -> ContextFragment | None:
        depth = fragment.detail_depth
        for step in self.depth_fallback_steps:
            if step >= depth:
                continue
            best: ContextFragment | None = None
            for alt in renderings:
                if alt.detail_depth != step or alt.token_count > room:
                    continue
                if best is None or (-alt.relevance_score, alt.token_count, alt.fragment_id) < (
                    -best.relevance_score,
                    best.token_count,
                    best.fragment_id,
                ):
                    best = alt
            if best is not None:
                return best
        return None

    def pack(
        self,
        scored_fragments: Sequence[ScoredFragment],
        budget: int,
        detail_level_maps: Mapping[str, Sequence[ContextFragment]],
    ) -> PackResult:
        items = list(scored_fragments)
        keys = [(*pack_order_key(s), i) for i, s in enumerate(items)]
        keys.sort()
        return self._pack_keyed(items, keys, budget, detail_level_maps)

    def _pack_keyed(
        self,
        items: Sequence[ScoredFragment],
        keys: Sequence[_PackKey],
        budget: int,
        detail_level_maps: Mapping[str, Sequence[ContextFragment]],
    ) -> PackResult:
        """Greedy fill in the order of ``keys`` (sorted packing keys; ``k[4]`` is the index
        of the key's ScoredFragment in ``items``)."""
        remaining = max(0, int(budget))
        floor = self.min_fragment_tokens
        packed: list[ScoredFragment] = []
        omitted: list[ScoredFragment] = []
        fallbacks: dict[str, tuple[int, int]] = {}
        pack, omit, renderings_of = packed.append, omitted.append, detail_level_maps.get
        rest = len(keys)
        for index, key in enumerate(keys):
            if remaining < floor:
                rest = index
                break
            item = items[key[4]]
            tokens = key[2]
            if tokens <= remaining:
                pack(item)
                remaining -= tokens
                continue
            renderings = renderings_of(key[3])
            if renderings:
                fragment = item.fragment
                alt = self._fallback(fragment, renderings, remaining)
                if alt is not None:
                    pack(ScoredFragment(alt, item.score, item.components, item.strategies))
                    fallbacks[fragment.uko_node] = (fragment.detail_depth, alt.detail_depth)
                    remaining -= alt.token_count
                    continue
            omit(item)
        # The unvisited rest joins ``omitted`` in one pass (no intermediate slice).
        return PackResult(
            packed=tuple(packed),
            omitted=tuple(
                chain(omitted, map(items.__getitem__, map(_POSITION, islice(keys, rest, None))))
            ),
            fallbacks=fallbacks,
        )


# ---- overage guard -------------------------------------------------------------------------


class BudgetOverageGuard:
    """Post-packing safety net: drops fragments until the packed total fits the budget.

    Drop order: lowest ``relevance_score`` first; ties: lowest score, then uko_node desc.
    Zero-token fragments are never dropped (dropping them cannot reduce the total). Each drop
    logs a structured WARNING on ``contextfuse.fusion`` with ``extra`` fields ``uko_node``,
    ``token_count``, ``relevance_score``, ``over_by`` (tokens over before the drop) and
    ``budget``. Dropped fragments join ``omitted`` (best first) and their fallback records
    are removed. Disabled, it returns the result unchanged.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled

    def enforce(self, result: PackResult, budget: int) -> PackResult:
        """``result`` trimmed to ``budget`` tokens, ``dropped_by_overage_guard`` counted."""
        budget = max(0, int(budget))
        total = result.total_tokens
        if not self.enabled or total <= budget:
            return result
        packed = list(result.packed)
        victims = sorted(range(len(packed)), key=lambda i: packed[i].uko_node, reverse=True)
        victims.sort(key=lambda i: (packed[i].fragment.relevance_score, packed[i].score))
        dropped: set[int] = set()
        for i in victims:
            if total <= budget:
                break
            item = packed[i]
            fragment = item.fragment
            if fragment.token_count == 0:
                continue
            over_by = total - budget
            logger.warning(
                "budget overage guard dropped %s (%d tokens, relevance %.3f): packed "
                "fragments were %d tokens over the %d-token budget",
                fragment.uko_node,
                fragment.token_count,
                fragment.relevance_score,
                over_by,
                budget,
                extra={
                    "uko_node": fragment.uko_node,
                    "token_count": fragment.token_count,
                    "relevance_score": fragment.relevance_score,
                    "over_by": over_by,
                    "budget": budget,
                },
            )
            total -= fragment.token_count
            dropped.add(i)
        kept = tuple(s for i, s in enumerate(packed) if i not in dropped)
        gone = [packed[i] for i in sorted(dropped)]
        gone_nodes = {s.uko_node for s in gone} - {s.uko_node for s in kept}
        omitted = sorted((*result.omitted, *gone), key=pack_order_key)
        return PackResult(
            packed=kept,
            omitted=tuple(omitted),
            fallbacks={k: v for k, v in result.fallbacks.items() if k not in gone_nodes},
            dropped_by_overage_guard=result.dropped_by_overage_guard + len(gone),
        )


# ---- engine --------------------------------------------------------------------------------

_gc_lock = threading.Lock()
_gc_holders = 0  # fuse calls currently holding the collector paused
_gc_resume = False  # whether the collector was enabled when the first holder paused it


@contextmanager
def _gc_paused(enabled: bool = True) -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (a no-op when ``enabled`` is False).

    Concurrent and nested holders share one pause; the last one out re-enables the collector
    only if it was enabled when the first one came in.
    """
    global _gc_holders, _gc_resume
    if not enabled:
        yield
        return
    with _gc_lock:
        if _gc_holders == 0:
            _gc_resume = gc.isenabled()
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0 and _gc_resume:
                gc.enable()


class FusionConfig(BaseModel):
    """Configuration of the fusion engine (spec/acms-fusion.md, FusionConfig)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scorer_weights: ScorerWeights | None = Field(
        default=None, description="Composite scoring weights; None uses ScorerWeights()."
    )
    depth_fallback_steps: tuple[int, ...] = Field(
        default=DetailDepth.FALLBACK,
        description="Depth fallback sequence, strictly descending within 0..9.",
    )
    min_fragment_tokens: int = Field(
        default=10,
        ge=0,
        description="Packing stops once fewer than this many tokens remain.",
    )
    overage_guard_enabled: bool = Field(
        default=True, description="Enable the post-packing budget overage guard."
    )

    @field_validator("depth_fallback_steps")
    @classmethod
    def _valid_steps(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        return check_depth_steps(value)


def _total_tokens(result: FusionResult) -> int:
    return sum(f.token_count for f in result.fragments)


@attrs.frozen(slots=True)
class FusionResult:
    """What fusion kept and why (spec fields first, then the records for explanations).

    ``total_tokens`` is always the sum of the fragments' token counts (derived when not
    given; a disagreeing value is rejected). ``budget_utilization`` = total_tokens /
    ``available_tokens`` (0.0 for a zero budget).
    """

    fragments: list[ContextFragment]
    dedup_count: int = 0
    depth_resolved_count: int = 0
    dropped_by_overage_guard: int = 0
    total_tokens: int = attrs.field(default=attrs.Factory(_total_tokens, takes_self=True))
    budget_utilization: float = 0.0
    scored: tuple[ScoredFragment, ...] = ()
    omitted: tuple[ScoredFragment, ...] = ()
    alternatives: Mapping[str, tuple[ContextFragment, ...]] = attrs.field(factory=dict)
    fallbacks: Mapping[str, tuple[int, int]] = attrs.field(factory=dict)
    available_tokens: int = 0

    def __attrs_post_init__(self) -> None:
        expected = _total_tokens(self)
        if self.total_tokens != expected:
            raise ValueError(
                f"total_tokens ({self.total_tokens}) must equal the sum of the fragments' "
                f"token counts ({expected})"
            )


class FusionEngine:
    """Phase 2 facade: dedup -> resolve depth -> score -> pack -> overage guard.

    Every component is injectable (e.g. plugin-provided ones); the defaults are built from
    ``config``. ``fuse`` packs into ``budget.available_tokens - reserve_tokens`` (``budget``
    may also be a plain number of available tokens).

    ``pause_gc``: fusing allocates a record per fragment and creates no reference cycles, so
    the cyclic garbage collector has nothing to find in it; left on, it promotes those
    records and may then walk the whole heap (every fragment) in a full collection, which at
    100k fragments can cost as much as the fusion itself. ``fuse`` therefore pauses it for
    its own duration (re-entrant and thread-safe across concurrent calls; never re-enabled if
    it was off). Pass ``pause_gc=False`` to leave the collector alone.
    """

    def __init__(
        self,
        config: FusionConfig | None = None,
        *,
        deduplicator: FragmentDeduplicator | None = None,
        resolver: DetailDepthResolver | None = None,
        scorer: FragmentScorer | None = None,
        packer: BudgetPacker | None = None,
        guard: BudgetOverageGuard | None = None,
        pause_gc: bool = True,
    ) -> None:
        self.config = config if config is not None else FusionConfig()
        self.pause_gc = pause_gc
        cfg = self.config
        self.deduplicator: FragmentDeduplicator = deduplicator or ContentHashDedup()
        self.resolver: DetailDepthResolver = resolver or MaxDepthResolver()
        self.scorer: FragmentScorer = scorer or WeightedCompositeScorer(cfg.scorer_weights)
        self.packer: BudgetPacker = packer or GreedyKnapsackPacker(
            cfg.depth_fallback_steps, cfg.min_fragment_tokens
        )
        self.guard = guard or BudgetOverageGuard(enabled=cfg.overage_guard_enabled)

    def fuse(
        self,
        fragments: Sequence[ContextFragment],
        budget: ContextBudget | int,
        *,
        plan_context: PlanContext | Mapping[str, Any] | None = None,
        sources: Mapping[str, Sequence[str]] | None = None,
        ranks: Mapping[str, Mapping[str, int]] | None = None,
        quality: Mapping[str, float] | None = None,
        reserve_tokens: int = 0,
    ) -> FusionResult:
        """Fuse strategy output into what fits the budget.

        ``sources``: uko_node -> strategies that returned it; ``ranks``: strategy ->
        {uko_node: rank in its own order, 0 = best}; ``quality``: strategy -> quality score.
        """
        if reserve_tokens < 0:
            raise ValueError(f"reserve_tokens must be >= 0; got {reserve_tokens}")
        if isinstance(budget, ContextBudget):
            budget_model, available = budget, budget.available_tokens
        else:
            available = int(budget)
            budget_model = ContextBudget.of(available)
        available = max(0, available - reserve_tokens)
        with _gc_paused(self.pause_gc):
            return self._fuse(
                fragments,
                budget_model,
                available,
                PlanContext.coerce(plan_context),
                sources=sources,
                ranks=ranks,
                quality=quality,
            )

    def _fuse(
        self,
        fragments: Sequence[ContextFragment],
        budget_model: ContextBudget,
        available: int,
        plan_context: PlanContext,
        *,
        sources: Mapping[str, Sequence[str]] | None,
        ranks: Mapping[str, Mapping[str, int]] | None,
        quality: Mapping[str, float] | None,
    ) -> FusionResult:
        # The default components share one grouping pass and the scorer's packing keys; any
        # injected component is called through its protocol. Both routes give one result.
        nodes: list[str] | None = None
        if type(self.deduplicator) is ContentHashDedup and type(self.resolver) is MaxDepthResolver:
            resolution, dedup_count, nodes = dedup_and_resolve(fragments)
        else:
            deduped = self.deduplicator.deduplicate(fragments)
            dedup_count = len(fragments) - len(deduped)
            resolution = self.resolver.resolve(deduped, budget_model)
        scorer, packer = self.scorer, self.packer
        if type(scorer) is WeightedCompositeScorer and type(packer) is GreedyKnapsackPacker:
            scored_items, keys = scorer._score_keyed(
                resolution.fragments, nodes, sources=sources, ranks=ranks, quality=quality
            )
            result = packer._pack_keyed(scored_items, keys, available, resolution.alternatives)
        else:
            scored = scorer.score(
                resolution.fragments, plan_context, sources=sources, ranks=ranks, quality=quality
            )
            result = packer.pack(scored, available, resolution.alternatives)
        result = self.guard.enforce(result, available)

        kept = [s.fragment for s in result.packed]
        total = sum(f.token_count for f in kept)
        return FusionResult(
            fragments=kept,
            dedup_count=dedup_count,
            depth_resolved_count=resolution.resolved_count,
            dropped_by_overage_guard=result.dropped_by_overage_guard,
            total_tokens=total,
            budget_utilization=total / available if available else 0.0,
            scored=result.packed,
            omitted=result.omitted,
            alternatives=resolution.alternatives,
            fallbacks=result.fallbacks,
            available_tokens=available,
        )
