"""Specifications of the finalization defaults: reading order, preamble, skeleton."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfuse.components.finalize import (
    ORDER_MODES,
    ConfigurableOrderer,
    DepthSkeletonCompressor,
    StructurePreambleGenerator,
)
from contextfuse.components.protocols import (
    AssembledContext,
    FragmentOrderer,
    PreambleGenerator,
    ScoredFragment,
    SkeletonCompressor,
)
from contextfuse.models import ContextFragment, ContextRequest, FragmentProvenance
from contextfuse.tokenizer import default_tokenizer

REQUEST = ContextRequest()


def frag(
    node: str,
    *,
    depth: int = 9,
    tokens: int = 10,
    location: str = "",
    resource: str | None = None,
) -> ContextFragment:
    """A fragment of ``node`` (its file is the part before ``#`` unless ``resource``)."""
    return ContextFragment(
        uko_node=node,
        content=f"{node} @ {depth}",
        detail_depth=depth,
        token_count=tokens,
        provenance=FragmentProvenance(
            resource_uri=resource or node.split("#", 1)[0], location=location
        ),
    )


def scored(*items: tuple[ContextFragment, float]) -> list[ScoredFragment]:
    return [ScoredFragment(f, s) for f, s in items]


def names(items: Sequence[ScoredFragment] | Sequence[ContextFragment]) -> list[str]:
    return [i.fragment.uko_node if isinstance(i, ScoredFragment) else i.uko_node for i in items]


def test_defaults_implement_the_component_protocols() -> None:
    assert isinstance(ConfigurableOrderer(), FragmentOrderer)
    assert isinstance(StructurePreambleGenerator(), PreambleGenerator)
    assert isinstance(DepthSkeletonCompressor(), SkeletonCompressor)


# ---- ordering ------------------------------------------------------------------------------


def test_score_order_keeps_the_packed_order() -> None:
    items = scored((frag("b"), 0.2), (frag("a"), 0.9), (frag("c"), 0.5))
    assert names(ConfigurableOrderer("score").order(items, REQUEST)) == ["b", "a", "c"]


def test_file_order_groups_by_file_then_line_then_depth() -> None:
    items = scored(
        (frag("project://p/b.py#late", depth=4, location="L40-L50"), 0.9),
        (frag("project://p/a.py#f", depth=9, location="L10-L20"), 0.8),
        (frag("project://p/b.py#early", depth=9, location="L3-L9"), 0.7),
        (frag("project://p/b.py", depth=2), 0.6),
        (frag("project://p/a.py#g", depth=4, location="L10-L12"), 0.5),
    )
    assert names(ConfigurableOrderer("file").order(items, REQUEST)) == [
        "project://p/a.py#f",
        "project://p/a.py#g",
        "project://p/b.py",
        "project://p/b.py#early",
        "project://p/b.py#late",
    ]


def test_edges_order_puts_the_strongest_at_both_ends() -> None:
    items = scored(*((frag(n), s) for n, s in zip("abcde", (0.9, 0.8, 0.7, 0.6, 0.5), strict=True)))
    assert names(ConfigurableOrderer("edges").order(items, REQUEST)) == ["a", "c", "e", "d", "b"]


@settings(deadline=None, max_examples=50)
@given(scores=st.lists(st.floats(0.0, 1.0), max_size=12))
def test_every_mode_returns_the_same_fragments(scores: list[float]) -> None:
    items = scored(*((frag(f"n{i}"), s) for i, s in enumerate(scores)))
    for mode in ORDER_MODES:
        ordered = ConfigurableOrderer(mode).order(items, REQUEST)
        assert sorted(names(ordered)) == sorted(names(items))


def test_an_unknown_mode_is_rejected_naming_the_valid_modes() -> None:
    with pytest.raises(ValueError, match="score, file, edges"):
        ConfigurableOrderer("random")


# ---- preamble ------------------------------------------------------------------------------

INCLUDED = [
    frag("project://app/src/contextfuse/models.py", depth=9),
    frag("project://app/src/contextfuse/hashing.py#context_hash", depth=9),
    frag("project://app/src/contextfuse/hashing.py#content_digest", depth=4),
    frag("project://app/README.md", depth=2),
]
OMITTED = [
    frag("project://app/src/contextfuse/big.py", depth=9, tokens=900),
    frag("project://app/tests/test_big.py#case", depth=4, tokens=120),
]


def test_preamble_summarises_strategies_budget_tree_and_omitted_nodes() -> None:
    text = StructurePreambleGenerator().generate(
        INCLUDED, ["relevance", "recency"], 0.42, 500, OMITTED
    )
    assert "relevance, recency" in text and "42%" in text
    assert "- project://app" in text
    assert "src/contextfuse/" in text  # a single-child chain is compacted
    assert "hashing.py: content_digest [signatures], context_hash [full]" in text
    assert "README.md [outline]" in text
    assert "src/contextfuse/big.py [full, 900 tokens]" in text
    assert "tests/test_big.py#case [signatures, 120 tokens]" in text
    assert text.index("big.py") < text.index("test_big.py")  # best omitted first


def test_preamble_is_deterministic() -> None:
    generator = StructurePreambleGenerator()
    first = generator.generate(INCLUDED, ["relevance"], 0.5, 200, OMITTED)
    assert generator.generate(list(INCLUDED), ["relevance"], 0.5, 200, list(OMITTED)) == first


@settings(deadline=None, max_examples=60)
@given(max_tokens=st.integers(0, 160), extra=st.integers(0, 30))
def test_preamble_never_exceeds_its_token_budget(max_tokens: int, extra: int) -> None:
    included = INCLUDED + [frag(f"project://app/pkg/m{i}.py#f{i}", depth=4) for i in range(extra)]
    text = StructurePreambleGenerator().generate(
        included, ["relevance", "semantic-embedding"], 0.987, max_tokens, OMITTED * 4
    )
    assert default_tokenizer().count(text) <= max_tokens


def test_preamble_is_empty_when_even_the_header_does_not_fit() -> None:
    assert StructurePreambleGenerator().generate(INCLUDED, ["relevance"], 0.5, 5, OMITTED) == ""


def test_a_truncated_preamble_says_how_much_is_not_shown() -> None:
    included = [frag(f"project://app/pkg/m{i:02}.py") for i in range(40)]
    text = StructurePreambleGenerator().generate(included, ["relevance"], 0.5, 80, OMITTED)
    assert default_tokenizer().count(text) <= 80
    assert "more" in text.splitlines()[-1] or "Not included" in text
    assert "big.py" in text  # the best omitted node keeps its room


def test_preamble_budget_is_a_share_of_the_available_tokens() -> None:
    assert StructurePreambleGenerator(max_tokens_share=0.1).budget_for(4000) == 400
    with pytest.raises(ValueError, match="max_tokens_share"):
        StructurePreambleGenerator(max_tokens_share=1.5)


# ---- skeleton compression ------------------------------------------------------------------


def code_node(node: str, full: int = 100) -> tuple[ContextFragment, tuple[ContextFragment, ...]]:
    """A node rendered at full depth, with its signatures/outline/listing alternatives."""
    return frag(node, depth=9, tokens=full), (
        frag(node, depth=4, tokens=full // 4),
        frag(node, depth=2, tokens=full // 10),
        frag(node, depth=0, tokens=2),
    )


def parent(*nodes: tuple[ContextFragment, tuple[ContextFragment, ...]]) -> AssembledContext:
    return AssembledContext(
        fragments=tuple(f for f, _ in nodes), alternatives={f.uko_node: a for f, a in nodes}
    )


def test_skeleton_keeps_focus_nodes_at_full_depth() -> None:
    context = parent(code_node("project://p/a.py"), code_node("project://p/b.py"))
    child = DepthSkeletonCompressor().compress(context, ["project://p/b.py"], 0)
    assert [(f.uko_node, f.detail_depth) for f in child.fragments] == [("project://p/b.py", 9)]


def test_skeleton_treats_symbols_of_a_focus_file_as_focus() -> None:
    context = parent(code_node("project://p/a.py#f"), code_node("project://p/b.py#g"))
    child = DepthSkeletonCompressor().compress(context, ["project://p/a.py"], 0)
    assert [(f.uko_node, f.detail_depth) for f in child.fragments] == [("project://p/a.py#f", 9)]


def test_skeleton_compresses_the_rest_to_the_deepest_rendering_that_fits() -> None:
    context = parent(
        code_node("project://p/focus.py"),
        code_node("project://p/x.py", full=100),  # signatures 25, outline 10, listing 2
        code_node("project://p/y.py", full=100),
        code_node("project://p/z.py", full=100),
    )
    child = DepthSkeletonCompressor().compress(context, ["project://p/focus.py"], 37)
    assert [(f.uko_node, f.detail_depth) for f in child.fragments] == [
        ("project://p/focus.py", 9),
        ("project://p/x.py", 4),  # 25, 12 left
        ("project://p/y.py", 2),  # 10, 2 left
        ("project://p/z.py", 0),  # 2, 0 left
    ]
    assert [f.detail_depth for f in child.alternatives["project://p/x.py"]] == [9, 2, 0]


def test_skeleton_drops_a_node_when_not_even_its_listing_fits() -> None:
    context = parent(code_node("project://p/x.py"), code_node("project://p/y.py"))
    child = DepthSkeletonCompressor().compress(context, [], 2)
    assert [(f.uko_node, f.detail_depth) for f in child.fragments] == [("project://p/x.py", 0)]


def test_skeleton_upgrades_a_focus_node_to_its_deepest_known_rendering() -> None:
    shallow = frag("project://p/a.py", depth=4, tokens=25)
    deep = frag("project://p/a.py", depth=9, tokens=100)
    context = AssembledContext(fragments=(shallow,), alternatives={"project://p/a.py": (deep,)})
    child = DepthSkeletonCompressor().compress(context, ["project://p/a.py"], 0)
    assert child.fragments == (deep,)


@settings(deadline=None, max_examples=60)
@given(
    fulls=st.lists(st.integers(4, 400), min_size=1, max_size=8),
    focus=st.sets(st.integers(0, 7)),
    budget=st.integers(0, 300),
)
def test_skeleton_fits_its_budget_keeps_focus_deep_and_keeps_the_order(
    fulls: list[int], focus: set[int], budget: int
) -> None:
    nodes = [code_node(f"project://p/m{i}.py", full) for i, full in enumerate(fulls)]
    focus_nodes = [f"project://p/m{i}.py" for i in sorted(focus)]
    child = DepthSkeletonCompressor().compress(parent(*nodes), focus_nodes, budget)
    rest = [f for f in child.fragments if f.uko_node not in focus_nodes]
    assert sum(f.token_count for f in rest) <= budget
    assert all(f.detail_depth <= 4 for f in rest)
    kept_focus = [f for f in child.fragments if f.uko_node in focus_nodes]
    present = [f"project://p/m{i}.py" for i in sorted(focus) if i < len(fulls)]
    assert [f.uko_node for f in kept_focus] == present
    assert all(f.detail_depth == 9 for f in kept_focus)
    order = [f.uko_node for f, _ in nodes]
    assert [order.index(f.uko_node) for f in child.fragments] == sorted(
        order.index(f.uko_node) for f in child.fragments
    )
