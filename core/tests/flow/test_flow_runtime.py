"""The generic flow runtime: node kinds, fallbacks, limits, budgets, usage and cost."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from contextfuse.flow import (
    FlowDefinition,
    FlowRuntime,
    ModelCall,
    ModelReply,
    ProviderError,
    ResolvedPolicy,
)


class Scripted:
    """A provider that answers from a function of the call, recording every call."""

    def __init__(self, name: str, answer: Any) -> None:
        self.name = name
        self.answer = answer
        self.calls: list[ModelCall] = []

    def complete(self, call: ModelCall) -> ModelReply:
        self.calls.append(call)
        result = self.answer(call)
        if isinstance(result, Exception):
            raise result
        return result


def choose(choice: str, cost: float | None = 0.0) -> Any:
    def answer(call: ModelCall) -> ModelReply:
        rows = [{"id": item["id"], "choice": choice} for item in call.payload["items"]]
        return ModelReply(json.dumps({"decisions": rows}), prompt_tokens=10, cost_usd=cost)

    return answer


def flow(**changes: Any) -> FlowDefinition:
    nodes: list[dict[str, Any]] = [
        {
            "id": "decide",
            "kind": "decide",
            "inputs": ["batches"],
            "output": "decided",
            "policy": "p",
            "question": "keep or drop?",
            "choices": ["keep", "drop"],
            "default": "keep",
            "timeout_s": 7,
            "max_request_bytes": 32768,
        },
        {
            "id": "pick",
            "kind": "select",
            "inputs": ["decided"],
            "output": "dropped",
            "where": {"decision": "drop"},
        },
        {
            "id": "write",
            "kind": "generate",
            "inputs": ["dropped"],
            "output": "written",
            "policy": "p",
            "instruction": "shorten",
            "response": {"list_key": "out", "value_key": "text"},
            "timeout_s": 20,
            "max_request_bytes": 51200,
            "max_output_tokens": 4096,
        },
        {"id": "count", "kind": "op", "op": "count", "inputs": ["written"], "output": "n"},
    ]
    data: dict[str, Any] = {
        "name": "test",
        "version": 1,
        "inputs": ["batches"],
        "budget_s": 40,
        "nodes": nodes,
        "result": "n",
    }
    data.update(changes)
    return FlowDefinition.model_validate(data)


def batches(*sizes: int, text: str = "x") -> list[list[dict[str, Any]]]:
    return [[{"id": f"b{b}r{r}", "text": text} for r in range(n)] for b, n in enumerate(sizes)]


def run(provider: Any, items: Any, **policy: Any) -> Any:
    runtime = FlowRuntime({"count": lambda written, params: len(written)})
    return runtime.run(flow(), {"batches": items}, {"p": ResolvedPolicy((provider,), **policy)})


def writer(decision: str) -> Any:
    def answer(call: ModelCall) -> ModelReply:
        if call.kind == "decision":
            return choose(decision)(call)
        out = [{"id": r["id"], "text": "short"} for r in call.payload["records"]]
        return ModelReply(json.dumps({"out": out}), completion_tokens=5)

    return answer


def test_decide_node_makes_one_call_per_batch() -> None:
    provider = Scripted("m", writer("keep"))
    result = run(provider, batches(3, 2))
    assert [c.kind for c in provider.calls] == ["decision", "decision"]
    assert [len(c.payload["items"]) for c in provider.calls] == [3, 2]
    assert result.state["decided"][0][0]["decision"] == "keep"


def test_generate_node_makes_no_call_when_nothing_is_selected() -> None:
    provider = Scripted("m", writer("keep"))
    result = run(provider, batches(2))
    write = next(n for n in result.trace if n["id"] == "write")
    assert write["status"] == "skipped" and write["calls"] == 0
    assert [c.kind for c in provider.calls] == ["decision"]


def test_generate_node_gives_each_selected_record_its_text() -> None:
    provider = Scripted("m", writer("drop"))
    result = run(provider, batches(2, 1))
    assert [c.kind for c in provider.calls].count("generation") == 2
    assert {r["generated"] for r in result.state["written"]} == {"short"}
    assert result.result == 3


def test_a_choice_outside_the_records_allowed_choices_becomes_the_default() -> None:
    items = [[{"id": "a", "text": "x", "choices": ["keep"]}]]
    result = run(Scripted("m", choose("drop")), items)
    record = result.state["decided"][0][0]
    assert record["decision"] == "keep" and record["decision_source"] == "default"


def test_a_decision_names_the_provider_that_made_it() -> None:
    broken = Scripted("broken", lambda call: ProviderError("HTTP 500"))
    working = Scripted("working", writer("drop"))
    runtime = FlowRuntime({"count": lambda written, params: len(written)})
    result = runtime.run(flow(), {"batches": batches(1)}, {"p": ResolvedPolicy((broken, working))})
    assert result.state["decided"][0][0]["decision_source"] == "working"


def test_a_generate_node_with_a_limit_key_sends_each_records_limit() -> None:
    nodes = [n.model_dump() for n in flow().nodes]
    nodes[2]["limit_key"] = "max_bytes"
    provider = Scripted("m", writer("drop"))
    runtime = FlowRuntime({"count": lambda written, params: len(written)})
    items = [[{"id": "a", "text": "x", "max_bytes": 300}, {"id": "b", "text": "y"}]]
    runtime.run(flow(nodes=nodes), {"batches": items}, {"p": ResolvedPolicy((provider,))})
    generation = next(c for c in provider.calls if c.kind == "generation")
    assert generation.payload["records"] == [
        {"id": "a", "text": "x", "max_bytes": 300},
        {"id": "b", "text": "y"},
    ]
    assert "within its record's max_bytes" in generation.messages[0]["content"]


def test_a_failing_provider_falls_back_to_the_next_allowed_one() -> None:
    broken = Scripted("broken", lambda call: ProviderError("HTTP 500"))
    working = Scripted("working", writer("drop"))
    runtime = FlowRuntime({"count": lambda written, params: len(written)})
    result = runtime.run(flow(), {"batches": batches(1)}, {"p": ResolvedPolicy((broken, working))})
    events = result.trace[0]["events"]
    assert [(e["provider"], e["outcome"]) for e in events] == [
        ("broken", "provider_error"),
        ("working", "ok"),
    ]
    assert result.state["decided"][0][0]["decision"] == "drop"


def test_when_every_provider_fails_each_record_gets_the_default() -> None:
    result = run(Scripted("m", lambda call: ProviderError("boom")), batches(2))
    assert {r["decision"] for r in result.state["decided"][0]} == {"keep"}
    assert result.trace[0]["status"] == "fallback"


def test_a_request_over_its_byte_bound_is_not_sent() -> None:
    provider = Scripted("m", choose("drop"))
    result = run(provider, batches(1, text="x" * 40_000))
    assert provider.calls == []
    assert result.trace[0]["events"][0]["outcome"] == "request_too_large"
    assert result.state["decided"][0][0]["decision"] == "keep"


def test_calls_get_the_node_timeout_bounded_by_the_remaining_budget() -> None:
    now = [0.0]
    provider = Scripted("m", writer("drop"))
    runtime = FlowRuntime({"count": lambda written, params: len(written)}, clock=lambda: now[0])
    runtime.run(flow(), {"batches": batches(1)}, {"p": ResolvedPolicy((provider,))})
    assert [c.timeout_s for c in provider.calls] == [7, 20]
    now[0] = 0.0
    provider.calls.clear()
    runtime.run(flow(budget_s=5), {"batches": batches(1)}, {"p": ResolvedPolicy((provider,))})
    assert [c.timeout_s for c in provider.calls] == [5, 5]


def test_no_call_is_made_once_the_flow_budget_is_spent() -> None:
    now = [0.0]

    def slow(call: ModelCall) -> ModelReply:
        now[0] += 50
        return choose("drop")(call)

    provider = Scripted("m", slow)
    runtime = FlowRuntime({"count": lambda written, params: len(written)}, clock=lambda: now[0])
    result = runtime.run(flow(), {"batches": batches(1, 1)}, {"p": ResolvedPolicy((provider,))})
    assert len(provider.calls) == 1
    assert result.trace[0]["events"][1]["outcome"] == "budget_exhausted"


def test_generation_output_tokens_are_the_nodes_limit_or_the_callers_smaller_one() -> None:
    provider = Scripted("m", writer("drop"))
    run(provider, batches(1))
    assert provider.calls[-1].max_tokens == 4096
    provider.calls.clear()
    run(provider, batches(1), max_output_tokens=300)
    assert provider.calls[-1].max_tokens == 300


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (ModelReply('{"out": [{"id": "b0r0", "text": "cut'), "invalid_json"),
        (ModelReply('{"out": [{"id": "b0r0", "text": "x"}]}', finish_reason="length"), "truncated"),
        (ModelReply('{"other": []}'), "invalid_shape"),
        (ModelReply('{"out": [{"id": "b0r0", "text": "   "}]}'), "missing"),
    ],
)
def test_unusable_generations_are_reported_per_record(reply: ModelReply, error: str) -> None:
    def answer(call: ModelCall) -> ModelReply:
        return choose("drop")(call) if call.kind == "decision" else reply

    result = run(Scripted("m", answer), batches(1))
    record = result.state["written"][0]
    assert record["generated"] is None and record["generation_error"] == error


def test_usage_is_aggregated_and_cost_is_null_when_any_call_has_unknown_cost() -> None:
    known = run(Scripted("m", choose("keep", cost=0.5)), batches(1, 1))
    assert (known.model_calls, known.prompt_tokens, known.cost_usd) == (2, 20, 1.0)
    unknown = run(Scripted("m", choose("keep", cost=None)), batches(1, 1))
    assert unknown.cost_usd is None


def test_a_flow_whose_node_reads_an_unknown_value_is_rejected() -> None:
    with pytest.raises(ValidationError, match="reads 'nothing'"):
        flow(nodes=[{"id": "a", "kind": "op", "op": "x", "inputs": ["nothing"], "output": "y"}])


def test_a_decide_node_default_must_be_one_of_its_choices() -> None:
    node = flow().nodes[0].model_dump()
    node["default"] = "maybe"
    with pytest.raises(ValidationError, match="default must be one of its choices"):
        flow(nodes=[node], result="decided")


def test_the_fingerprint_changes_with_the_definition() -> None:
    assert flow().fingerprint() == flow().fingerprint()
    assert flow().fingerprint() != flow(budget_s=39).fingerprint()


def test_an_unknown_op_is_refused_before_anything_runs() -> None:
    runtime = FlowRuntime({})
    with pytest.raises(ValueError, match="unknown op 'count'"):
        runtime.run(flow(), {"batches": []}, {"p": ResolvedPolicy(())})


def test_a_provider_that_crashes_or_returns_garbage_is_traced_and_falls_back() -> None:
    crashing = Scripted("crashing", lambda call: KeyError("oops"))
    garbage = Scripted("garbage", lambda call: {"text": "{}"})
    working = Scripted("working", writer("keep"))
    runtime = FlowRuntime({"count": lambda written, params: len(written)})
    policy = ResolvedPolicy((crashing, garbage, working))
    result = runtime.run(flow(), {"batches": batches(1)}, {"p": policy})
    outcomes = [(e["provider"], e["outcome"]) for e in result.trace[0]["events"]]
    assert outcomes == [
        ("crashing", "provider_crash"),
        ("garbage", "invalid_reply"),
        ("working", "ok"),
    ]
    assert result.cost_usd is None
