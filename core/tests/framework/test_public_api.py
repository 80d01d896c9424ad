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


TIERS = [contextfuse, contextfuse.plugin]


def _declared(module):
    from contextfuse.lazy_exports import declared_exports

    with open(module.__file__, encoding="utf-8") as handle:
        return declared_exports(handle.read())


@pytest.mark.parametrize("tier", TIERS, ids=lambda m: m.__name__)
def test_each_tier_declares_its_names_once_in_its_type_checking_block(tier):
    with open(tier.__file__, encoding="utf-8") as handle:
        source = handle.read()
    assert "__all__ =" not in source and "_EXPORTS" not in source
    names, stars = _declared(tier)
    starred = {n for star in stars for n in importlib.import_module(star).__all__}
    assert set(tier.__all__) - {"__version__", "IndexContributor"} == set(names) | starred


@pytest.mark.parametrize("tier", TIERS, ids=lambda m: m.__name__)
def test_each_declared_name_is_the_object_its_module_defines(tier):
    names, _ = _declared(tier)
    for name, (module, attribute) in names.items():
        assert getattr(tier, name) is getattr(importlib.import_module(module), attribute)


def test_the_author_tier_holds_every_public_name_of_the_backend_and_component_protocols():
    from contextfuse import backends
    from contextfuse.components import protocols

    assert set(backends.__all__) | set(protocols.__all__) <= set(contextfuse.plugin.__all__)


def test_dir_of_a_tier_lists_its_public_names():
    assert set(contextfuse.plugin.__all__) <= set(dir(contextfuse.plugin))


def test_adding_a_name_to_a_public_module_is_one_import_line(tmp_path, monkeypatch):
    (tmp_path / "tier_example.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from contextfuse.models import DetailDepth as DetailDepth\n"
        "    from contextfuse.models import PlanContext as PlanContext\n"
        "else:\n"
        "    from contextfuse.lazy_exports import lazy_exports\n"
        "    __getattr__, __dir__ = lazy_exports(__name__)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    example = importlib.import_module("tier_example")
    from contextfuse.models import PlanContext

    assert example.__all__ == ["DetailDepth", "PlanContext"]
    assert example.PlanContext is PlanContext
