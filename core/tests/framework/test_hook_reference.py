"""docs/hooks.md is generated from the hookspecs and the slot table, and is up to date."""

from __future__ import annotations

from pathlib import Path

from contextfuse.hookdoc import render_hook_reference

DOCS = Path(__file__).resolve().parents[3] / "docs" / "hooks.md"


def test_the_checked_in_hook_reference_is_what_the_generator_prints():
    assert DOCS.read_text(encoding="utf-8") == render_hook_reference(), (
        "docs/hooks.md is out of date: python -m contextfuse.hookdoc > docs/hooks.md"
    )


def test_the_hook_reference_lists_every_slot_with_its_default():
    text = render_hook_reference()
    assert "| `fragment_scorer` | 2 | `[fusion]` | `FragmentScorer` | `score()`" in text
