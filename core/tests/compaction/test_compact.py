"""Compaction without a decision policy: the single-summary behaviour; presets as data."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

from contextfuse.compaction import CompactRequest, collect_providers, compact, preset
from contextfuse.flow import ModelCall, ModelReply, runtime

Messages = list[dict[str, Any]]


def run(messages: Messages, provider: Any = None, **fields: Any) -> dict[str, Any]:
    providers = collect_providers(None, [provider] if provider else [])
    if provider:
        fields["policy_ir"] = {"providers": [provider.name]}
    return compact(CompactRequest(messages=messages, **fields), providers)


class Replying:
    name = "replying"

    def __init__(self, reply: ModelReply) -> None:
        self.reply = reply

    def complete(self, call: ModelCall) -> ModelReply:
        return self.reply


def test_without_a_decision_policy_compactable_units_become_one_summary(
    transcript: Callable[..., Messages],
) -> None:
    messages = transcript(10)
    result = run(messages)
    out = result["messages"]
    assert result["compaction"]["flow"] == "single-summary"
    assert out[:2] == messages[:2] and out[-7:] == messages[-7:]
    assert len(out) == 2 + 1 + 7
    assert out[2]["content"].startswith("[contextfuse summary of messages 2-15]")


def test_the_single_summary_defaults_to_the_offline_provider(
    transcript: Callable[..., Messages],
) -> None:
    result = run(transcript(10))
    events = result["x_router"]["decision_trace"]["flow_nodes"][2]["events"]
    assert [e["provider"] for e in events] == ["offline"]


def test_a_failed_single_summary_returns_the_transcript_unchanged(
    transcript: Callable[..., Messages],
) -> None:
    messages = transcript(10)
    result = run(messages, Replying(ModelReply("{", finish_reason="length")))
    assert result["messages"] == messages
    assert {f["reason"] for f in result["compaction"]["fragments"]} == {"truncated"}


def test_pinned_user_messages_between_compacted_units_stay_in_place() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    unit = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": "file\n" * 300},
    ]
    messages = [
        {"role": "user", "content": "first"},
        *unit,
        {"role": "user", "content": "second"},
        *unit,
        *[{"role": "assistant", "content": f"r{i}"} for i in range(4)],
    ]
    out = run(messages)["messages"]
    assert [m["content"] for m in out if m["role"] == "user"] == ["first", "second"]
    assert out.index(messages[3]) == 2


def test_the_presets_are_data_files_run_by_generic_node_kinds() -> None:
    kinds = {
        node.kind
        for name in ("selective-compaction", "single-summary")
        for node in preset(name).nodes
    }
    assert kinds <= {"op", "decide", "select", "generate"}
    assert "compaction" not in inspect.getsource(runtime).lower()


def test_the_selective_preset_states_the_specs_limits() -> None:
    flow = preset("selective-compaction")
    nodes = {node.id: node for node in flow.nodes}
    assert flow.budget_s == 40
    assert (nodes["classify"].timeout_s, nodes["classify"].max_request_bytes) == (7, 32 * 1024)
    assert (nodes["summarize"].timeout_s, nodes["summarize"].max_request_bytes) == (20, 50 * 1024)
    assert nodes["summarize"].max_output_tokens == 4096
    assert flow.params["max_fragments"] == 128 and flow.params["max_batches"] == 32
    assert flow.params["batch_size"] == 8 and flow.params["max_flow_input_bytes"] == 900 * 1024
    assert nodes["classify"].choices == ("keep", "summarize", "archive")
    assert json.loads(flow.model_dump_json())["name"] == "selective-compaction"
