"""Several ranking strategies: a node is scored as the best strategy that found it scored it."""

from __future__ import annotations

from contextfuse.components.fusion import ContentHashDedup, WeightedCompositeScorer
from contextfuse.components.relevance_record import (
    STRATEGY_RELEVANCE,
    parse_strategy_relevance,
    record_strategy_relevance,
)
from contextfuse.models import ContextFragment, FragmentProvenance, PlanContext

QUALITY = {"strong": 0.9, "weak": 0.4}


def candidate(node: str, strategy: str, relevance: float) -> ContextFragment:
    return ContextFragment(
        uko_node=node,
        content=f"def {node.rsplit('#', 1)[-1]}(): ...",
        detail_depth=9,
        token_count=20,
        relevance_score=relevance,
        provenance=FragmentProvenance(resource_uri=node.split("#", 1)[0]),
        metadata={"strategy": strategy, "role": "candidate"},
    )


def test_a_node_one_strategy_found_records_nothing() -> None:
    fragments = [candidate("project://p/a.py#f", "strong", 0.7)]
    assert STRATEGY_RELEVANCE not in record_strategy_relevance(fragments)[0].metadata


def test_a_node_several_strategies_found_records_each_ones_relevance() -> None:
    fragments = [
        candidate("project://p/a.py#f", "strong", 0.3),
        candidate("project://p/a.py#f", "weak", 1.0),
    ]
    recorded = record_strategy_relevance(fragments)
    assert [parse_strategy_relevance(f.metadata[STRATEGY_RELEVANCE]) for f in recorded] == [
        {"strong": 0.3, "weak": 1.0}
    ] * 2


def test_a_weaker_strategys_best_does_not_pass_what_the_best_strategy_ranked_above_it() -> None:
    shared, own = "project://p/a.py#shared", "project://p/b.py#own"
    gathered = record_strategy_relevance(
        [
            candidate(own, "strong", 0.6),
            candidate(shared, "strong", 0.3),
            candidate(shared, "weak", 1.0),
        ]
    )
    kept = ContentHashDedup().deduplicate(gathered)
    assert [f.metadata["strategy"] for f in kept if f.uko_node == shared] == ["weak"]
    scored = WeightedCompositeScorer().score(
        kept,
        PlanContext(),
        sources={own: ["strong"], shared: ["strong", "weak"]},
        ranks={"strong": {own: 0, shared: 1}, "weak": {shared: 0}},
        quality=QUALITY,
    )
    best_first = sorted(scored, key=lambda s: -s.score)
    assert [s.fragment.uko_node for s in best_first] == [own, shared]
    assert best_first[1].components["relevance"] < 0.31
