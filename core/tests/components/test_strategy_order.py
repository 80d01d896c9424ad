"""``in_strategy_order``: a result's fragments in the order its strategy returned them."""

from __future__ import annotations

from contextfuse.components.coordination.result import in_strategy_order
from contextfuse.models import ContextFragment, ContextStrategyResult, FragmentProvenance


def frag(node: str, relevance: float) -> ContextFragment:
    return ContextFragment(
        uko_node=node,
        content=f"content of {node}",
        token_count=5,
        relevance_score=relevance,
        provenance=FragmentProvenance(resource_uri=node),
    )


def result(fragments: list[ContextFragment], **stats: object) -> ContextStrategyResult:
    return ContextStrategyResult(strategy_name="s", fragments=tuple(fragments), stats=stats)


def test_the_fragments_come_back_in_the_recorded_fragment_order_not_by_relevance() -> None:
    returned = [frag("a", 0.1), frag("b", 0.9), frag("c", 0.5)]
    order = [f.fragment_id for f in returned]

    assert in_strategy_order(result(returned, fragment_order=order)) == returned


def test_an_order_that_misses_a_fragment_falls_back_to_the_rank_order() -> None:
    returned = [frag("a", 0.1), frag("b", 0.9), frag("c", 0.5)]
    order = [returned[0].fragment_id, returned[0].fragment_id, returned[2].fragment_id]

    ordered = in_strategy_order(result(returned, fragment_order=order, rank_order=["c", "a", "b"]))

    assert [f.uko_node for f in ordered] == ["c", "a", "b"]


def test_without_any_order_the_fragments_stay_as_the_result_holds_them() -> None:
    held = result([frag("a", 0.1), frag("b", 0.9)])

    assert in_strategy_order(held) == list(held.fragments)
