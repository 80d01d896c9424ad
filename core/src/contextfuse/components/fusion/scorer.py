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
from contextfuse.components.relevance_record import STRATEGY_RELEVANCE, parse_strategy_relevance
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
#: Tier values of a candidate's ``tier`` part: hot candidates gain, cold ones lose.
_CANDIDATE_TIER: Final[Mapping[str, float]] = {"hot": 1.0, "warm": 0.0, "cold": -1.0}
#: How much a strategy's rank counts beside a candidate's score: enough to order candidates
#: of equal score by rank, never enough to pass a better score.
_RANK_SHARE: Final = 1e-3


class ScorerWeights(BaseModel):
    """Weights of the composite score (see ``WeightedCompositeScorer`` for the formula).

    Every component value lies in [0, 1] (tier of a candidate: [-1, 1]); a weight of 0
    switches its component off.
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
    lead: float = Field(
        default=1.0,
        ge=0.0,
        description=(
            "For candidates of ranking strategies: a node that only lower-quality strategies "
            "found falls this many score spans below the nodes that the best strategy "
            "serving its resource type found, per better strategy that missed it. 1 keeps "
            "the leading strategy's candidates first; 0 fuses the strategies as equals."
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

    Two kinds of fragment are scored, each by its own rule:

    * **candidates of ranking strategies** (the fragments the pipeline rendered from a
      ranking: ``metadata["role"]`` is set), whose ``relevance_score`` is the strategy's own
      score relative to its best candidate: the parts are shares of relevance, large
      enough to reorder candidates whose scores are close, and quality keeps each kind of
      resource led by the best strategy serving it (see *Candidates* below);
    * **every other fragment** (the v1 API, fragment strategies, which decided their own
      order): the strategies' orders fused by rank and never flipped by the other parts
      (see *Fragments* below).

    **Candidates.** Per candidate ``x`` (``S(x)``: the strategies that returned ``x``'s node;
    ``T(x)``: the strategies of the round that returned candidates of ``x``'s resource
    type)::

        r = w_rel * (relevance_score + 1e-3 * (rrf_k + 1) / (rrf_k + best rank + 1))
        agreement a = (|S(x) & T(x)| - 1) / (|T(x)| - 1)    (0 when T(x) has one strategy)
        tier t = hot +1, warm 0, cold -1;  recency c and token cost k as below
        lead l = |{s in T(x): quality[s] > max quality over S(x)}|

        score = r * (1 + w_agr*a + w_tier*t + w_rec*c - w_cost*k) - w_lead * l * span
        span  = w_rel * (1.001 + w_agr + w_tier + w_rec + w_cost)

    ``span`` bounds the difference of the first term between any two candidates, so every
    node that the best strategy serving its resource type found ranks before every node only
    lower-quality strategies found (each resource type keeps its own leading strategy: a
    history strategy's commits are not placed below a code strategy's code). Several
    strategies therefore never push the best one's candidates down: they add agreement
    among them, and candidates after them. Components: ``relevance`` (r), ``agreement``,
    ``tier``, ``recency``, ``token_cost`` and ``quality`` (the lead term).

    **Fragments.**

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
        if nodes is None:
            nodes = [f.uko_node for f in fragments]
        is_candidate = ["role" in f.metadata for f in fragments]
        if not any(is_candidate):
            return self._score_fragments(fragments, nodes, sources, ranks, quality)
        if all(is_candidate):
            return self._score_candidates(fragments, nodes, sources, ranks, quality)
        # A round of both kinds: fragments' rank fusion is scaled so that a strategy's first
        # fragment weighs as much as a candidate of relevance 1.
        split = [[i for i, c in enumerate(is_candidate) if c == kind] for kind in (True, False)]
        parts = [
            scorer(
                [fragments[i] for i in indices],
                [nodes[i] for i in indices],
                sources,
                ranks,
                quality,
            )
            for scorer, indices in zip(
                (self._score_candidates, self._score_fragments), split, strict=True
            )
        ]
        scale = self.weights.rrf_k + 1.0 if ranks else 1.0
        scored: list[ScoredFragment] = [ScoredFragment(f, 0.0) for f in fragments]
        for (items, _), indices, factor in zip(parts, split, (1.0, scale), strict=True):
            for item, index in zip(items, indices, strict=True):
                scored[index] = ScoredFragment(
                    item.fragment,
                    item.score * factor,
                    {k: v * factor for k, v in item.components.items()},
                    item.strategies,
                )
        keys: list[PackKey] = [
            (-item.score, -item.fragment.detail_depth, item.token_count, node, i)
            for i, (item, node) in enumerate(zip(scored, nodes, strict=True))
        ]
        keys.sort()
        return scored, keys

    def _score_fragments(
        self,
        fragments: Sequence[ContextFragment],
        nodes: Sequence[str],
        sources: Mapping[str, Sequence[str]] | None,
        ranks: Mapping[str, Mapping[str, int]] | None,
        quality: Mapping[str, float] | None,
    ) -> tuple[list[ScoredFragment], list[PackKey]]:
        """Fragments of fragment strategies: rank fusion first, the other parts bounded."""
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

    def _score_candidates(
        self,
        fragments: Sequence[ContextFragment],
        nodes: Sequence[str],
        sources: Mapping[str, Sequence[str]] | None,
        ranks: Mapping[str, Mapping[str, int]] | None,
        quality: Mapping[str, float] | None,
    ) -> tuple[list[ScoredFragment], list[PackKey]]:
        """Candidates of ranking strategies: relevance with shares, led by quality per kind."""
        w = self.weights
        qualities = dict(quality or {})
        ranks = ranks if ranks is not None else {}
        # Each node's best rank term, and its strategies when sources are not given.
        k1 = w.rrf_k + 1.0
        best_rank: dict[str, float] = {}
        found_by: dict[str, list[str]] = {}
        for name in sorted(ranks):
            get_b = best_rank.get
            for node, rank in ranks[name].items():
                term = k1 / (k1 + (rank if rank > 0 else 0))
                if term > get_b(node, 0.0):
                    best_rank[node] = term
                if sources is None:
                    found_by.setdefault(node, []).append(name)
        members: Mapping[str, Sequence[str]] = sources if sources is not None else found_by
        rows = [
            (f.token_count, f.detail_depth, f.relevance_score, f.tier, f.created_at,
             f.provenance.resource_type)
            for f in fragments
        ]  # fmt: skip
        tokens_col, depth_col, relevance_col, tier_col, created_col, type_col = zip(
            *rows, strict=True
        )
        names_col = [tuple(sorted(set(members.get(node, ())))) for node in nodes]
        if len(ranks) > 1:
            relevance_col = _leads_relevance(fragments, relevance_col, names_col, qualities)
        # The strategies serving each resource type; then, per (strategies, type), the
        # agreement and how many better strategies serving the type missed the node.
        pairs = set(zip(names_col, type_col, strict=True))
        serving: dict[str, set[str]] = {}
        for names, kind in pairs:
            serving.setdefault(kind, set()).update(names)
        info: dict[tuple[tuple[str, ...], str], tuple[float, int]] = {}
        for names, kind in pairs:
            peers = serving.get(kind, set())
            agreement = (len(names) - 1) / (len(peers) - 1) if len(peers) > 1 and names else 0.0
            best = max((qualities.get(n, _DEFAULT_QUALITY) for n in names), default=0.0)
            lead = sum(1 for p in peers if qualities.get(p, _DEFAULT_QUALITY) > best)
            info[(names, kind)] = (agreement, lead)

        w_rel, w_agr, w_tier = w.relevance, w.agreement, w.tier
        w_rec, w_cost, w_lead = w.recency, w.token_cost, w.lead
        span = w_rel * (1.0 + _RANK_SHARE + w_agr + w_tier + w_rec + w_cost)
        stamps = list(map(datetime.timestamp, created_col))
        oldest = min(stamps)
        age_span = max(stamps) - oldest
        max_tokens = max(tokens_col)
        cost_scale = 1.0 / math.log1p(max_tokens) if max_tokens > 0 else 0.0
        tier_value = _CANDIDATE_TIER.__getitem__
        rank_term = best_rank.get

        scored: list[ScoredFragment] = []
        keys: list[PackKey] = []
        add_scored, add_key = scored.append, keys.append
        for i, (f, node, tokens, depth, rel, tier, stamp, kind, names) in enumerate(
            zip(
                fragments, nodes, tokens_col, depth_col, relevance_col, tier_col, stamps,
                type_col, names_col,
                strict=True,
            )
        ):  # fmt: skip
            agreement, lead = info[(names, kind)]
            r = w_rel * (rel + _RANK_SHARE * rank_term(node, 0.0))
            c_agr = r * w_agr * agreement
            c_tier = r * w_tier * tier_value(tier)
            c_rec = r * w_rec * (stamp - oldest) / age_span if age_span > 0 else 0.0
            c_cost = -r * w_cost * math.log1p(tokens) * cost_scale
            c_q = -w_lead * lead * span if lead else 0.0
            value = r + c_agr + c_tier + c_rec + c_cost + c_q
            add_scored(
                ScoredFragment(
                    f,
                    value,
                    {
                        "relevance": r,
                        "agreement": c_agr,
                        "quality": c_q,
                        "tier": c_tier,
                        "recency": c_rec,
                        "token_cost": c_cost,
                    },
                    names,
                )
            )
            add_key((-value, -depth, tokens, node, i))
        keys.sort()
        return scored, keys


def _leads_relevance(
    fragments: Sequence[ContextFragment],
    relevance: Sequence[float],
    names: Sequence[tuple[str, ...]],
    qualities: Mapping[str, float],
) -> tuple[float, ...]:
    """Each candidate's relevance as the best strategy that found it scored it.

    Deduplication keeps a node's fragment of highest relevance, whichever strategy returned
    it: a weaker strategy's own best would then outrank what the best strategy placed above
    it. Coordination records every strategy's relevance of a node found by several
    (``STRATEGY_RELEVANCE``); the best one's is the candidate's, so the best strategy's order
    among its nodes stands and the others add their agreement.
    """
    out: list[float] = []
    for f, rel, found in zip(fragments, relevance, names, strict=True):
        recorded = f.metadata.get(STRATEGY_RELEVANCE)
        if recorded is None or len(found) < 2:
            out.append(rel)
            continue
        best = max(found, key=lambda n: (qualities.get(n, _DEFAULT_QUALITY), n))
        out.append(parse_strategy_relevance(recorded).get(best, rel))
    return tuple(out)
