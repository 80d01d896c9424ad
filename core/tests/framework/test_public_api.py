"""The two tiers of the public API: `contextfuse` for users, `contextfuse.plugin` for authors."""

from __future__ import annotations

import importlib

import pytest

import contextfuse
import contextfuse.plugin

SEED_NAMES = [
    "StrategyCoordinator",
    "CoordinatorConfig",
    "CoordinationResult",
    "FusionEngine",
    "FusionConfig",
    "FusionResult",
    "ScorerWeights",
]


@pytest.mark.parametrize("name", SEED_NAMES)
def test_the_seeds_names_are_importable_from_contextfuse(name):
    assert getattr(contextfuse, name).__name__ == name


@pytest.mark.parametrize("name", contextfuse.__all__)
def test_every_user_name_resolves(name):
    assert getattr(contextfuse, name) is not None


@pytest.mark.parametrize("name", contextfuse.plugin.__all__)
def test_every_author_name_resolves(name):
    assert getattr(contextfuse.plugin, name) is not None


def test_the_author_tier_holds_the_ten_component_protocols():
    protocols = {s.protocol for s in contextfuse.plugin.SLOTS}
    assert len(protocols) == 10 and protocols <= set(contextfuse.plugin.__all__)


def test_the_author_tier_holds_the_node_scoring_strategy_base():
    assert contextfuse.plugin.NodeScoringStrategy.__name__ == "NodeScoringStrategy"


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="'NoSuchThing'"):
        contextfuse.plugin.NoSuchThing  # noqa: B018


def test_the_components_package_is_a_regular_package():
    assert importlib.import_module("contextfuse.components").__file__ is not None
