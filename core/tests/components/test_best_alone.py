"""Fusion never loses to its best part: the best strategy's own payload is its floor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextfuse import ACMSPipeline, ContextBudget, ContextFragment, StrategyCapabilities
from contextfuse.components.best_alone import keep_best
from contextfuse.components.protocols import ScoredFragment
from contextfuse.models import FragmentProvenance
from contextfuse.plugin_manager import make_plugin_manager


def _fragment(
    uri: str, tokens: int = 100, location: str = "", depth: int = 9, kind: str = "code"
) -> ContextFragment:
    return ContextFragment(
        uko_node=uri,
        content=f"content of {uri}",
        token_count=tokens,
        detail_depth=depth,
        provenance=FragmentProvenance(
            resource_uri=uri.split("#")[0], location=location, resource_type=kind
        ),
    )


class Ranked:
    """Returns its fragments in order, as many as fit the budget it is given."""

    def __init__(
        self,
        name: str,
        quality: float,
        fragments: Sequence[ContextFragment],
        kinds: tuple[str, ...] = ("code",),
    ) -> None:
        self.name = name
        self.capabilities = StrategyCapabilities(
            uses_text=True, resource_types=kinds, quality_score=quality
        )
        self._fragments = list(fragments)

    def can_handle(self, request: Any, backends: Any) -> float:
        return 0.5

    def assemble(self, request: Any, backends: Any, budget: Any, plan_context: Any) -> list:
        out, used = [], 0
        for fragment in self._fragments:
            if used + fragment.token_count <= budget.available_tokens:
                out.append(fragment)
                used += fragment.token_count
        return out

    def explain(self) -> str:
        return self.name


def test_two_strategies_that_agree_leave_no_budget_stranded() -> None:
    shared = [_fragment(f"project://p/f{i}.py") for i in range(30)]
    budget = ContextBudget(max_tokens=2000, reserved_tokens=0)
    with ACMSPipeline(plugin_manager=make_plugin_manager(autoload=False)) as pipeline:
        pipeline.register_strategy("good", Ranked("good", 0.9, shared))
        pipeline.register_strategy("echo", Ranked("echo", 0.3, shared))
        payload = pipeline.run(
            "q", {"text": True}, budget, strategies=["good", "echo"], preamble=False
        )
    assert payload.total_tokens >= 0.9 * budget.available_tokens


def _run(budget: int, *strategies: Ranked) -> list[str]:
    with ACMSPipeline(plugin_manager=make_plugin_manager(autoload=False)) as pipeline:
        for strategy in strategies:
            pipeline.register_strategy(strategy.name, strategy)
        payload = pipeline.run(
            "q",
            {"text": True},
            ContextBudget(max_tokens=budget, reserved_tokens=0),
            strategies=[s.name for s in strategies],
            preamble=False,
        )
    return [f.uko_node for f in payload.fragments]


def test_the_fused_payload_holds_everything_the_best_strategy_shows_alone() -> None:
    good = Ranked("good", 0.9, [_fragment(f"project://p/g{i}.py") for i in range(30)])
    other = Ranked("other", 0.5, [_fragment(f"project://p/o{i}.py") for i in range(30)])
    alone = _run(2000, good)
    fused = _run(2000, good, other)
    assert set(alone) <= set(fused)


def test_fragments_of_kinds_only_another_strategy_serves_keep_their_place() -> None:
    good = Ranked("good", 0.9, [_fragment(f"project://p/g{i}.py") for i in range(30)])
    plans = Ranked(
        "plans", 0.5, [_fragment("plan://p/1", kind="plan", location="")], kinds=("plan",)
    )
    assert "plan://p/1" in _run(2000, good, plans)


def test_a_fused_fragment_of_the_same_node_keeps_its_fused_score() -> None:
    agreed = ScoredFragment(_fragment("project://p/a.py#f"), 0.8, {"agreement": 1.0}, ("x", "y"))
    result = keep_best([agreed], [_fragment("project://p/a.py#f")], [], 500, "x")
    assert result == [agreed]


def test_what_the_best_strategy_leaves_goes_to_new_fused_fragments_best_first() -> None:
    fused = [
        ScoredFragment(_fragment("project://p/a.py", location="L1-L40"), 0.9),
        ScoredFragment(_fragment("project://p/b.py#g", location="L3-L9"), 0.5),
        ScoredFragment(_fragment("project://p/c.py#h", location="L1-L2"), 0.7),
    ]
    alone = [_fragment("project://p/a.py#f", location="L1-L10")]
    result = keep_best(fused, alone, [], 300, "good")
    assert [s.fragment.uko_node for s in result] == [
        "project://p/a.py#f",
        "project://p/c.py#h",
        "project://p/b.py#g",
    ]
    assert result[0].components == {"best_alone": 1.0}


def test_keep_best_never_exceeds_the_budget_it_is_given() -> None:
    fused = [ScoredFragment(_fragment(f"project://p/f{i}.py", tokens=70), 0.5) for i in range(5)]
    alone = [_fragment(f"project://p/{i}.py", tokens=70) for i in range(10)]
    result = keep_best(fused, alone, [], 200, "good")
    assert sum(s.token_count for s in result) <= 200
