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
    def __init__(self, name, confidence=0.5, **caps):
        caps.setdefault("resource_types", ("code", "docs"))
        self.name = name
        self.confidence = confidence
        self.capabilities = StrategyCapabilities(**caps)

    def can_handle(self, request, backends):
        return self.confidence(request) if callable(self.confidence) else self.confidence

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


def test_without_a_configured_list_every_installed_strategy_the_store_serves_is_enabled(pm):
    provide(pm, Named("simple-keyword", uses_text=True), Named("vec", uses_vector=True))
    registry = StrategyRegistry(pm, config(), provides=frozenset({"nodes", "text"}))
    assert [e.name for e in registry.entries() if e.enabled] == ["simple-keyword"]
    [vec] = [e for e in registry.entries() if e.name == "vec"]
    assert vec.reason == "the configured store cannot provide vector"


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


def test_a_configured_strategy_whose_backend_the_index_lacks_is_not_offered(pm):
    provide(
        pm, Named("simple-keyword", uses_text=True), Named("semantic-embedding", uses_vector=True)
    )
    registry = StrategyRegistry(pm, config(enabled=("simple-keyword", "semantic-embedding")))
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


def test_the_fallback_comes_from_the_degradation_path_below_the_configured_strategy(pm):
    provide(
        pm,
        Named("best", uses_text=True, uses_graph=True, quality_score=0.9),
        Named("vectors", uses_vector=True, quality_score=0.6),
        Named("text", uses_text=True, quality_score=0.3),
    )
    registry = StrategyRegistry(pm, config(enabled=("vectors",)))
    offered = registry.offered(BackendSet(text=object(), graph=object(), nodes=object()))
    assert [s.name for s in offered] == ["text"]


def test_no_strategy_for_the_backends_is_a_clear_error(pm):
    provide(pm, Named("semantic-embedding", uses_vector=True))
    registry = StrategyRegistry(pm, config(enabled=("semantic-embedding",)))
    with pytest.raises(ConfigError, match="no installed strategy can serve this index"):
        registry.offered(BackendSet(text=object()))


def test_asking_for_an_unknown_strategy_lists_the_known_ones(pm):
    registry = StrategyRegistry(pm, config())
    with pytest.raises(UnknownStrategyError, match="known strategies: .*relevance"):
        registry.offered(BackendSet(), ["nope"])


def test_describe_ranks_the_degradation_path(pm):
    provide(
        pm,
        Named("low", uses_text=True, quality_score=0.3),
        Named("high", uses_text=True, quality_score=0.9),
        Named("plans", uses_plans=True, resource_types=("plan",)),
    )
    registry = StrategyRegistry(pm, config(), provides=frozenset({"nodes", "text", "plans"}))
    rows = {r["name"]: r for r in registry.describe()}
    assert (rows["high"]["degradation_rank"], rows["low"]["degradation_rank"]) == (1, 2)
    assert rows["plans"]["degradation_rank"] is None


def test_by_default_only_the_best_strategy_of_the_degradation_path_runs(pm):
    provide(
        pm,
        Named("simple-keyword", uses_text=True, quality_score=0.3),
        Named("arce", uses_text=True, uses_graph=True, quality_score=0.95),
    )
    registry = StrategyRegistry(pm, config())
    offered = registry.offered(BackendSet(text=object(), graph=object(), nodes=object()))
    assert [s.name for s in offered] == ["arce"]


def test_by_default_the_path_moves_on_when_the_best_strategy_lacks_a_backend(pm):
    provide(
        pm,
        Named("simple-keyword", uses_text=True, quality_score=0.3),
        Named("arce", uses_text=True, uses_graph=True, quality_score=0.95),
    )
    registry = StrategyRegistry(pm, config())
    offered = registry.offered(BackendSet(text=object(), nodes=object()))
    assert [s.name for s in offered] == ["simple-keyword"]
    assert "strategy 'arce' cannot run (the index has no graph backend); using " in (
        " ".join(registry.notices)
    )


def test_the_degradation_path_orders_the_builtin_strategies_by_their_declared_quality(pm):
    # The built-in strategies' declarations (plugins/*/strategy.py), not their names.
    provide(
        pm,
        Named("simple-keyword", uses_text=True, quality_score=0.3),
        Named("plans", uses_plans=True, quality_score=0.7, resource_types=("plan", "decision")),
        Named("semantic-embedding", uses_vector=True, quality_score=0.6),
        Named(
            "history",
            uses_graph=True,
            uses_temporal=True,
            quality_score=0.5,
            resource_types=("commit", "code"),
        ),
        Named("arce", uses_text=True, uses_vector=True, uses_graph=True, quality_score=0.95),
        Named("breadth-depth-navigator", uses_text=True, uses_graph=True, quality_score=0.85),
    )
    registry = StrategyRegistry(
        pm, config(), provides=frozenset({"nodes", "text", "vector", "graph", "temporal", "plans"})
    )
    assert [e.name for e in registry.degradation_path()] == [
        "arce",
        "breadth-depth-navigator",
        "semantic-embedding",
        "simple-keyword",
    ]


def test_the_primary_resource_types_of_the_path_are_configuration(pm):
    from contextfuse.config import StrategySelection

    provide(
        pm,
        Named("code-only", uses_text=True, resource_types=("code",)),
        Named("docs-too", uses_text=True),
    )
    selection = StrategySelection(primary_resource_types=("code",))
    registry = StrategyRegistry(pm, config(selection=selection), provides=frozenset({"text"}))
    assert [e.name for e in registry.degradation_path()] == ["code-only", "docs-too"]


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
    def in_plan(request):
        return 0.9 if request.plan_id else 0.0

    provide(
        pm,
        Named("arce", uses_text=True),
        Named("plan-decision-context", in_plan, uses_plans=True, resource_types=("plan",)),
    )
    registry = StrategyRegistry(pm, config())
    backends = BackendSet(text=object(), plans=object(), nodes=object())
    in_plan = registry.offered(backends, request=ContextRequest(query="q", plan_id="p1"))
    assert [s.name for s in in_plan] == ["arce", "plan-decision-context"]
    assert [s.name for s in registry.offered(backends, request=ContextRequest(query="q"))] == [
        "arce"
    ]


def test_by_default_a_strategy_of_other_types_below_the_join_confidence_does_not_run(pm):
    provide(
        pm,
        Named("arce", uses_text=True),
        Named("history", 0.7, uses_temporal=True, resource_types=("commit",)),
    )
    registry = StrategyRegistry(pm, config())
    backends = BackendSet(text=object(), temporal=object(), nodes=object())
    offered = registry.offered(backends, request=ContextRequest(query="why did it change"))
    assert [s.name for s in offered] == ["arce"]


def test_the_join_confidence_is_configuration(pm):
    from contextfuse.config import StrategySelection

    provide(
        pm,
        Named("arce", uses_text=True),
        Named("history", 0.7, uses_temporal=True, resource_types=("commit",)),
    )
    registry = StrategyRegistry(pm, config(selection=StrategySelection(join_confidence=0.6)))
    backends = BackendSet(text=object(), temporal=object(), nodes=object())
    offered = registry.offered(backends, request=ContextRequest(query="why did it change"))
    assert [s.name for s in offered] == ["arce", "history"]


def test_a_request_only_for_other_types_runs_the_best_strategy_of_those_types(pm):
    provide(
        pm,
        Named("arce", uses_text=True),
        Named("history", 0.4, uses_temporal=True, resource_types=("commit",)),
    )
    registry = StrategyRegistry(pm, config())
    backends = BackendSet(text=object(), temporal=object(), nodes=object())
    request = ContextRequest(query="q", resource_types=("commit",))
    assert [s.name for s in registry.offered(backends, request=request)] == ["history"]


def test_a_strategy_asked_for_by_name_that_the_index_cannot_serve_is_an_error_naming_it(pm):
    provide(pm, Named("text", uses_text=True), Named("vectors", uses_vector=True))
    registry = StrategyRegistry(pm, config())
    with pytest.raises(ConfigError, match="'vectors' was asked for.*no vector backend"):
        registry.offered(BackendSet(text=object(), nodes=object()), ["vectors"])
    assert not any("falling back" in n for n in registry.notices)
