"""Transcripts for the compaction tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

Message = dict[str, Any]


def tool_unit(n: int, output: str) -> list[Message]:
    """An assistant tool call and its result."""
    call = {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{n}.py"})},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{n}", "content": output},
    ]


def listing(n: int, lines: int = 60) -> str:
    """A tool output shaped like a file listing."""
    return "\n".join(f"src/pkg{n}/module_{i}.py" for i in range(lines))


def log(n: int, lines: int = 60, error: bool = False) -> str:
    """A tool output shaped like a log."""
    body = [f"step {i} of run {n} finished in {i * 3} ms" for i in range(lines)]
    if error:
        body.append(f"Error: test_{n} failed with AssertionError")
    return "\n".join(body)


@pytest.fixture
def transcript() -> Callable[..., list[Message]]:
    """system, user, then ``units`` tool units (mixed outputs), then a final answer."""

    def build(units: int = 20, output: Callable[[int], str] | None = None) -> list[Message]:
        messages: list[Message] = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Fix the failing test in the parser."},
        ]
        for n in range(units):
            text = output(n) if output else (listing(n) if n % 2 else log(n, error=n % 5 == 0))
            messages += tool_unit(n, text)
        messages.append({"role": "assistant", "content": "The parser is fixed."})
        return messages

    return build
