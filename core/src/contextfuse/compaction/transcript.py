"""Transcripts in the OpenAI chat format: validation, sizes, and units of related messages.

A *unit* is what compaction replaces or removes as a whole: an assistant message that calls
tools together with the tool results answering it, or any other single message. Messages are
kept as the caller's own dicts so unchanged ones serialize byte for byte as they came.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

__all__ = [
    "ROLES",
    "SUMMARY_MARKER",
    "Unit",
    "check_message",
    "group_units",
    "json_bytes",
    "render_unit",
]

ROLES = ("system", "developer", "user", "assistant", "tool")
#: How a summary marker begins: ``[contextfuse summary of messages S-E]`` then the summary.
SUMMARY_MARKER = "[contextfuse summary of messages "
Message = Mapping[str, Any]


def json_bytes(value: Any) -> int:
    """Serialized UTF-8 bytes of ``value`` (compact JSON): the unit of every size here."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def check_message(message: Any) -> dict[str, Any]:
    """Return ``message`` unchanged if it is a valid chat message; else raise ValueError naming
    the rule it breaks."""
    if not isinstance(message, dict):
        raise ValueError("a message must be a JSON object")
    try:
        json.dumps(message, allow_nan=False)
    except ValueError as exc:  # Python's JSON reader accepts NaN and Infinity; JSON does not
        raise ValueError("a message may not contain NaN or Infinity") from exc
    try:  # JSON may escape a lone surrogate ("\ud800"): no UTF-8 encodes it
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("a message may not contain a lone surrogate (invalid Unicode)") from exc
    role = message.get("role")
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise ValueError("content must be a string, a list of content parts, or null")
    if role in ("system", "developer", "user") and content is None:
        raise ValueError(f"a {role} message needs content")
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise ValueError("a tool message needs a string tool_call_id")
    calls = message.get("tool_calls")
    if calls is not None:
        if role != "assistant":
            raise ValueError("only assistant messages may carry tool_calls")
        if not isinstance(calls, list):
            raise ValueError("tool_calls must be a list")
        for call in calls:
            if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                raise ValueError("every tool call needs a string id")
            function = call.get("function")
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise ValueError("every tool call needs a function with a string name")
    return message


@attrs.frozen
class Unit:
    """Messages ``[start, end)`` that compaction treats as one.

    ``protected`` names why the unit is kept verbatim (empty: it may be compacted).
    """

    start: int
    end: int
    bytes: int
    protected: str = ""
    complete: bool = True

    def as_record(self) -> dict[str, Any]:
        """The unit as plain data (flow state)."""
        return attrs.asdict(self)


def group_units(
    messages: Sequence[Message], pinned: Sequence[int] | None, recent_units: int
) -> list[Unit]:
    """Split ``messages`` into units and mark the protected ones.

    Protected: system and developer messages; units holding a pinned index (default: every
    user message); summary markers of an earlier compaction (so compacting a compacted
    transcript moves on to newer units); incomplete tool calls; and the last
    ``recent_units`` units.
    """
    pinned_set = (
        set(pinned)
        if pinned is not None
        else {i for i, m in enumerate(messages) if m.get("role") == "user"}
    )
    spans: list[tuple[int, int, bool]] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        end = i + 1
        complete = True
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if calls:
            wanted = {c["id"] for c in calls}
            answered: set[str] = set()
            while end < len(messages) and messages[end].get("role") == "tool":
                answered.add(str(messages[end].get("tool_call_id")))
                end += 1
            complete = wanted <= answered
        spans.append((i, end, complete))
        i = end
    units: list[Unit] = []
    for index, (start, end, complete) in enumerate(spans):
        roles = {messages[k].get("role") for k in range(start, end)}
        if roles & {"system", "developer"}:
            reason = "system"
        elif any(k in pinned_set for k in range(start, end)):
            reason = "pinned"
        elif _is_marker(messages[start]):
            reason = "summary"
        elif not complete:
            reason = "incomplete"
        elif index >= len(spans) - recent_units:
            reason = "recent"
        else:
            reason = ""
        size = sum(json_bytes(messages[k]) for k in range(start, end))
        units.append(Unit(start, end, size, reason, complete))
    return units


def _is_marker(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, str) and content.startswith(SUMMARY_MARKER)


def render_unit(messages: Sequence[Message], unit: Unit) -> str:
    """The unit as plain text for a model: role, content and tool calls of each message."""
    lines = []
    for k in range(unit.start, unit.end):
        message = messages[k]
        role = message.get("role")
        label = f"[{k}] {role}"
        if role == "tool":
            label += f" (result of {message.get('tool_call_id')})"
        lines.append(f"{label}: {_content_text(message.get('content'))}")
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            lines.append(f"[{k}] calls {function.get('name')}({function.get('arguments', '')})")
    return "\n".join(lines)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        else:
            parts.append(json.dumps(part, ensure_ascii=False))
    return "\n".join(parts)
