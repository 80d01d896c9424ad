"""A generator of tool-heavy agent transcripts (OpenAI chat format) for the compaction bench.

A transcript reads like a coding agent's run: a system prompt, the user's task, then rounds
of tool calls (read a file, grep, run the tests, list a folder) with realistic outputs, some
assistant notes and now and then a user follow-up. Deterministic for a given seed.
"""

from __future__ import annotations

import json
import random
from typing import Any

Message = dict[str, Any]

_WORDS = [
    "parser",
    "token",
    "buffer",
    "node",
    "visit",
    "render",
    "cache",
    "index",
    "query",
    "budget",
    "fragment",
    "packer",
    "depth",
    "config",
    "plugin",
    "registry",
    "strategy",
    "score",
    "commit",
    "history",
    "vector",
    "graph",
    "edge",
    "file",
    "path",
    "line",
]


def _source(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        word = rng.choice(_WORDS)
        if i % 12 == 0:
            out.append(f"def {word}_{i}(self, {rng.choice(_WORDS)}: int) -> str:")
            out.append(f'    """Return the {word} of the {rng.choice(_WORDS)}."""')
        else:
            out.append(f"    {word} = self.{rng.choice(_WORDS)}[{i}] + {rng.randint(0, 99)}")
    return "\n".join(out)


def _tests(rng: random.Random) -> str:
    names = [
        f"tests/test_{rng.choice(_WORDS)}.py::test_{rng.choice(_WORDS)}_{i}" for i in range(40)
    ]
    lines = [f"{name} PASSED" for name in names]
    if rng.random() < 0.4:
        failed = rng.choice(names)
        lines.append(f"{failed} FAILED")
        lines.append(f"E   AssertionError: expected {rng.randint(1, 9)} fragments, got 0")
    lines.append(f"==== {len(names)} tests in {rng.uniform(0.5, 9):.2f}s ====")
    return "\n".join(lines)


def _grep(rng: random.Random) -> str:
    return "\n".join(
        f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py:{rng.randint(1, 900)}: "
        f"{rng.choice(_WORDS)} = {rng.choice(_WORDS)}({rng.choice(_WORDS)})"
        for _ in range(rng.randint(5, 30))
    )


def _listing(rng: random.Random) -> str:
    return "\n".join(f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}_{i}.py" for i in range(60))


_TOOLS = {
    "read_file": lambda rng: _source(rng, rng.randint(40, 220)),
    "run_tests": _tests,
    "grep": _grep,
    "list_dir": _listing,
}


def plain_text(messages: list[Message]) -> str:
    """Everything a reader of ``messages`` sees: contents and tool calls' names and arguments,
    one message after another (what a fact is looked for in)."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            parts.append(f"{function.get('name')}({function.get('arguments', '')})")
    return "\n".join(parts)


def transcript(messages: int, seed: int = 0) -> list[Message]:
    """A transcript of exactly ``messages`` messages."""
    rng = random.Random(seed)
    out: list[Message] = [
        {"role": "system", "content": "You are a careful coding agent. Use the tools."},
        {"role": "user", "content": "The packer drops fragments it should keep; find and fix it."},
    ]
    n = 0
    while len(out) < messages:
        room = messages - len(out)
        if room >= 2 and rng.random() < 0.85:
            tool = rng.choice(sorted(_TOOLS))
            call_id = f"call_{n}"
            arguments = json.dumps({"path": f"src/{rng.choice(_WORDS)}.py"})
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": tool, "arguments": arguments},
                        }
                    ],
                }
            )
            out.append({"role": "tool", "tool_call_id": call_id, "content": _TOOLS[tool](rng)})
            n += 1
        elif rng.random() < 0.2:
            out.append({"role": "user", "content": f"Also check the {rng.choice(_WORDS)} module."})
        else:
            note = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(10, 60)))
            out.append({"role": "assistant", "content": f"Observed: {note}."})
    return out
