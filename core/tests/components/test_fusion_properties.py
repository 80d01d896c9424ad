"""Properties of fusion, checked on random fragments, rankings and budgets."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from contextfuse.components.fusion import (
    ContentHashDedup,
    FusionEngine,
    GreedyKnapsackPacker,
    MaxDepthResolver,
    WeightedCompositeScorer,
    dedup_and_resolve,
)
from contextfuse.components.protocols import ScoredFragment
from contextfuse.hashing import context_hash
from contextfuse.models import ContextBudget, ContextFragment, FragmentProvenance, PlanContext

BASE = datetime(2024, 1, 1, tzinfo=timezone.utc)
NODES = [f"project://p/src/m{i // 3}.py#s{i % 3}" for i in range(7)]
DEPTHS = (0, 2, 4, 9)
TIERS = ("hot", "warm", "cold")
SETTINGS = settings(deadline=None, max_examples=60)


def frag(
    node: str,
    depth: int,
    tokens: int,
    rel: float = 0.5,
    tier: str = "warm",
    created: int = 0,
    variant: int = 0,
) -> ContextFragment:
    """A fragment whose content is determined by (node, depth, variant)."""
    return ContextFragment.model_validate(
        {
            "uko_node": node,
            "content": f"{node}|{depth}|{variant}",
            "detail_depth": depth,
            "token_count": tokens,
            "relevance_score": rel,
            "tier": tier,
            "created_at": BASE + timedelta(seconds=created),
            "provenance": FragmentProvenance(resource_uri=node.split("#", 1)[0]),
        }
    )


@st.composite
def fragments(draw: st.DrawFn, max_size: int = 30) -> list[ContextFragment]:
    """Random fragments over a few nodes: several depths, repeated contents, same objects."""
    out: list[ContextFragment] = []
    for _ in range(draw(st.integers(0, max_size))):
        if out and draw(st.integers(0, 9)) == 0:
            out.append(draw(st.sampled_from(out)))  # the very same object again
            continue
        out.append(
            frag(
                draw(st.sampled_from(NODES)),
                draw(st.sampled_from(DEPTHS)),
                draw(st.integers(0, 120)),
                rel=draw(st.floats(0.0, 1.0)),
                tier=draw(st.sampled_from(TIERS)),
                created=draw(st.integers(0, 50)),
                variant=draw(st.integers(0, 2)),
            )
        )
    return out


@st.composite
def rankings(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, float]]:
    """Up to three strategies, each ranking a random subset of the nodes in its own order."""
    ranks: dict[str, dict[str, int]] = {}
    quality: dict[str, float] = {}
    for name in draw(st.lists(st.sampled_from(["bm25", "vector", "graph"]), unique=True)):
        order = draw(st.permutations(NODES))[: draw(st.integers(0, len(NODES)))]
        ranks[name] = {node: rank for rank, node in enumerate(order)}
        quality[name] = draw(st.floats(0.0, 1.0))
    return ranks, quality


def signature(fragments: Sequence[ContextFragment]) -> list[tuple[str, int, str]]:
    return [(f.uko_node, f.detail_depth, f.fragment_id) for f in fragments]


# ---- budget --------------------------------------------------------------------------------


@SETTINGS
@given(
    items=fragments(),
    alternatives=fragments(),
    scores=st.lists(st.floats(-1.0, 2.0), min_size=30, max_size=30),
    budget=st.integers(-5, 400),
    minimum=st.integers(0, 20),
)
def test_the_packer_never_exceeds_the_budget(
    items: list[ContextFragment],
    alternatives: list[ContextFragment],
    scores: list[float],
    budget: int,
    minimum: int,
) -> None:
    maps: dict[str, list[ContextFragment]] = {}
    for alt in alternatives:
        maps.setdefault(alt.uko_node, []).append(alt)
    scored = [ScoredFragment(f, s) for f, s in zip(items, scores, strict=False)]
    result = GreedyKnapsackPacker(min_fragment_tokens=minimum).pack(scored, budget, maps)
    assert result.total_tokens <= max(0, budget)
    assert len(result.packed) + len(result.omitted) == len(scored)
    for node, (deep, shallow) in result.fallbacks.items():
        assert deep > shallow and node in maps


@SETTINGS
@given(
    items=fragments(),
    ranked=rankings(),
    budget=st.integers(1, 400),
    reserved=st.integers(0, 100),
    reserve=st.integers(0, 100),
)
def test_the_engine_never_exceeds_the_budget(
    items: list[ContextFragment],
    ranked: tuple[dict[str, dict[str, int]], dict[str, float]],
    budget: int,
    reserved: int,
    reserve: int,
) -> None:
    ranks, quality = ranked
    total = ContextBudget(max_tokens=budget + reserved, reserved_tokens=reserved)
    result = FusionEngine().fuse(
        items, total, ranks=ranks or None, quality=quality, reserve_tokens=reserve
    )
    assert result.total_tokens == sum(f.token_count for f in result.fragments)
    assert result.total_tokens <= max(0, budget - reserve) == result.available_tokens
    assert len({f.uko_node for f in result.fragments}) == len(result.fragments)
    assert result.dropped_by_overage_guard == 0


# ---- determinism ---------------------------------------------------------------------------


@SETTINGS
@given(items=fragments(), ranked=rankings(), budget=st.integers(0, 300))
def test_the_same_input_gives_the_same_output_in_the_same_order(
    items: list[ContextFragment],
    ranked: tuple[dict[str, dict[str, int]], dict[str, float]],
    budget: int,
) -> None:
    ranks, quality = ranked
    engine = FusionEngine()
    first = engine.fuse(items, budget, ranks=ranks, quality=quality)
    again = FusionEngine().fuse(list(items), budget, ranks=dict(ranks), quality=dict(quality))
    assert signature(first.fragments) == signature(again.fragments)
    assert [s.score for s in first.scored] == [s.score for s in again.scored]
    assert signature([s.fragment for s in first.omitted]) == signature(
        [s.fragment for s in again.omitted]
    )
    digest = context_hash((f.uko_node, f.content) for f in first.fragments)
    assert digest == context_hash((f.uko_node, f.content) for f in again.fragments)


# ---- idempotence ---------------------------------------------------------------------------


@SETTINGS
@given(items=fragments())
def test_dedup_is_idempotent(items: list[ContextFragment]) -> None:
    once = ContentHashDedup().deduplicate(items)
    assert ContentHashDedup().deduplicate(once) == once
    assert len({(f.uko_node, f.content) for f in once}) == len(once)


@SETTINGS
@given(items=fragments())
def test_depth_resolution_is_idempotent(items: list[ContextFragment]) -> None:
    once = MaxDepthResolver().resolve(items, ContextBudget())
    twice = MaxDepthResolver().resolve(once.fragments, ContextBudget())
    assert twice.fragments == once.fragments
    assert twice.resolved_count == 0 and not twice.alternatives
    for chosen in once.fragments:
        for alt in once.alternatives.get(chosen.uko_node, ()):
            assert alt.detail_depth <= chosen.detail_depth


@SETTINGS
@given(items=fragments())
def test_one_pass_dedup_and_resolution_equals_the_two_components(
    items: list[ContextFragment],
) -> None:
    deduped = ContentHashDedup().deduplicate(items)
    expected = MaxDepthResolver().resolve(deduped, ContextBudget())
    resolution, removed, nodes = dedup_and_resolve(items)
    assert resolution == expected
    assert removed == len(items) - len(deduped)
    assert nodes == [f.uko_node for f in resolution.fragments]


# ---- rank order ----------------------------------------------------------------------------


@SETTINGS
@given(
    data=st.data(),
    count=st.integers(1, len(NODES)),
    strategy=st.sampled_from(["recency", "tiered", "relevance"]),
    quality=st.floats(0.0, 1.0),
    budget=st.integers(0, 600),
)
def test_a_single_strategys_order_survives_scoring_and_packing(
    data: st.DataObject, count: int, strategy: str, quality: float, budget: int
) -> None:
    # Random fields: the strategy's own order disagrees with relevance, tier, recency, cost.
    items = [
        frag(
            node,
            data.draw(st.sampled_from(DEPTHS)),
            data.draw(st.integers(0, 120)),
            rel=data.draw(st.floats(0.0, 1.0)),
            tier=data.draw(st.sampled_from(TIERS)),
            created=data.draw(st.integers(0, 50)),
        )
        for node in NODES[:count]
    ]
    order = data.draw(st.permutations([f.uko_node for f in items]))
    ranks = {strategy: {node: rank for rank, node in enumerate(order)}}
    scored = WeightedCompositeScorer().score(
        items, PlanContext(), ranks=ranks, quality={strategy: quality}
    )
    assert [s.uko_node for s in scored] == list(order)
    packed = GreedyKnapsackPacker(min_fragment_tokens=0).pack(scored, budget, {})
    position = {node: i for i, node in enumerate(order)}
    assert [position[s.uko_node] for s in packed.packed] == sorted(
        position[s.uko_node] for s in packed.packed
    )


# ---- depth fallback ------------------------------------------------------------------------


@SETTINGS
@given(
    tokens=st.lists(st.integers(0, 100), min_size=4, max_size=4),
    budget=st.integers(0, 120),
)
def test_depth_fallback_packs_the_deepest_rendering_that_fits(
    tokens: list[int], budget: int
) -> None:
    renderings = [frag("n", depth, t) for depth, t in zip(DEPTHS[::-1], tokens, strict=True)]
    result = FusionEngine(packer=GreedyKnapsackPacker(min_fragment_tokens=0)).fuse(
        renderings, budget
    )
    fitting = [f.detail_depth for f in renderings if f.token_count <= budget]
    if not fitting:
        assert result.fragments == []
    else:
        assert [f.detail_depth for f in result.fragments] == [max(fitting)]
        if max(fitting) < 9:
            assert result.fallbacks == {"n": (9, max(fitting))}


# ---- the engine's shortcut -----------------------------------------------------------------


class _Dedup(ContentHashDedup): ...


class _Resolver(MaxDepthResolver): ...


class _Scorer(WeightedCompositeScorer): ...


class _Packer(GreedyKnapsackPacker): ...


@SETTINGS
@given(items=fragments(), ranked=rankings(), budget=st.integers(0, 300), with_sources=st.booleans())
def test_the_engine_shortcut_equals_calling_each_component(
    items: list[ContextFragment],
    ranked: tuple[dict[str, dict[str, int]], dict[str, float]],
    budget: int,
    with_sources: bool,
) -> None:
    ranks, quality = ranked
    sources: dict[str, list[str]] | None = None
    if with_sources:
        sources = {}
        for name, ranking in ranks.items():
            for node in ranking:
                sources.setdefault(node, []).append(name)
    protocol_route = FusionEngine(
        deduplicator=_Dedup(), resolver=_Resolver(), scorer=_Scorer(), packer=_Packer()
    )
    shortcut = FusionEngine().fuse(items, budget, sources=sources, ranks=ranks, quality=quality)
    assert shortcut == protocol_route.fuse(
        items, budget, sources=sources, ranks=ranks, quality=quality
    )
