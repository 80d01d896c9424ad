"""The core's default components are built from the slot table, the one place naming them."""

from __future__ import annotations

import importlib

import pytest

from contextfuse.defaults import build_default
from contextfuse.errors import ConfigError
from contextfuse.plugin import SLOTS


def _default_class(entry):
    module, _, name = entry.default.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("entry", SLOTS, ids=lambda s: s.name)
def test_each_slot_is_filled_by_the_class_its_table_entry_names(pm, entry):
    assert type(pm.make_component(entry.name, {})) is _default_class(entry)


def test_the_default_packer_takes_its_settings_from_the_fusion_section():
    packer = build_default("budget_packer", {"min_fragment_tokens": 3})
    assert packer.min_fragment_tokens == 3


def test_the_default_orderer_takes_its_mode_from_the_finalize_section():
    assert build_default("fragment_orderer", {"order": "file"}).mode == "file"


def test_the_default_scorer_takes_its_weights_from_the_fusion_section():
    scorer = build_default("fragment_scorer", {"scorer_weights": {"relevance": 0.9}})
    assert scorer.weights.relevance == 0.9


def test_the_default_selector_gets_the_whole_coordinator_section():
    selector = build_default("strategy_selector", {"preference_boost": 2.0})
    assert selector.config.preference_boost == 2.0


def test_a_bad_setting_of_a_default_is_refused_by_its_sections_model():
    with pytest.raises((ConfigError, ValueError)):
        build_default("budget_packer", {"min_fragment_tokens": -1})
