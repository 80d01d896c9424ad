"""Specifications of the fusion defaults: dedup, depth resolution, scoring, packing, guard,
engine."""

from __future__ import annotations

import gc
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from contextfuse.components.fusion import (
    BudgetOverageGuard,
    ContentHashDedup,
    FusionConfig,
    FusionEngine,
    FusionResult,
    GreedyKnapsackPacker,
    MaxDepthResolver,
    ScorerWeights,
    WeightedCompositeScorer,
)
from contextfuse.components.protocols import (
    BudgetPacker,
    DetailDepthResolver,
    FragmentDeduplicator,
    FragmentScorer,
    KeyedPacker,
    KeyedScorer,
    PackKey,
    PackResult,
    ScoredFragment,
)
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    FragmentProvenance,
    PlanContext,
    Tier,
)

BASE = datetime(2024, 1, 1, tzinfo=timezone.utc)
PLAN = PlanContext()


def frag(
    node: str,
    *,
    depth: int = 9,
    tokens: int = 10,
    rel: float = 0.5,
    tier: Tier = "warm",
    created: int = 0,
    content: str | None = None,
    location: str = "",
) -> ContextFragment:
    """A fragment; its content defaults to one unique to (node, depth)."""
    return ContextFragment(
        uko_node=node,
        content=content if content is not None else f"{node} @ {depth}",
        detail_depth=depth,
        token_count=tokens,
        relevance_score=rel,
        tier=tier,
        created_at=BASE + timedelta(seconds=created),
        provenance=FragmentProvenance(resource_uri=node.split("#", 1)[0], location=location),
    )


def scored(fragment: ContextFragment, score: float) -> ScoredFragment:
    return ScoredFragment(fragment, score)


def nodes(items: Sequence[ScoredFragment] | Sequence[ContextFragment]) -> list[str]:
    return [i.uko_node for i in items]


def ranks_of(*orders: tuple[str, Sequence[str]]) -> dict[str, dict[str, int]]:
    return {name: {n: r for r, n in enumerate(order)} for name, order in orders}


# ---- protocols -----------------------------------------------------------------------------


def test_defaults_implement_the_component_protocols() -> None:
    assert isinstance(ContentHashDedup(), FragmentDeduplicator)
    assert isinstance(MaxDepthResolver(), DetailDepthResolver)
    assert isinstance(WeightedCompositeScorer(), FragmentScorer)
    assert isinstance(GreedyKnapsackPacker(), BudgetPacker)


def test_default_scorer_and_packer_implement_the_keyed_extensions() -> None:
    assert isinstance(WeightedCompositeScorer(), KeyedScorer)
    assert isinstance(GreedyKnapsackPacker(), KeyedPacker)


# ---- dedup ---------------------------------------------------------------------------------


def test_dedup_keeps_the_most_relevant_of_a_node_repeating_its_content() -> None:
    low, high = frag("a", rel=0.2, content="same"), frag("a", rel=0.9, content="same")
    assert ContentHashDedup().deduplicate([low, high]) == [high]


def test_dedup_breaks_relevance_ties_by_earliest_creation_then_fragment_id() -> None:
    late, early = frag("a", created=5, content="x"), frag("a", created=1, content="x")
    assert ContentHashDedup().deduplicate([late, early]) == [early]
    one, two = frag("a", content="x"), frag("a", content="x")
    smallest = min(one, two, key=lambda f: f.fragment_id)
    assert ContentHashDedup().deduplicate([two, one]) == [smallest]


def test_dedup_keeps_equal_content_of_different_nodes() -> None:
    a, b = frag("a", content="same"), frag("b", content="same")
    assert ContentHashDedup().deduplicate([a, b]) == [a, b]


def test_dedup_keeps_different_contents_of_one_node_even_of_equal_length() -> None:
    a1, a2 = frag("a", content="abc"), frag("a", content="abd")
    assert ContentHashDedup().deduplicate([a1, a2]) == [a1, a2]


def test_dedup_orders_output_by_first_appearance_of_node_then_content() -> None:
    b, a1, a2, a1_dup = frag("b"), frag("a", depth=9), frag("a", depth=4), frag("a", depth=9)
    out = ContentHashDedup().deduplicate([b, a1, a2, a1_dup])
    assert [(f.uko_node, f.detail_depth) for f in out] == [("b", 9), ("a", 9), ("a", 4)]


def test_dedup_removes_the_same_object_given_twice() -> None:
    a = frag("a")
    assert ContentHashDedup().deduplicate([a, a]) == [a]


# ---- depth resolution ----------------------------------------------------------------------


def test_resolver_keeps_the_deepest_rendering_of_each_node() -> None:
    r = MaxDepthResolver().resolve(
        [frag("a", depth=2), frag("a", depth=9), frag("b", depth=0)], ContextBudget()
    )
    assert [(f.uko_node, f.detail_depth) for f in r.fragments] == [("a", 9), ("b", 0)]


def test_resolver_prefers_higher_relevance_at_equal_depth() -> None:
    low = frag("a", depth=4, rel=0.1, content="one")
    high = frag("a", depth=4, rel=0.8, content="two")
    assert MaxDepthResolver().resolve([low, high], ContextBudget()).fragments == (high,)


def test_resolver_sets_the_others_aside_depth_desc_and_counts_them() -> None:
    frags = [frag("a", depth=0), frag("a", depth=9), frag("a", depth=2), frag("a", depth=4)]
    r = MaxDepthResolver().resolve(frags, ContextBudget())
    assert [f.detail_depth for f in r.alternatives["a"]] == [4, 2, 0]
    assert r.resolved_count == 3


# ---- scoring -------------------------------------------------------------------------------


def test_scorer_without_ranks_follows_relevance_when_only_relevance_weighs() -> None:
    weights = ScorerWeights(agreement=0, quality=0, tier=0, recency=0, token_cost=0)
    frags = [frag("a", rel=0.2), frag("b", rel=0.9), frag("c", rel=0.5)]
    out = WeightedCompositeScorer(weights).score(frags, PLAN)
    assert nodes(out) == ["b", "c", "a"]


def test_scorer_without_ranks_trades_relevance_against_the_other_components() -> None:
    cold = frag("cold", rel=0.80, tier="cold")
    hot = frag("hot", rel=0.75, tier="hot")
    assert nodes(WeightedCompositeScorer().score([cold, hot], PLAN)) == ["hot", "cold"]


def test_scorer_components_are_the_weighted_contributions_summing_to_the_score() -> None:
    frags = [frag("a", tier="hot", created=10, tokens=100), frag("b", created=0, tokens=5)]
    for ranks in (None, ranks_of(("s", ["b", "a"]))):
        for item in WeightedCompositeScorer().score(frags, PLAN, ranks=ranks):
            assert set(item.components) == {
                "relevance",
                "agreement",
                "quality",
                "tier",
                "recency",
                "token_cost",
            }
            assert sum(item.components.values()) == pytest.approx(item.score, abs=1e-12)
            assert item.components["token_cost"] <= 0.0


def test_scorer_lists_the_strategies_that_returned_each_node() -> None:
    frags = [frag("a"), frag("b")]
    sources = {"a": ["vector", "bm25", "vector"], "b": []}
    out = {s.uko_node: s for s in WeightedCompositeScorer().score(frags, PLAN, sources=sources)}
    assert out["a"].strategies == ("bm25", "vector")
    assert out["b"].strategies == ()


def test_single_recency_strategy_order_survives_fusion_against_relevance() -> None:
    # Newest first, but relevance (and tier, and cost) all point the other way.
    frags = [
        frag(f"n{i}", created=i, rel=1.0 - i / 10, tier="hot" if i < 3 else "cold", tokens=i + 1)
        for i in range(8)
    ]
    recency_order = [f.uko_node for f in sorted(frags, key=lambda f: f.created_at, reverse=True)]
    out = WeightedCompositeScorer().score(
        frags, PLAN, ranks=ranks_of(("recency", recency_order)), quality={"recency": 0.4}
    )
    assert nodes(out) == recency_order
    packed = GreedyKnapsackPacker(min_fragment_tokens=0).pack(out, 10_000, {})
    assert nodes(packed.packed) == recency_order


def test_single_tiered_strategy_order_survives_fusion_against_relevance() -> None:
    tiers: list[Tier] = ["cold", "warm", "hot", "cold", "hot", "warm"]
    frags = [frag(f"n{i}", tier=t, rel=0.9 if t == "cold" else 0.1) for i, t in enumerate(tiers)]
    rank_of_tier = {"hot": 0, "warm": 1, "cold": 2}
    tiered = [f.uko_node for f in sorted(frags, key=lambda f: (rank_of_tier[f.tier], f.uko_node))]
    out = WeightedCompositeScorer().score(frags, PLAN, ranks=ranks_of(("tiered", tiered)))
    assert nodes(out) == tiered


def test_a_zero_quality_strategy_still_imposes_its_order() -> None:
    frags = [frag("a", rel=0.9), frag("b", rel=0.1)]
    out = WeightedCompositeScorer().score(
        frags, PLAN, ranks=ranks_of(("weak", ["b", "a"])), quality={"weak": 0.0}
    )
    assert nodes(out) == ["b", "a"]


def test_several_strategies_combine_by_rank_not_by_raw_relevance() -> None:
    # "both" is at the top of both rankings; "loud" has the highest raw relevance but sits
    # last in both strategies' own orders.
    frags = [frag("loud", rel=1.0), frag("both", rel=0.1), frag("x", rel=0.5), frag("y")]
    ranks = ranks_of(("s1", ["both", "x", "y", "loud"]), ("s2", ["y", "both", "x", "loud"]))
    out = WeightedCompositeScorer().score(frags, PLAN, ranks=ranks)
    assert nodes(out)[0] == "both"
    assert nodes(out)[-1] == "loud"


def test_a_higher_quality_strategy_wins_a_rank_disagreement() -> None:
    frags = [frag("a"), frag("b")]
    ranks = ranks_of(("good", ["a", "b"]), ("poor", ["b", "a"]))
    out = WeightedCompositeScorer().score(
        frags, PLAN, ranks=ranks, quality={"good": 0.9, "poor": 0.2}
    )
    assert nodes(out) == ["a", "b"]


def test_the_bounded_components_break_an_exact_rank_tie() -> None:
    frags = [frag("cold", tier="cold"), frag("hot", tier="hot")]
    ranks = ranks_of(("s1", ["cold", "hot"]), ("s2", ["hot", "cold"]))
    out = WeightedCompositeScorer().score(frags, PLAN, ranks=ranks)
    assert nodes(out) == ["hot", "cold"]


def test_unranked_nodes_come_after_ranked_ones() -> None:
    frags = [frag("unranked", rel=1.0, tier="hot"), frag("ranked", rel=0.0, tier="cold")]
    out = WeightedCompositeScorer().score(frags, PLAN, ranks=ranks_of(("s", ["ranked"])))
    assert nodes(out) == ["ranked", "unranked"]


def test_relevance_weight_zero_ignores_the_strategies_orders() -> None:
    weights = ScorerWeights(relevance=0.0)
    frags = [frag("cold", tier="cold"), frag("hot", tier="hot")]
    out = WeightedCompositeScorer(weights).score(
        frags, PLAN, ranks=ranks_of(("s", ["cold", "hot"]))
    )
    assert nodes(out) == ["hot", "cold"]


def test_scorer_weights_are_non_negative_frozen_and_documented() -> None:
    with pytest.raises(ValidationError):
        ScorerWeights(tier=-0.1)
    weights = ScorerWeights()
    with pytest.raises(ValidationError):
        weights.tier = 1.0
    for name, field in ScorerWeights.model_fields.items():
        assert field.description, f"{name} has no description"


# ---- packing -------------------------------------------------------------------------------


def test_packer_orders_by_score_then_depth_then_tokens_then_node() -> None:
    items = [
        scored(frag("d", depth=4, tokens=5), 0.5),
        scored(frag("c", depth=9, tokens=9), 0.5),
        scored(frag("b", depth=9, tokens=5), 0.5),
        scored(frag("a", depth=9, tokens=5), 0.5),
        scored(frag("top", depth=0, tokens=50), 0.9),
    ]
    out = GreedyKnapsackPacker(min_fragment_tokens=0).pack(items, 1000, {})
    assert nodes(out.packed) == ["top", "a", "b", "c", "d"]


def test_packer_skips_what_does_not_fit_and_packs_a_later_smaller_fragment() -> None:
    items = [scored(frag("big", tokens=80), 0.9), scored(frag("small", tokens=30), 0.5)]
    out = GreedyKnapsackPacker(min_fragment_tokens=0).pack(items, 50, {})
    assert nodes(out.packed) == ["small"]
    assert nodes(out.omitted) == ["big"]


def test_depth_fallback_packs_the_deepest_shallower_rendering_that_fits() -> None:
    deep = frag("a", depth=9, tokens=100)
    maps = {"a": [frag("a", depth=4, tokens=60), frag("a", depth=2, tokens=30), frag("a", depth=0)]}
    out = GreedyKnapsackPacker().pack([scored(deep, 0.9)], 50, maps)
    assert [(s.uko_node, s.fragment.detail_depth) for s in out.packed] == [("a", 2)]
    assert out.fallbacks == {"a": (9, 2)}
    assert out.packed[0].score == 0.9
    assert out.omitted == ()


def test_depth_fallback_only_tries_the_configured_steps() -> None:
    deep = frag("a", depth=9, tokens=100)
    maps = {"a": [frag("a", depth=6, tokens=40), frag("a", depth=0, tokens=5)]}
    out = GreedyKnapsackPacker().pack([scored(deep, 0.9)], 50, maps)
    assert [s.fragment.detail_depth for s in out.packed] == [0]


def test_depth_fallback_omits_the_node_when_no_rendering_fits() -> None:
    deep = frag("a", depth=9, tokens=100)
    out = GreedyKnapsackPacker().pack(
        [scored(deep, 0.9)], 50, {"a": [frag("a", depth=4, tokens=60)]}
    )
    assert out.packed == () and out.fallbacks == {}
    assert nodes(out.omitted) == ["a"]


def test_packing_stops_once_fewer_than_min_fragment_tokens_remain() -> None:
    items = [scored(frag("a", tokens=95), 0.9), scored(frag("tiny", tokens=3), 0.5)]
    out = GreedyKnapsackPacker(min_fragment_tokens=10).pack(items, 100, {})
    assert nodes(out.packed) == ["a"]
    assert nodes(out.omitted) == ["tiny"]


def test_a_fragment_below_the_minimum_is_packed_while_enough_room_remains() -> None:
    items = [scored(frag("tiny", tokens=3), 0.9), scored(frag("b", tokens=50), 0.5)]
    out = GreedyKnapsackPacker(min_fragment_tokens=10).pack(items, 100, {})
    assert nodes(out.packed) == ["tiny", "b"]


def test_everything_not_packed_is_omitted_best_first() -> None:
    items = [scored(frag(n, tokens=60), s) for n, s in [("c", 0.1), ("a", 0.9), ("b", 0.5)]]
    out = GreedyKnapsackPacker().pack(items, 60, {})
    assert nodes(out.packed) == ["a"]
    assert nodes(out.omitted) == ["b", "c"]


def test_a_zero_budget_packs_nothing() -> None:
    out = GreedyKnapsackPacker(min_fragment_tokens=0).pack([scored(frag("a"), 1.0)], 0, {})
    assert out.packed == () and nodes(out.omitted) == ["a"]


def test_packer_rejects_invalid_fallback_steps() -> None:
    for steps in [(), (4, 9), (9, 9), (10, 0), (9, -1)]:
        with pytest.raises(ValueError, match="depth_fallback_steps"):
            GreedyKnapsackPacker(depth_fallback_steps=steps)


# ---- overage guard -------------------------------------------------------------------------


def over_budget() -> PackResult:
    return PackResult(
        packed=(
            scored(frag("keep", tokens=40, rel=0.9), 0.9),
            scored(frag("mid", tokens=40, rel=0.5), 0.5),
            scored(frag("low", tokens=40, rel=0.1), 0.8),
        )
    )


def test_guard_drops_lowest_relevance_first_until_within_budget() -> None:
    out = BudgetOverageGuard().enforce(over_budget(), 80)
    assert nodes(out.packed) == ["keep", "mid"]
    assert nodes(out.omitted) == ["low"]
    assert out.dropped_by_overage_guard == 1
    assert out.total_tokens <= 80


def test_guard_logs_a_structured_warning_for_each_drop(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="contextfuse.fusion"):
        out = BudgetOverageGuard().enforce(over_budget(), 40)
    assert out.dropped_by_overage_guard == 2
    records = [r for r in caplog.records if r.name == "contextfuse.fusion"]
    assert [r.levelno for r in records] == [logging.WARNING, logging.WARNING]
    assert [r.__dict__["uko_node"] for r in records] == ["low", "mid"]
    assert [r.__dict__["over_by"] for r in records] == [80, 40]
    assert [r.__dict__["token_count"] for r in records] == [40, 40]
    assert [r.__dict__["relevance_score"] for r in records] == [0.1, 0.5]
    assert "low" in records[0].getMessage() and "over" in records[0].getMessage()


def test_guard_breaks_relevance_ties_by_lowest_score_then_node_desc() -> None:
    result = PackResult(
        packed=(
            scored(frag("a", tokens=10, rel=0.5), 0.3),
            scored(frag("b", tokens=10, rel=0.5), 0.3),
            scored(frag("c", tokens=10, rel=0.5), 0.2),
        )
    )
    first = BudgetOverageGuard().enforce(result, 20)
    assert nodes(first.omitted) == ["c"]
    second = BudgetOverageGuard().enforce(result, 10)
    assert nodes(second.packed) == ["a"]


def test_guard_leaves_a_result_within_budget_untouched(caplog: pytest.LogCaptureFixture) -> None:
    result = over_budget()
    with caplog.at_level(logging.WARNING, logger="contextfuse.fusion"):
        assert BudgetOverageGuard().enforce(result, 120) is result
    assert not caplog.records


def test_a_disabled_guard_returns_the_result_unchanged() -> None:
    result = over_budget()
    assert BudgetOverageGuard(enabled=False).enforce(result, 10) is result


# ---- engine --------------------------------------------------------------------------------


def test_fusion_config_defaults_follow_the_spec() -> None:
    config = FusionConfig()
    assert config.scorer_weights is None
    assert config.depth_fallback_steps == (9, 4, 2, 0)
    assert config.min_fragment_tokens == 10
    assert config.overage_guard_enabled is True
    with pytest.raises(ValidationError):
        FusionConfig(depth_fallback_steps=(2, 4))
    with pytest.raises(ValidationError):
        config.min_fragment_tokens = 3


def test_engine_fuses_into_budget_available_tokens_minus_reserve() -> None:
    frags = [frag(f"n{i}", tokens=100, rel=i / 10) for i in range(10)]
    result = FusionEngine().fuse(
        frags, ContextBudget(max_tokens=1000, reserved_tokens=200), reserve_tokens=300
    )
    assert result.available_tokens == 500
    assert result.total_tokens == 500 == sum(f.token_count for f in result.fragments)
    assert result.budget_utilization == 1.0


def test_engine_accepts_a_plain_token_count_as_budget() -> None:
    frags = [frag("a", tokens=60), frag("b", tokens=60)]
    result = FusionEngine().fuse(frags, 100)
    assert len(result.fragments) == 1 and result.available_tokens == 100
    assert result.budget_utilization == pytest.approx(0.6)


def test_engine_reports_dedup_resolution_fallbacks_and_explanations() -> None:
    frags = [
        frag("a", depth=9, tokens=300, rel=0.9),
        frag("a", depth=4, tokens=40, rel=0.9),
        frag("a", depth=4, tokens=40, rel=0.2),  # same content as the one above
        frag("b", depth=9, tokens=50, rel=0.5),
    ]
    ranks = ranks_of(("s", ["a", "b"]))
    result = FusionEngine().fuse(frags, 100, ranks=ranks)
    assert result.dedup_count == 1
    assert result.depth_resolved_count == 1
    assert result.fallbacks == {"a": (9, 4)}
    assert [(f.uko_node, f.detail_depth) for f in result.fragments] == [("a", 4), ("b", 9)]
    assert [s.fragment for s in result.scored] == result.fragments
    assert [f.detail_depth for f in result.alternatives["a"]] == [4]
    assert result.scored[0].strategies == ("s",)


def test_engine_calls_injected_components_through_their_protocols() -> None:
    calls: list[str] = []

    class Dedup:
        def deduplicate(self, fragments: Sequence[ContextFragment]) -> list[ContextFragment]:
            calls.append("dedup")
            return list(fragments)

    class Packer:
        def pack(
            self,
            scored_fragments: Sequence[ScoredFragment],
            budget: int,
            detail_level_maps: Mapping[str, Sequence[ContextFragment]],
        ) -> PackResult:
            calls.append("pack")
            return PackResult(packed=tuple(scored_fragments))  # ignores the budget

    frags = [frag("a", tokens=60, rel=0.9), frag("b", tokens=60, rel=0.1)]
    result = FusionEngine(deduplicator=Dedup(), packer=Packer()).fuse(frags, 100)
    assert calls == ["dedup", "pack"]
    assert [f.uko_node for f in result.fragments] == ["a"]  # the guard caught the overage
    assert result.dropped_by_overage_guard == 1


def test_engine_shortcut_for_the_defaults_equals_the_protocol_route() -> None:
    class Dedup(ContentHashDedup): ...

    class Resolver(MaxDepthResolver): ...

    class Scorer(WeightedCompositeScorer): ...

    class Packer(GreedyKnapsackPacker): ...

    frags = [
        frag(f"n{i % 7}", depth=(9, 4, 2, 0)[i % 4], tokens=7 * i + 3, rel=(i % 5) / 5, created=i)
        for i in range(40)
    ]
    frags += frags[:5]
    ranks = ranks_of(("r", [f"n{i}" for i in range(7)]), ("q", [f"n{i}" for i in (3, 1, 5)]))
    fast = FusionEngine().fuse(frags, 120, ranks=ranks, quality={"r": 0.7})
    slow = FusionEngine(
        deduplicator=Dedup(), resolver=Resolver(), scorer=Scorer(), packer=Packer()
    ).fuse(frags, 120, ranks=ranks, quality={"r": 0.7})
    assert fast == slow


def test_engine_uses_a_replacement_scorer_through_the_keyed_protocol() -> None:
    calls: list[str] = []

    class ReversedScorer:
        """Ranks by ascending relevance; implements only the keyed extension's fast path."""

        def score(
            self,
            fragments: Sequence[ContextFragment],
            plan_context: PlanContext,
            *,
            sources: Mapping[str, Sequence[str]] | None = None,
            ranks: Mapping[str, Mapping[str, int]] | None = None,
            quality: Mapping[str, float] | None = None,
        ) -> list[ScoredFragment]:
            raise AssertionError("the engine must use score_keyed")

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
            calls.append("score_keyed")
            items = [ScoredFragment(f, 1.0 - f.relevance_score) for f in fragments]
            keys = [
                (-s.score, -s.fragment.detail_depth, s.fragment.token_count, s.uko_node, i)
                for i, s in enumerate(items)
            ]
            return items, sorted(keys)

    frags = [frag("a", tokens=60, rel=0.9), frag("b", tokens=60, rel=0.1)]
    result = FusionEngine(scorer=ReversedScorer()).fuse(frags, 100)
    assert calls == ["score_keyed"]
    assert [f.uko_node for f in result.fragments] == ["b"]
    assert [s.uko_node for s in result.omitted] == ["a"]


def test_engine_calls_a_forwarding_proxy_through_its_plain_method() -> None:
    calls: list[str] = []

    class CountingProxy:
        """Forwards everything to the default scorer through ``__getattr__``, counting score."""

        def __init__(self) -> None:
            self.inner = WeightedCompositeScorer()

        def __getattr__(self, name: str) -> object:
            if name == "score":
                calls.append("score")
            return getattr(self.inner, name)

    FusionEngine(scorer=CountingProxy()).fuse([frag("a"), frag("b")], 100)  # type: ignore[arg-type]
    assert calls == ["score"]


def test_engine_route_through_the_plain_protocols_equals_the_keyed_route() -> None:
    class PlainScorer:
        """The default scorer behind ``FragmentScorer.score`` only."""

        def __init__(self) -> None:
            self.inner = WeightedCompositeScorer()

        def score(
            self,
            fragments: Sequence[ContextFragment],
            plan_context: PlanContext,
            *,
            sources: Mapping[str, Sequence[str]] | None = None,
            ranks: Mapping[str, Mapping[str, int]] | None = None,
            quality: Mapping[str, float] | None = None,
        ) -> list[ScoredFragment]:
            return self.inner.score(
                fragments, plan_context, sources=sources, ranks=ranks, quality=quality
            )

    class PlainPacker:
        """The default packer behind ``BudgetPacker.pack`` only."""

        def __init__(self) -> None:
            self.inner = GreedyKnapsackPacker()

        def pack(
            self,
            scored_fragments: Sequence[ScoredFragment],
            budget: int,
            detail_level_maps: Mapping[str, Sequence[ContextFragment]],
        ) -> PackResult:
            return self.inner.pack(scored_fragments, budget, detail_level_maps)

    assert not isinstance(PlainScorer(), KeyedScorer)
    assert not isinstance(PlainPacker(), KeyedPacker)
    frags = [
        frag(f"n{i % 7}", depth=(9, 4, 2, 0)[i % 4], tokens=7 * i + 3, rel=(i % 5) / 5, created=i)
        for i in range(40)
    ]
    ranks = ranks_of(("r", [f"n{i}" for i in range(7)]), ("q", [f"n{i}" for i in (3, 1, 5)]))
    keyed = FusionEngine().fuse(frags, 120, ranks=ranks, quality={"r": 0.7})
    plain = FusionEngine(scorer=PlainScorer(), packer=PlainPacker()).fuse(
        frags, 120, ranks=ranks, quality={"r": 0.7}
    )
    assert plain == keyed


def test_engine_restores_the_garbage_collector_state() -> None:
    frags = [frag("a")]
    was_enabled = gc.isenabled()
    try:
        gc.enable()
        FusionEngine().fuse(frags, 100)
        assert gc.isenabled()
        gc.disable()
        FusionEngine().fuse(frags, 100)
        assert not gc.isenabled()
    finally:
        if was_enabled:
            gc.enable()


def test_engine_rejects_a_negative_reserve() -> None:
    with pytest.raises(ValueError, match="reserve_tokens"):
        FusionEngine().fuse([frag("a")], 100, reserve_tokens=-1)


def test_fusion_result_total_tokens_is_the_sum_of_its_fragments() -> None:
    frags = [frag("a", tokens=3), frag("b", tokens=4)]
    assert FusionResult(fragments=frags).total_tokens == 7
    with pytest.raises(ValueError, match="total_tokens"):
        FusionResult(fragments=frags, total_tokens=5)
