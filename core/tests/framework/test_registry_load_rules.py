"""Registry rules applied when the registry loads (spec/strategy-registry.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextfuse import (
    ACMSPipeline,
    BackendSet,
    ContextBudget,
    ContextRequest,
    MissingStrategyError,
)
from contextfuse.config import ContextfuseConfig
from contextfuse.errors import ConfigError
from contextfuse.plugin import StrategyCapabilities, hookimpl
from contextfuse.registry import StrategyRegistry

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"


class Named:
    def __init__(self, name, resource_types=("*",), **uses):
        self.name = name
        self.capabilities = StrategyCapabilities(resource_types=resource_types, **uses)

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

    pm.register_plugin(Plugin(), "strategies")


def test_a_configured_strategy_the_store_can_never_serve_is_an_error_at_load(pm):
    provide(pm, Named("simple-keyword", uses_text=True), Named("plans", uses_plans=True))
    with pytest.raises(ConfigError, match="config.toml: strategy 'plans' is enabled.*the plans"):
        StrategyRegistry(
            pm,
            ContextfuseConfig(enabled=("simple-keyword", "plans"), enabled_source="config.toml"),
            provides=frozenset({"text"}),
        )


def test_a_configured_strategy_switched_off_in_its_settings_is_not_refused(pm):
    from contextfuse.config import StrategySettings

    provide(pm, Named("simple-keyword", uses_text=True), Named("plans", uses_plans=True))
    settings = {"plans": StrategySettings(enabled=False)}
    registry = StrategyRegistry(
        pm,
        ContextfuseConfig(enabled=("simple-keyword", "plans"), strategy_settings=settings),
        provides=frozenset({"text"}),
    )
    assert [e.name for e in registry.entries() if e.enabled] == ["simple-keyword"]


def test_repository_assembly_without_a_text_strategy_names_the_distribution_to_install(pm):
    provide(pm, Named("semantic-embedding", uses_vector=True))
    with pytest.raises(MissingStrategyError, match="declares uses_text.*pip install contextfuse-s"):
        StrategyRegistry(pm, provides=frozenset({"text", "vector"}), for_repository=True)


def test_the_distribution_named_without_a_text_strategy_is_configuration(pm):
    from contextfuse.config import StrategySelection

    provide(pm, Named("semantic-embedding", uses_vector=True))
    selection = StrategySelection(install_hint="acme-grep")
    with pytest.raises(MissingStrategyError, match="pip install acme-grep"):
        StrategyRegistry(
            pm,
            ContextfuseConfig(selection=selection),
            provides=frozenset({"text", "vector"}),
            for_repository=True,
        )


def test_a_text_strategy_the_store_cannot_serve_does_not_count(pm):
    provide(pm, Named("simple-keyword", uses_text=True))
    with pytest.raises(MissingStrategyError):
        StrategyRegistry(pm, provides=frozenset({"vector"}), for_repository=True)


def test_the_v1_pipeline_over_fragments_needs_no_text_strategy(pm, make_fragment):
    payload = ACMSPipeline(plugin_manager=pm).assemble(
        "p", [make_fragment()], ContextBudget(max_tokens=100, reserved_tokens=0)
    )
    assert len(payload.fragments) == 1


def test_a_request_for_other_resource_types_skips_the_strategy(pm):
    provide(
        pm, Named("docs", resource_types=("doc",), uses_text=True), Named("any", uses_text=True)
    )
    registry = StrategyRegistry(pm, ContextfuseConfig(enabled=("docs", "any")))
    request = ContextRequest(query="q", resource_types=("code",))
    offered = registry.offered(BackendSet(text=object()), request=request)
    assert [s.name for s in offered] == ["any"]


def test_a_request_of_a_declared_resource_type_is_served(pm):
    provide(pm, Named("docs", resource_types=("doc", "code"), uses_text=True))
    registry = StrategyRegistry(pm, ContextfuseConfig(enabled=("docs",)))
    request = ContextRequest(query="q", resource_types=("code",))
    assert [s.name for s in registry.offered(BackendSet(text=object()), request=request)] == [
        "docs"
    ]


def test_a_missing_default_strategy_is_noted_once_however_often_it_is_asked(pm):
    provide(pm, Named("simple-keyword", uses_text=True), Named("vec", uses_vector=True))
    registry = StrategyRegistry(pm, ContextfuseConfig(enabled=("simple-keyword", "vec")))
    for _ in range(3):
        registry.offered(BackendSet(text=object()))
    assert len(registry.notices) == len(set(registry.notices)) == 1


def test_the_default_install_hint_is_a_distribution_here_with_a_text_strategy():
    from contextfuse.config import StrategySelection

    hint = StrategySelection().install_hint
    folder = PLUGINS / hint.removeprefix("contextfuse-")
    assert f'name = "{hint}"' in (folder / "pyproject.toml").read_text(encoding="utf-8")
    assert "uses_text=True" in "".join(
        p.read_text(encoding="utf-8") for p in folder.glob("src/*/strategy.py")
    )


def test_the_strategy_listing_says_why_the_store_cannot_serve_a_strategy(pm):
    provide(pm, Named("simple-keyword", uses_text=True), Named("plans", uses_plans=True))
    registry = StrategyRegistry(pm, ContextfuseConfig(), provides=frozenset({"text"}))
    row = next(r for r in registry.describe() if r["name"] == "plans")
    assert not row["available"] and "cannot provide plans" in row["reason"]
