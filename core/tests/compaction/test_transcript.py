"""Transcripts: message validation and the units compaction works on."""

from __future__ import annotations

import pytest

from contextfuse.compaction.transcript import check_message, group_units


def test_a_tool_call_and_its_results_form_one_unit() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "assistant", "content": "done"},
    ]
    units = group_units(messages, None, recent_units=0)
    assert [(u.start, u.end) for u in units] == [(0, 1), (1, 3), (3, 4)]


def test_system_pinned_incomplete_and_recent_units_are_protected() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "old"},
        {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f"}}]},
        {"role": "assistant", "content": "recent"},
    ]
    units = group_units(messages, None, recent_units=1)
    assert [u.protected for u in units] == ["system", "pinned", "", "incomplete", "recent"]


def test_explicit_pins_replace_the_default_of_every_user_message() -> None:
    messages = [{"role": "user", "content": "observation"}, {"role": "user", "content": "goal"}]
    units = group_units(messages, [1], recent_units=0)
    assert [u.protected for u in units] == ["", "pinned"]


@pytest.mark.parametrize(
    ("message", "rule"),
    [
        ({"role": "robot", "content": "x"}, "role must be one of"),
        ({"role": "user"}, "a user message needs content"),
        ({"role": "tool", "content": "x"}, "needs a string tool_call_id"),
        ({"role": "user", "content": "x", "tool_calls": []}, "only assistant messages"),
        ({"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}, "string id"),
        ({"role": "user", "content": 3}, "content must be a string"),
        ({"role": "user", "content": "x", "score": float("nan")}, "NaN or Infinity"),
    ],
)
def test_an_invalid_message_is_refused_naming_the_rule(
    message: dict[str, object], rule: str
) -> None:
    with pytest.raises(ValueError, match=rule):
        check_message(message)
