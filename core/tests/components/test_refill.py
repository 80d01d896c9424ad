"""Refill: budget that several strategies leave unspent goes to the best one's next picks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextfuse import ACMSPipeline, ContextBudget, ContextFragment, StrategyCapabilities
from contextfuse.components.protocols import ScoredFragment
from contextfuse.components.refill import refill
from contextfuse.models import FragmentProvenance
from contextfuse.plugins import make_plugin_manager


def _fragment(uri: str, tokens: int = 100, location: str = "", depth: int = 9) -> ContextFragment:
    return ContextFragment(
        uko_node=uri,
        content=f"content of {uri}",
        token_count=tokens,
        detail_depth=depth,
        provenance=FragmentProvenance(resource_uri=uri.split("#")[0], location=location),
    )


class Ranked:
    """Returns its fragments in order, as many as fit the budget it is given."""

    def __init__(self, name: str, quality: float, fragments: Sequence[ContextFragment]) -> None:
        self.name = name
        self.capabilities = StrategyCapabilities(
            uses_text=True, resource_types=("code",), quality_score=quality
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


def test_refill_follows_the_strategys_order_and_skips_what_is_shown() -> None:
    chosen = [ScoredFragment(_fragment("project://p/a.py#f", location="L1-L10"), 0.5)]
    candidates = [
        _fragment("project://p/a.py#f", location="L1-L10"),
        _fragment("project://p/a.py", location="L1-L40"),
        _fragment("project://p/b.py#g", location="L3-L9"),
        _fragment("project://p/c.py#h", location="L1-L2"),
    ]
    added = refill(chosen, candidates, room=200, strategy="good")
    assert [s.fragment.uko_node for s in added] == ["project://p/b.py#g", "project://p/c.py#h"]
    assert all(s.score < 0.5 and s.components == {"refill": 1.0} for s in added)


def test_refill_never_exceeds_the_room_it_is_given() -> None:
    candidates = [_fragment(f"project://p/{i}.py", tokens=70) for i in range(10)]
    added = refill([], candidates, room=200, strategy="good")
    assert sum(s.fragment.token_count for s in added) <= 200
