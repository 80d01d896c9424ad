"""``contextfuse serve`` and ``contextfuse compact`` as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

CLI = [sys.executable, "-m", "contextfuse.cli.main"]


def run_cli(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [*CLI, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def served(repo: Path, served_process: Callable[..., Any]) -> Iterator[str]:
    """``contextfuse serve --port 0`` in a subprocess; yields its URL."""
    with served_process("serve", "--port", "0", "--project", f"demo={repo}") as url:
        yield url


@pytest.mark.slow
def test_serve_listens_on_loopback_and_answers(served: str) -> None:
    assert served.startswith("http://127.0.0.1:")
    assert httpx.get(served + "/healthz").json()["projects"] == ["demo"]


@pytest.mark.slow
def test_explore_serves_the_explorer_over_one_repository_with_the_query_in_its_address(
    repo: Path, served_process: Callable[..., Any]
) -> None:
    args = ["explore", "add two numbers", "--repo", str(repo), "--budget", "3000", "--no-browser"]
    with served_process(*args) as url:
        base, _, state = url.partition("/#")
        assert base.startswith("http://127.0.0.1:")
        expected = {"project": ["demo"], "budget": ["3000"], "q": ["add two numbers"]}
        assert parse_qs(state) == expected
        assert "contextfuse explorer" in httpx.get(base + "/").text
        assert httpx.get(base + "/healthz").json()["projects"] == ["demo"]


def test_serve_refuses_a_public_address_without_a_token(repo: Path) -> None:
    result = run_cli("serve", "--host", "0.0.0.0", "--project", f"demo={repo}")
    assert result.returncode == 2
    assert "give a bearer token" in result.stderr


def test_serve_refuses_a_malformed_project_option() -> None:
    result = run_cli("serve", "--project", "demo")
    assert result.returncode == 2
    assert "'demo' is not NAME=PATH" in result.stderr


def test_serve_refuses_a_project_that_is_not_a_directory(tmp_path: Path) -> None:
    result = run_cli("serve", "--project", f"x={tmp_path / 'missing'}")
    assert result.returncode == 2
    assert "is not a directory" in result.stderr


def transcript() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n in range(10):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "a.py\n" * 150})
    return messages


def test_compact_reads_a_transcript_on_stdin() -> None:
    result = run_cli("compact", "--selective", stdin=json.dumps(transcript()))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["compaction"]["flow"] == "selective-compaction"
    assert out["compaction"]["output_bytes"] < out["compaction"]["original_bytes"]


def test_compact_says_on_stderr_why_a_target_was_missed() -> None:
    messages = transcript()
    messages[-1]["content"] = "a.py\n" * 4000  # a recent unit, kept whole
    result = run_cli("compact", stdin=json.dumps(messages))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["compaction"]["target_met"] is False
    assert result.stderr.startswith("note: target ratio 0.1 not met (")
    assert "protected messages alone" in result.stderr


def test_compact_accepts_a_request_object_and_options_override_it() -> None:
    request = {"messages": transcript(), "target_ratio": 0.9}
    result = run_cli("compact", "--target-ratio", "0.2", stdin=json.dumps(request))
    out = json.loads(result.stdout)
    assert out["compaction"]["flow"] == "single-summary"
    assert out["compaction"]["target_ratio"] == 0.2


def test_compact_names_the_field_and_rule_of_bad_input() -> None:
    result = run_cli("compact", "--target-ratio", "2", stdin=json.dumps(transcript()))
    assert result.returncode == 2
    assert "target_ratio: Input should be less than or equal to 1 (less_than_equal)" in (
        result.stderr
    )


def test_compact_says_when_stdin_is_not_json() -> None:
    result = run_cli("compact", stdin="hello")
    assert result.returncode == 2
    assert "standard input is not JSON" in result.stderr
