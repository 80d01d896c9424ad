"""The plugin manager: registration, validation, strategies and component slots."""

from __future__ import annotations

import pytest

from contextfuse import StrategyCapabilities, hookimpl
from contextfuse.errors import PluginConflictError, PluginLoadError
from contextfuse.hookspecs import COMPONENT_HOOKS
from contextfuse.plugin_manager import DEFAULTS_PLUGIN_NAME, make_plugin_manager


class Strategy:
    def __init__(self, name="mine", caps=None):
        self.name = name
        self.capabilities = caps or StrategyCapabilities(uses_text=True, resource_types=("code",))

    def can_handle(self, request, backends):
        return 0.5

    def assemble(self, request, backends, budget, plan_context):
        return []

    def explain(self):
        return "test strategy"


def strategy_plugin(*strategies):
    class Plugin:
        @hookimpl
        def contextfuse_strategies(self):
            return list(strategies)

    return Plugin()


def scorer_plugin():
    class Plugin:
        @hookimpl
        def contextfuse_fragment_scorer(self, config):
            return object()

    return Plugin()


def test_a_fresh_manager_holds_only_the_core_defaults(pm):
    assert [p.name for p in pm.loaded] == [DEFAULTS_PLUGIN_NAME]


def test_the_core_defaults_fill_every_component_slot(pm):
    assert pm.slot_table() == {slot: DEFAULTS_PLUGIN_NAME for slot in COMPONENT_HOOKS}


def test_the_core_provides_the_three_ranking_strategies(pm):
    assert {s.strategy.name for s in pm.strategy_sources()} == {"relevance", "recency", "tiered"}


def test_a_plugin_registered_in_code_contributes_its_strategy(pm):
    pm.register_plugin(strategy_plugin(Strategy("mine")), "mine-plugin")
    assert ("mine", "mine-plugin") in {(s.strategy.name, s.plugin) for s in pm.strategy_sources()}


def test_a_duplicate_strategy_name_is_rejected_naming_both_plugins(pm):
    pm.register_plugin(strategy_plugin(Strategy("twin")), "first")
    with pytest.raises(PluginLoadError, match="'twin' is already provided by plugin 'first'"):
        pm.register_plugin(strategy_plugin(Strategy("twin")), "second")
    assert not pm.has_plugin("second")


def test_a_strategy_without_backend_capability_is_rejected_by_rule_two(pm):
    bad = Strategy("nobackend", StrategyCapabilities(resource_types=("code",)))
    with pytest.raises(PluginLoadError, match="rule 2"):
        pm.register_plugin(strategy_plugin(bad), "bad")


def test_a_strategy_without_resource_types_is_rejected_by_rule_three(pm):
    bad = Strategy("notypes", StrategyCapabilities(uses_text=True))
    with pytest.raises(PluginLoadError, match="rule 3"):
        pm.register_plugin(strategy_plugin(bad), "bad")


def test_a_hook_implementation_with_an_unknown_argument_is_rejected(pm):
    class Plugin:
        @hookimpl
        def contextfuse_fragment_scorer(self, config, colour):
            return None

    with pytest.raises(PluginLoadError, match="(?s)bad hook implementation.*colour"):
        pm.register_plugin(Plugin(), "wrong-signature")


def test_an_unknown_hook_is_rejected(pm):
    class Plugin:
        @hookimpl
        def contextfuse_strategys(self):
            return []

    with pytest.raises(PluginLoadError, match="unknown hook.*contextfuse_strategys"):
        pm.register_plugin(Plugin(), "typo")


def test_a_duplicate_plugin_name_is_rejected(pm):
    pm.register_plugin(strategy_plugin(), "same")
    with pytest.raises(PluginLoadError, match="duplicate plugin name"):
        pm.register_plugin(strategy_plugin(), "same")


def test_a_plugin_component_wins_over_the_default(pm):
    pm.register_plugin(scorer_plugin(), "acme-scorer")
    assert pm.component_provider("fragment_scorer") == "acme-scorer"


def test_two_plugins_filling_one_slot_are_a_conflict(pm):
    pm.register_plugin(scorer_plugin(), "acme-scorer")
    pm.register_plugin(scorer_plugin(), "other-scorer")
    with pytest.raises(PluginConflictError, match=r"\[components\] fragment_scorer"):
        pm.component_provider("fragment_scorer")


def test_a_pin_settles_a_conflict():
    pm = make_plugin_manager(autoload=False, component_pins={"fragment_scorer": "other-scorer"})
    pm.register_plugin(scorer_plugin(), "acme-scorer")
    pm.register_plugin(scorer_plugin(), "other-scorer")
    assert pm.component_provider("fragment_scorer") == "other-scorer"


def test_a_pin_to_a_plugin_that_does_not_fill_the_slot_is_an_error():
    pm = make_plugin_manager(autoload=False, component_pins={"fragment_scorer": "ghost"})
    with pytest.raises(PluginConflictError, match="'ghost', which does not implement it"):
        pm.component_provider("fragment_scorer")


def test_the_slot_table_reports_a_conflict_instead_of_raising(pm):
    pm.register_plugin(scorer_plugin(), "acme-scorer")
    pm.register_plugin(scorer_plugin(), "other-scorer")
    assert pm.slot_table()["fragment_scorer"].startswith("CONFLICT")


def test_autoload_can_be_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("CONTEXTFUSE_PLUGIN_AUTOLOAD", "0")
    assert [p.name for p in make_plugin_manager().loaded] == [DEFAULTS_PLUGIN_NAME]
