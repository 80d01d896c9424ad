"""``WeightedCompositeScorer`` and its ``ScorerWeights``: the default FragmentScorer."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from itertools import repeat
from operator import mul, sub
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from contextfuse.components.protocols import PackKey, ScoredFragment
from contextfuse.models import ContextFragment, PlanContext

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
        scored, keys = self.score_keyed(
            fragments, plan_context, sources=sources, ranks=ranks, quality=quality
        )
        return [scored[k[4]] for k in keys]

    def score_keyed(
        self,
        fragments: Sequence[ContextFragment],
        plan_context: PlanContext,
        *,
        nodes: Sequence[str] | None = None,
        sources: Mapping[str, Sequence[str]] | None = None,
        ranks: Mapping[str, Mapping[str, int]] | None = None,
        quality: Mapping[str, float] | None = None,
    ) -> tuple[list[ScoredFragment], list[PackKey]]:
        """The scored fragments (in input order) and their packing keys, sorted: position
        ``k[4]`` of each key is its fragment's index in the first list (the ``KeyedScorer``
        extension).

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
        keys: list[PackKey] = []
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
