"""The strategy registry's rules, errors and the fallback chain."""

from __future__ import annotations

import sys
import textwrap

import pytest

from contextfuse import BackendSet, ContextRequest, StrategyCapabilities, hookimpl
from contextfuse.config import ContextfuseConfig
from contextfuse.errors import ConfigError, UnknownStrategyError
from contextfuse.registry import StrategyRegistry


class Named:
    def __init__(self, name, **caps):
        self.name = name
        self.capabilities = StrategyCapabilities(resource_types=("code",), **caps)

    def can_handle(self, request, backends):
        return 0.5

    def assemble(self, request, backends, budget, plan_context):
        return []

    def explain(self):
        return self.name


def provide(pm, *strategies):
    class Plugin:
        @hookimpl
        def contextfuse_strategies(self):
            return list(strategies)

    pm.register_plugin(Plugin(), "test-strategies")


def config(**fields):
    return ContextfuseConfig(**fields)


def test_defaults_that_are_not_installed_are_skipped_with_a_notice(pm):
    provide(pm, Named("simple-keyword", uses_text=True))
    registry = StrategyRegistry(pm, config())
    assert [e.name for e in registry.entries() if e.enabled] == ["simple-keyword"]
    assert any("'semantic-embedding' is not installed" in n for n in registry.notices)


def test_an_enabled_strategy_that_nothing_provides_is_an_error_naming_it(pm):
    with pytest.raises(ConfigError, match="'ghost'.*rule 1"):
        StrategyRegistry(pm, config(enabled=("ghost",), enabled_source="config.toml"))


def test_a_custom_strategy_is_loaded_from_module_and_class(pm, tmp_path, monkeypatch):
    (tmp_path / "my_custom_mod.py").write_text(
        textwrap.dedent("""
        from contextfuse import StrategyCapabilities
        class Mine:
            name = "mine"
            capabilities = StrategyCapabilities(uses_text=True, resource_types=("code",))
            def can_handle(self, request, backends): return 0.5
            def assemble(self, request, backends, budget, plan_context): return []
            def explain(self): return "mine"
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = StrategyRegistry(
        pm, config(custom={"mine": "my_custom_mod:Mine"}, enabled=("mine",))
    )
    assert registry.get("mine").name == "mine"
    sys.modules.pop("my_custom_mod", None)


def test_a_custom_strategy_that_fails_to_import_names_the_strategy(pm):
    with pytest.raises(ConfigError, match="custom strategy 'mine': cannot import"):
        StrategyRegistry(pm, config(custom={"mine": "no_such_module_xyz:Mine"}))


def test_a_custom_strategy_target_without_a_class_is_rejected(pm):
    with pytest.raises(ConfigError, match="not of the form 'package.module:Class'"):
        StrategyRegistry(pm, config(custom={"mine": "no_colon_here"}))


def test_a_custom_strategy_with_no_backend_capability_breaks_rule_two(pm, monkeypatch):
    module = type(sys)("nobackend_mod")
    module.Bad = type("Bad", (Named,), {"__init__": lambda self: Named.__init__(self, "bad")})
    monkeypatch.setitem(sys.modules, "nobackend_mod", module)
    with pytest.raises(ConfigError, match="'bad'.*rule 2"):
        StrategyRegistry(pm, config(custom={"bad": "nobackend_mod:Bad"}))


def test_a_strategy_disabled_in_its_settings_is_not_enabled(pm):
    from contextfuse.config import StrategySettings

    provide(pm, Named("simple-keyword", uses_text=True))
    registry = StrategyRegistry(
        pm, config(strategy_settings={"simple-keyword": StrategySettings(enabled=False)})
    )
    [entry] = [e for e in registry.entries() if e.name == "simple-keyword"]
    assert not entry.enabled and "enabled = false" in entry.reason


def test_a_strategy_whose_backend_the_index_lacks_is_not_offered(pm):
    provide(
        pm, Named("simple-keyword", uses_text=True), Named("semantic-embedding", uses_vector=True)
    )
    registry = StrategyRegistry(pm, config())
    offered = registry.offered(BackendSet(text=object(), nodes=object()))
    assert [s.name for s in offered] == ["simple-keyword"]
    assert any("no vector backend" in n for n in registry.notices)


def test_the_fallback_chain_supplies_simple_keyword_when_semantic_cannot_run(pm):
    provide(
        pm, Named("simple-keyword", uses_text=True), Named("semantic-embedding", uses_vector=True)
    )
    registry = StrategyRegistry(pm, config(enabled=("semantic-embedding",)))
    offered = registry.offered(BackendSet(text=object(), nodes=object()))
    assert [s.name for s in offered] == ["simple-keyword"]
    assert "falling back to strategy 'simple-keyword'" in registry.notices


def test_no_strategy_for_the_backends_is_a_clear_error(pm):
    provide(pm, Named("semantic-embedding", uses_vector=True))
    registry = StrategyRegistry(pm, config(enabled=("semantic-embedding",)))
    with pytest.raises(ConfigError, match="no installed strategy can serve this index"):
        registry.offered(BackendSet(text=object()))


def test_asking_for_an_unknown_strategy_lists_the_known_ones(pm):
    registry = StrategyRegistry(pm, config())
    with pytest.raises(UnknownStrategyError, match="known strategies: .*relevance"):
        registry.offered(BackendSet(), ["nope"])


def test_describe_reports_missing_defaults_as_unavailable(pm):
    rows = StrategyRegistry(pm, config()).describe()
    missing = {r["name"]: r for r in rows if not r["source"]}
    assert missing["simple-keyword"]["reason"].startswith("not installed")


def test_by_default_only_the_best_strategy_of_the_fallback_chain_runs(pm):
    provide(
        pm,
        Named("simple-keyword", uses_text=True),
        Named("arce", uses_text=True, uses_graph=True),
    )
    registry = StrategyRegistry(pm, config())
    offered = registry.offered(BackendSet(text=object(), graph=object(), nodes=object()))
    assert [s.name for s in offered] == ["arce"]


def test_by_default_the_chain_moves_on_when_the_best_strategy_lacks_a_backend(pm):
    provide(
        pm,
        Named("simple-keyword", uses_text=True),
        Named("arce", uses_text=True, uses_graph=True),
    )
    registry = StrategyRegistry(pm, config())
    offered = registry.offered(BackendSet(text=object(), nodes=object()))
    assert [s.name for s in offered] == ["simple-keyword"]


def test_a_configured_enabled_list_runs_every_strategy_it_names(pm):
    provide(
        pm,
        Named("simple-keyword", uses_text=True),
        Named("arce", uses_text=True, uses_graph=True),
    )
    registry = StrategyRegistry(pm, config(enabled=("simple-keyword", "arce")))
    offered = registry.offered(BackendSet(text=object(), graph=object(), nodes=object()))
    assert sorted(s.name for s in offered) == ["arce", "simple-keyword"]


def test_by_default_a_request_inside_a_plan_also_gets_the_plan_strategy(pm):
    provide(
        pm,
        Named("arce", uses_text=True),
        Named("plan-decision-context", uses_plans=True),
    )
    registry = StrategyRegistry(pm, config())
    backends = BackendSet(text=object(), plans=object(), nodes=object())
    in_plan = registry.offered(backends, request=ContextRequest(query="q", plan_id="p1"))
    assert [s.name for s in in_plan] == ["arce", "plan-decision-context"]
    assert [s.name for s in registry.offered(backends, request=ContextRequest(query="q"))] == [
        "arce"
    ]
