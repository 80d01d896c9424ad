"""Every hook is specified, documented in its docstring and in docs/hooks.md."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from contextfuse import hookspecs
from contextfuse.components.protocols import COMPONENT_NAMES
from contextfuse.slots import SLOTS

HOOKS = [n for n in hookspecs.__all__ if n.startswith("contextfuse_")]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"


def docstring(name):
    return " ".join((inspect.getdoc(getattr(hookspecs, name)) or "").split())


def spec_options(name):
    return getattr(hookspecs, name).contextfuse_spec


def test_there_is_one_component_hook_per_pipeline_component():
    firstresult = {n for n in HOOKS if spec_options(n).get("firstresult")}
    assert firstresult == {f"contextfuse_{c}" for c in COMPONENT_NAMES}


def test_the_collecting_hooks_cover_every_kind_of_contribution():
    assert set(hookspecs.COLLECTING_HOOKS) == {
        "contextfuse_strategies",
        "contextfuse_backend_providers",
        "contextfuse_index_contributors",
        "contextfuse_tokenizers",
        "contextfuse_model_providers",
        "contextfuse_cli_commands",
    }


def test_every_hook_is_a_component_a_collecting_or_an_observer_hook():
    others = {n for n in HOOKS if not spec_options(n).get("firstresult")}
    assert others == {*hookspecs.COLLECTING_HOOKS, *hookspecs.OBSERVER_HOOKS}


@pytest.mark.parametrize("name", hookspecs.COLLECTING_HOOKS)
def test_each_collecting_hook_takes_a_register_callback(name):
    assert list(inspect.signature(getattr(hookspecs, name)).parameters) == ["register"]


@pytest.mark.parametrize("name", HOOKS)
def test_each_hook_docstring_says_when_it_is_called_and_what_it_gives(name):
    doc = docstring(name)
    gives = (
        ("Returns", "Return values") if name not in hookspecs.COLLECTING_HOOKS else ("register(",)
    )
    assert "Called " in doc and any(word in doc for word in gives)


@pytest.mark.parametrize("name", HOOKS)
def test_each_hook_docstring_says_whether_the_first_result_wins(name):
    doc = docstring(name)
    if spec_options(name).get("firstresult"):
        assert "Stops at the first non-None result" in doc
    else:
        assert "All are collected" in doc or "every implementation is called" in doc


@pytest.mark.parametrize("name", HOOKS)
def test_each_hook_has_a_section_with_its_signature_in_the_hook_reference(name):
    text = DOCS.read_text(encoding="utf-8")
    signature = str(inspect.signature(getattr(hookspecs, name))).replace("'", "")
    assert f"## {name}\n" in text
    assert f"`{name}{signature}`" in text


@pytest.mark.parametrize("entry", SLOTS, ids=lambda s: s.name)
def test_each_component_hook_is_described_from_its_slot(entry):
    doc = docstring(entry.hook)
    assert f"Provide the {entry.protocol}: {entry.summary}." in doc
    assert f"the core default ({entry.default_name}) is last" in doc
    assert f"``[{entry.section}]``" in doc
    assert inspect.signature(getattr(hookspecs, entry.hook)).return_annotation == (
        f"{entry.protocol} | None"
    )
