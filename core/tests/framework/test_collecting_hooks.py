"""Collecting hooks are called once through pm.hook; each item is attributed to its plugin."""

from __future__ import annotations

import logging

import pytest

from contextfuse import ACMSPipeline, ContextBudget
from contextfuse.compaction import collect_providers
from contextfuse.errors import PluginLoadError
from contextfuse.hookspecs import COLLECTING_HOOKS
from contextfuse.plugin import StrategyCapabilities, hookimpl
from contextfuse.stores import backend_providers


class Item:
    """Something a plugin contributes: a strategy, a provider, a tokenizer, a command."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.capabilities = StrategyCapabilities(uses_text=True, resource_types=("code",))
        self.provides = frozenset({"text"})

    def can_handle(self, request, backends):
        return 0.5

    def assemble(self, request, backends, budget, plan_context):
        return []

    def explain(self):
        return self.name

    def complete(self, call):
        raise NotImplementedError


def registering(hook_name: str, *items: Item) -> object:
    """A plugin of the new form: it calls register() for each item."""

    def implementation(register):
        for item in items:
            register(item)

    return type("Registering", (), {hook_name: staticmethod(hookimpl(implementation))})()


def returning(hook_name: str, *items: Item) -> object:
    """A plugin of the older form: it returns a list and takes no argument."""

    def implementation():
        return list(items)

    return type("Returning", (), {hook_name: staticmethod(hookimpl(implementation))})()


class Wrapper:
    """A wrapper=True implementation that counts its calls and keeps what it saw."""

    def __init__(self, hook_name: str) -> None:
        self.calls = 0
        self.seen: list[object] = []

        def implementation():
            self.calls += 1
            results = yield
            self.seen.extend(item for result in results for item in result)
            return results

        setattr(self, hook_name, hookimpl(wrapper=True)(implementation))


@pytest.mark.parametrize("hook_name", COLLECTING_HOOKS)
def test_a_wrapper_on_a_collecting_hook_runs_once_and_sees_every_plugins_items(pm, hook_name):
    new, old = Item("new-form"), Item("old-form")
    wrapper = Wrapper(hook_name)
    pm.register_plugin(wrapper, "wrapper")
    pm.register_plugin(registering(hook_name, new), "new")
    pm.register_plugin(returning(hook_name, old), "old")
    pm.collect(hook_name)
    assert wrapper.calls == 1
    assert new in wrapper.seen and old in wrapper.seen


@pytest.mark.parametrize("hook_name", COLLECTING_HOOKS)
def test_each_collected_item_is_attributed_to_the_plugin_that_gave_it(pm, hook_name):
    pm.register_plugin(registering(hook_name, Item("one"), Item("two")), "new")
    pm.register_plugin(returning(hook_name, Item("three")), "old")
    owners = {c.item.name: c.plugin for c in pm.collect(hook_name) if isinstance(c.item, Item)}
    assert owners == {"one": "new", "two": "new", "three": "old"}


def test_the_registry_collects_strategies_in_one_call_a_wrapper_sees_once(pm):
    wrapper = Wrapper("contextfuse_strategies")
    pm.register_plugin(wrapper, "wrapper")
    pm.register_plugin(registering("contextfuse_strategies", Item("a")), "a")
    pm.register_plugin(returning("contextfuse_strategies", Item("b")), "b")
    sources = {s.strategy.name: s.plugin for s in pm.strategy_sources()}
    assert wrapper.calls == 1
    assert (
        sources["a"] == "a"
        and sources["b"] == "b"
        and sources["relevance"] == ("contextfuse.defaults")
    )


def test_a_strategy_a_wrapper_adds_is_attributed_to_the_wrapper(pm):
    class Adding:
        @hookimpl(wrapper=True)
        def contextfuse_strategies(self):
            results = yield
            return [*results, [Item("added")]]

    pm.register_plugin(Adding(), "adding")
    sources = {s.strategy.name: s.plugin for s in pm.strategy_sources()}
    assert sources["added"] == "adding"


def test_a_wrapper_can_remove_a_plugins_strategy(pm):
    class Removing:
        @hookimpl(wrapper=True)
        def contextfuse_strategies(self):
            results = yield
            return [[s for s in result if s.name != "recency"] for result in results]

    pm.register_plugin(Removing(), "removing")
    assert "recency" not in {s.strategy.name for s in pm.strategy_sources()}


def test_a_strategy_name_taken_by_another_plugin_is_refused_naming_both(pm):
    pm.register_plugin(registering("contextfuse_strategies", Item("same")), "first")
    with pytest.raises(PluginLoadError, match="'same' is already provided by plugin 'first'"):
        pm.register_plugin(returning("contextfuse_strategies", Item("same")), "second")
    assert not pm.has_plugin("second")


def test_an_implementation_returning_a_single_object_is_refused_naming_the_plugin(pm):
    class Single:
        @hookimpl
        def contextfuse_strategies(self):
            return Item("lonely")

    with pytest.raises(PluginLoadError, match="'single'.*register\\(item\\) or return a seq"):
        pm.register_plugin(Single(), "single")


def test_a_plugins_backend_provider_wins_over_the_cores_of_that_name_which_is_noted(pm, caplog):
    shadow = Item("sqlite")
    pm.register_plugin(returning("contextfuse_backend_providers", shadow), "shadow")
    with caplog.at_level(logging.WARNING):
        providers = backend_providers(pm)
    assert providers["sqlite"] is shadow
    assert "'sqlite' of plugin contextfuse.defaults ignored" in caplog.text


def test_a_model_provider_name_taken_twice_is_an_error_naming_the_plugin(pm):
    pm.register_plugin(registering("contextfuse_model_providers", Item("offline")), "clash")
    with pytest.raises(Exception, match="'offline' from plugin 'clash' is already taken"):
        collect_providers(pm)


def test_a_wrapper_on_the_observer_hook_runs_once_per_assembly(pm, make_fragment):
    calls: list[str] = []

    class Observer:
        @hookimpl
        def contextfuse_assembly_finished(self):
            calls.append("observer")

    class Wrapping:
        @hookimpl(wrapper=True)
        def contextfuse_assembly_finished(self):
            calls.append("wrapper")
            return (yield)

    pm.register_plugin(Observer(), "observer")
    pm.register_plugin(Observer(), "observer-2")
    pm.register_plugin(Wrapping(), "wrapping")
    ACMSPipeline(plugin_manager=pm).assemble(
        "p", [make_fragment()], ContextBudget(max_tokens=50, reserved_tokens=0)
    )
    assert calls == ["wrapper", "observer", "observer"]


def test_a_failing_observer_is_logged_with_its_plugins_name(pm, caplog):
    class Failing:
        @hookimpl
        def contextfuse_assembly_finished(self):
            raise RuntimeError("observer bug")

    pm.register_plugin(Failing(), "failing-observer")
    with caplog.at_level(logging.ERROR):
        failures = pm.notify("contextfuse_assembly_finished", request=None, payload=None)
    assert [f.plugin for f in failures] == ["failing-observer"]
    assert "observer failing-observer failed" in caplog.text


def test_a_direct_pm_hook_call_of_an_older_form_implementation_still_works(pm):
    pm.register_plugin(returning("contextfuse_tokenizers", Item("direct")), "old")
    results = pm.hook.contextfuse_tokenizers(register=lambda item: None)
    assert any(getattr(item, "name", "") == "direct" for result in results for item in result)


def test_a_plain_pluggy_manager_collects_both_forms_without_knowing_the_plugins():
    import pluggy

    from contextfuse import hookspecs
    from contextfuse.hookcalls import collect

    plain = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    plain.add_hookspecs(hookspecs)
    new, old = Item("new-form"), Item("old-form")
    plain.register(registering("contextfuse_tokenizers", new))
    plain.register(returning("contextfuse_tokenizers", old))
    assert {c.item for c in collect(plain, "contextfuse_tokenizers")} == {new, old}


def test_a_strategy_name_given_twice_by_plugins_registered_without_validation_is_an_error(pm):
    from contextfuse.errors import StrategyRegistrationError

    pm.register(registering("contextfuse_strategies", Item("twice")), "one")
    pm.register(returning("contextfuse_strategies", Item("twice")), "two")
    with pytest.raises(StrategyRegistrationError, match="'twice' is provided by plugins"):
        pm.strategy_sources()


def test_an_unregistered_plugins_strategy_names_are_free_again(pm):
    first = registering("contextfuse_strategies", Item("mine"))
    pm.register_plugin(first, "first")
    pm.unregister(first)
    pm.register_plugin(returning("contextfuse_strategies", Item("mine")), "second")
    assert {s.strategy.name: s.plugin for s in pm.strategy_sources()}["mine"] == "second"
