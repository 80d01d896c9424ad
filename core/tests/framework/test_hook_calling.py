"""pluggy calls every hook: wrappers, tryfirst/trylast, pins and tracing work."""

from __future__ import annotations

from contextfuse import ACMSPipeline, ContextBudget
from contextfuse.plugin import SLOTS, hookimpl
from contextfuse.plugin_manager import TRACE_ENV, make_plugin_manager


class CountingScorer:
    def __init__(self, inner):
        self.inner = inner
        self.calls = 0

    def score(self, fragments, plan_context, **kwargs):
        self.calls += 1
        return self.inner.score(fragments, plan_context, **kwargs)


def test_a_wrapper_of_a_component_hook_replaces_the_built_component(pm):
    class Wrapping:
        @hookimpl(wrapper=True)
        def contextfuse_fragment_scorer(self, config):
            built = yield
            return CountingScorer(built)

    pm.register_plugin(Wrapping(), "wrapping")
    pipeline = ACMSPipeline(plugin_manager=pm)
    assert isinstance(pipeline.component("fragment_scorer"), CountingScorer)


def test_a_wrapped_component_is_what_the_pipeline_runs(pm, make_fragment):
    class Wrapping:
        @hookimpl(wrapper=True)
        def contextfuse_fragment_scorer(self, config):
            built = yield
            return CountingScorer(built)

    pm.register_plugin(Wrapping(), "wrapping")
    pipeline = ACMSPipeline(plugin_manager=pm)
    pipeline.assemble("p", [make_fragment()], ContextBudget(max_tokens=100, reserved_tokens=0))
    assert pipeline.component("fragment_scorer").calls == 1


def test_a_wrapper_is_not_a_conflicting_provider_of_its_slot(pm):
    class Wrapping:
        @hookimpl(wrapper=True)
        def contextfuse_budget_packer(self, config):
            return (yield)

    pm.register_plugin(Wrapping(), "wrapping")
    assert pm.slot_table()["budget_packer"] == "contextfuse.defaults"


def test_hook_call_monitoring_sees_every_component_hook_while_a_pipeline_is_built(pm):
    called: list[str] = []
    undo = pm.add_hookcall_monitoring(
        lambda name, impls, kwargs: called.append(name), lambda *args: None
    )
    try:
        ACMSPipeline(plugin_manager=pm)
    finally:
        undo()
    assert {s.hook for s in SLOTS} <= set(called)


def test_a_pinned_provider_answers_and_the_other_candidate_is_not_called(pm):
    asked: list[str] = []

    def provider(name):
        class Scorer:
            @hookimpl
            def contextfuse_fragment_scorer(self, config):
                asked.append(name)
                return CountingScorer(None)

        return Scorer()

    pm.register_plugin(provider("a"), "a")
    pm.register_plugin(provider("b"), "b")
    pm.component_pins["fragment_scorer"] = "b"
    ACMSPipeline(plugin_manager=pm)
    assert asked == ["b"]


def test_a_tryfirst_observer_is_notified_before_the_others(pm, make_fragment):
    order: list[str] = []

    class Late:
        @hookimpl
        def contextfuse_assembly_finished(self):
            order.append("late")

    class Early:
        @hookimpl(tryfirst=True)
        def contextfuse_assembly_finished(self):
            order.append("early")

    pm.register_plugin(Early(), "early")
    pm.register_plugin(Late(), "late")
    ACMSPipeline(plugin_manager=pm).assemble(
        "p", [make_fragment()], ContextBudget(max_tokens=50, reserved_tokens=0)
    )
    assert order == ["early", "late"]


def test_a_failing_observer_does_not_keep_the_others_from_being_notified(pm, make_fragment):
    seen: list[str] = []

    class Failing:
        @hookimpl(tryfirst=True)
        def contextfuse_assembly_finished(self):
            raise RuntimeError("observer bug")

    class Watching:
        @hookimpl
        def contextfuse_assembly_finished(self, payload):
            seen.append(payload.plan_id)

    pm.register_plugin(Failing(), "failing")
    pm.register_plugin(Watching(), "watching")
    ACMSPipeline(plugin_manager=pm).assemble(
        "p", [make_fragment()], ContextBudget(max_tokens=50, reserved_tokens=0)
    )
    assert seen == ["p"]


def test_the_trace_switch_prints_every_hook_call_on_standard_error(monkeypatch, capsys):
    monkeypatch.setenv(TRACE_ENV, "1")
    pm = make_plugin_manager(autoload=False)
    ACMSPipeline(plugin_manager=pm)
    err = capsys.readouterr().err
    assert "contextfuse_fragment_scorer" in err and "contextfuse_strategies" in err


def test_strategies_are_attributed_to_the_plugin_that_contributed_them(pm):
    sources = {s.strategy.name: s.plugin for s in pm.strategy_sources()}
    assert sources["relevance"] == "contextfuse.defaults"
