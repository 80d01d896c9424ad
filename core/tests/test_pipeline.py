"""ACMSPipeline: the three phases, component replacement, and the seeds' promises."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from contextfuse import (
    ACMSPipeline,
    BackendSet,
    ContextBudget,
    ContextRequest,
    StrategyCapabilities,
    hookimpl,
)
from contextfuse.backends import FragmentBackend
from contextfuse.components.protocols import COMPONENT_NAMES
from contextfuse.errors import UnknownStrategyError
from contextfuse.plugin_manager import make_plugin_manager

BUDGET = ContextBudget(max_tokens=2048, reserved_tokens=256)


def spec_fragments(make_fragment):
    return [
        make_fragment(
            "project://myapp/src/main.py", token_count=100, relevance_score=0.9, tier="hot"
        ),
        make_fragment("project://myapp/decisions/001", token_count=50, relevance_score=0.7),
        make_fragment(
            "project://myapp/README.md", token_count=200, relevance_score=0.3, tier="cold"
        ),
    ]


class Recorder:
    """Wraps a component and records that its protocol method was called."""

    def __init__(self, inner: Any, method: str) -> None:
        self.inner, self.method, self.calls = inner, method, 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name != self.method:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return attr(*args, **kwargs)

        return call


METHOD = {
    "strategy_selector": "select",
    "budget_allocator": "allocate",
    "strategy_executor": "execute",
    "fragment_deduplicator": "deduplicate",
    "detail_depth_resolver": "resolve",
    "fragment_scorer": "score",
    "budget_packer": "pack",
    "fragment_orderer": "order",
    "preamble_generator": "generate",
    "skeleton_compressor": "compress",
}


def default_component(slot):
    return make_plugin_manager(autoload=False).make_component(slot, {})


def exercise(pipeline, make_fragment):
    """A run that reaches every component (preamble on, a focus node set)."""
    fragments = spec_fragments(make_fragment)
    request = ContextRequest(query="q", focus_nodes=("project://myapp/src/main.py",))
    return pipeline.run(
        request,
        BackendSet(fragments=FragmentBackend(fragments)),
        BUDGET,
        strategies=["relevance"],
        preamble=True,
    )


@pytest.mark.parametrize("slot", COMPONENT_NAMES)
def test_each_component_can_be_replaced_through_the_constructor(slot, pm, make_fragment):
    recorder = Recorder(default_component(slot), METHOD[slot])
    pipeline = ACMSPipeline(plugin_manager=pm, **{slot: recorder})
    exercise(pipeline, make_fragment)
    assert pipeline.component(slot) is recorder and recorder.calls >= 1


@pytest.mark.parametrize("slot", COMPONENT_NAMES)
def test_each_component_can_be_replaced_through_its_hook(slot, pm, make_fragment):
    recorder = Recorder(default_component(slot), METHOD[slot])
    plugin = type("Plugin", (), {f"contextfuse_{slot}": hookimpl(lambda self, config: recorder)})
    pm.register_plugin(plugin(), f"acme-{slot}")
    pipeline = ACMSPipeline(plugin_manager=pm)
    exercise(pipeline, make_fragment)
    assert pipeline.component(slot) is recorder and recorder.calls >= 1


def test_a_constructor_component_wins_over_a_plugin_component(pm):
    from_plugin, from_caller = (
        default_component("fragment_scorer"),
        default_component("fragment_scorer"),
    )
    plugin = type(
        "Plugin", (), {"contextfuse_fragment_scorer": hookimpl(lambda self, config: from_plugin)}
    )
    pm.register_plugin(plugin(), "acme")
    pipeline = ACMSPipeline(plugin_manager=pm, fragment_scorer=from_caller)
    assert pipeline.component("fragment_scorer") is from_caller


def test_the_spec_example_gives_three_fragments_and_350_tokens(pm, make_fragment):
    payload = ACMSPipeline(plugin_manager=pm).assemble(
        "plan-1", spec_fragments(make_fragment), BUDGET
    )
    assert len(payload.fragments) == 3 and payload.total_tokens == 350
    assert payload.is_within_budget and payload.strategies_used == ("relevance",)
    assert payload.preamble is None and payload.preamble_tokens == 0


def test_recency_still_selects_the_most_recent_first(pm, make_fragment):
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    fragments = [
        make_fragment(
            f"n{i}", token_count=40, relevance_score=r, created_at=now - timedelta(days=i)
        )
        for i, r in enumerate([0.1, 0.5, 0.9])
    ]
    payload = ACMSPipeline(plugin_manager=pm).assemble(
        "p", fragments, ContextBudget(max_tokens=80, reserved_tokens=0), strategy="recency"
    )
    assert [f.uko_node for f in payload.fragments] == ["n0", "n1"]


def test_tiered_puts_hot_before_warm_before_cold(pm, make_fragment):
    fragments = [
        make_fragment("cold", tier="cold", relevance_score=1.0),
        make_fragment("warm", tier="warm", relevance_score=0.5),
        make_fragment("hot", tier="hot", relevance_score=0.1),
    ]
    payload = ACMSPipeline(plugin_manager=pm).assemble(
        "p", fragments, ContextBudget(max_tokens=100, reserved_tokens=0), strategy="tiered"
    )
    assert [f.uko_node for f in payload.fragments] == ["hot", "warm", "cold"]


def test_fragments_that_would_overflow_are_skipped(pm, make_fragment):
    fragments = [
        make_fragment("big", token_count=90, relevance_score=0.9),
        make_fragment("huge", token_count=500, relevance_score=0.8),
        make_fragment("small", token_count=10, relevance_score=0.1),
    ]
    payload = ACMSPipeline(plugin_manager=pm).assemble(
        "p", fragments, ContextBudget(max_tokens=100, reserved_tokens=0)
    )
    assert [f.uko_node for f in payload.fragments] == ["big", "small"]
    assert payload.total_tokens == 100


def test_an_unknown_strategy_names_it_and_lists_the_known_ones(pm, make_fragment):
    with pytest.raises(UnknownStrategyError, match="'nope'.*recency, relevance, tiered"):
        ACMSPipeline(plugin_manager=pm).assemble("p", [make_fragment()], BUDGET, strategy="nope")


def test_a_v1_strategy_works_unchanged(pm, make_fragment):
    class MyCustomStrategy:
        @property
        def name(self):
            return "custom"

        @property
        def capabilities(self):
            return StrategyCapabilities()

        def can_handle(self, request: dict[str, Any]) -> float:
            return 0.5

        def assemble(self, fragments, budget):
            return list(reversed(fragments))

        def explain(self):
            return "Custom strategy description."

    pipeline = ACMSPipeline(plugin_manager=pm)
    pipeline.register_strategy("custom", MyCustomStrategy())
    fragments = [make_fragment("a"), make_fragment("b")]
    payload = pipeline.assemble(
        plan_id="plan-1", fragments=fragments, budget=BUDGET, strategy="custom"
    )
    assert [f.uko_node for f in payload.fragments] == ["b", "a"]
    assert payload.strategies_used == ("custom",)


def test_a_preamble_is_counted_in_the_budget_and_reported(pm, make_fragment):
    payload = ACMSPipeline(plugin_manager=pm).assemble(
        "p", spec_fragments(make_fragment), BUDGET, preamble=True
    )
    assert payload.preamble and payload.preamble_tokens > 0
    assert payload.total_tokens == sum(f.token_count for f in payload.fragments)
    assert payload.total_tokens + payload.preamble_tokens <= BUDGET.available_tokens


def test_the_same_input_gives_the_same_hash(pm, make_fragment):
    fragments = spec_fragments(make_fragment)
    pipeline = ACMSPipeline(plugin_manager=pm)
    assert (
        pipeline.assemble("p", fragments, BUDGET).context_hash
        == pipeline.assemble("p", fragments, BUDGET).context_hash
    )


def test_an_observer_sees_every_finished_assembly(pm, make_fragment):
    seen = []

    class Observer:
        @hookimpl
        def contextfuse_assembly_finished(self, request, payload):
            seen.append(payload.total_tokens)

    pm.register_plugin(Observer(), "observer")
    ACMSPipeline(plugin_manager=pm).assemble("p", spec_fragments(make_fragment), BUDGET)
    assert seen == [350]


def test_a_failing_observer_does_not_affect_the_payload(pm, make_fragment):
    class Broken:
        @hookimpl
        def contextfuse_assembly_finished(self, payload):
            raise RuntimeError("observer bug")

    pm.register_plugin(Broken(), "broken-observer")
    payload = ACMSPipeline(plugin_manager=pm).assemble("p", spec_fragments(make_fragment), BUDGET)
    assert payload.total_tokens == 350
