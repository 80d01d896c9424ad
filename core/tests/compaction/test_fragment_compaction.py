"""Decision-guided compaction (the selective-compaction preset), per spec/fragment-compaction.md."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from contextfuse.compaction import CompactRequest, PolicyError, collect_providers, compact, preset
from contextfuse.compaction.transcript import json_bytes
from contextfuse.flow import ModelCall, ModelReply, ProviderError

Messages = list[dict[str, Any]]
OFFLINE = {"providers": ["offline"]}


class Choosing:
    """Decides ``choice`` for every item it may; generates with ``summary(record)``."""

    def __init__(self, choice: str, summary: Callable[[dict[str, Any]], Any] | None = None):
        self.name = "scripted"
        self.choice = choice
        self.summary = summary or (lambda record: "short summary")
        self.calls: list[ModelCall] = []

    def complete(self, call: ModelCall) -> ModelReply:
        self.calls.append(call)
        if call.kind == "decision":
            rows = [
                {"id": i["id"], "choice": self.choice if self.choice in i["choices"] else "keep"}
                for i in call.payload["items"]
            ]
            return ModelReply(json.dumps({"decisions": rows}))
        out = self.summary(call.payload["records"][0])
        if isinstance(out, (ModelReply, ProviderError)):
            if isinstance(out, ProviderError):
                raise out
            return out
        rows = [{"id": r["id"], "summary": out} for r in call.payload["records"]]
        return ModelReply(json.dumps({"summaries": rows}))


def run(messages: Messages, provider: Any = None, **fields: Any) -> dict[str, Any]:
    providers = collect_providers(None, [provider] if provider else [])
    policy = {"providers": [provider.name]} if provider else OFFLINE
    fields.setdefault("decision_policy_ir", policy)
    fields.setdefault("policy_ir", policy)
    return compact(CompactRequest(messages=messages, **fields), providers)


def test_the_smallest_offline_policies_run_the_selective_flow_with_no_model(
    transcript: Callable[..., Messages],
) -> None:
    result = run(transcript())
    report = result["compaction"]
    assert report["flow"] == "selective-compaction"
    assert report["output_bytes"] < report["original_bytes"]
    assert {f["action"] for f in report["fragments"]} >= {"summarize", "archive"}
    assert result["x_router"]["cost_usd"] == 0.0


def test_the_offline_providers_decisions_are_reported_as_its_own(
    transcript: Callable[..., Messages],
) -> None:
    fragments = run(transcript())["compaction"]["fragments"]
    assert {f["decision_source"] for f in fragments} == {"offline"}


def test_system_pinned_and_recent_messages_stay_verbatim(
    transcript: Callable[..., Messages],
) -> None:
    messages = transcript()
    out = run(messages, Choosing("archive"))["messages"]
    assert out[:2] == messages[:2]
    assert out[-7:] == messages[-7:]  # the last four units: three tool units and the answer


def test_every_message_before_the_first_change_is_unchanged(
    transcript: Callable[..., Messages],
) -> None:
    messages = transcript()
    result = run(messages)
    first = min(f["start"] for f in result["compaction"]["fragments"] if f["action"] != "keep")
    assert [json.dumps(m) for m in result["messages"][:first]] == [
        json.dumps(m) for m in messages[:first]
    ]


def test_fragments_report_start_inclusive_and_end_exclusive(
    transcript: Callable[..., Messages],
) -> None:
    fragments = run(transcript(5))["compaction"]["fragments"]
    assert [(f["start"], f["end"]) for f in fragments] == [(2, 4), (4, 6)]


def test_the_output_is_reassembled_in_original_order(transcript: Callable[..., Messages]) -> None:
    messages = transcript(10)
    out = run(messages, Choosing("summarize"))["messages"]
    markers = [m["content"] for m in out if "[contextfuse summary of messages" in str(m["content"])]
    starts = [int(text.split("messages ")[1].split("-")[0]) for text in markers]
    assert starts == sorted(starts) == [2, 4, 6, 8, 10, 12, 14]


def test_summaries_replace_units_with_a_marker_naming_the_original_messages(
    transcript: Callable[..., Messages],
) -> None:
    out = run(transcript(5), Choosing("summarize"))["messages"]
    assert out[2] == {
        "role": "assistant",
        "content": "[contextfuse summary of messages 2-3]\nshort summary",
    }


def test_archived_units_are_removed(transcript: Callable[..., Messages]) -> None:
    messages = transcript(6)
    out = run(messages, Choosing("archive"))["messages"]
    assert len(out) == len(messages) - 2 * 3


def test_no_generation_call_is_made_when_nothing_is_to_be_summarized(
    transcript: Callable[..., Messages],
) -> None:
    provider = Choosing("archive")
    result = run(transcript(6), provider)
    assert {c.kind for c in provider.calls} == {"decision"}
    node = next(
        n for n in result["x_router"]["decision_trace"]["flow_nodes"] if n["id"] == "summarize"
    )
    assert node["status"] == "skipped"


@pytest.mark.parametrize(
    ("summary", "reason"),
    [
        (lambda record: ProviderError("HTTP 500"), "provider_error"),
        (lambda record: ModelReply('{"summaries": [', finish_reason="length"), "truncated"),
        (lambda record: ModelReply("not json"), "invalid_json"),
        (lambda record: "x" * 5000, "expanded"),
    ],
)
def test_a_failed_truncated_invalid_or_expanded_summary_keeps_the_original_unit(
    transcript: Callable[..., Messages], summary: Any, reason: str
) -> None:
    messages = transcript(5)
    result = run(messages, Choosing("summarize", summary))
    assert result["messages"] == messages
    assert {(f["action"], f["reason"]) for f in result["compaction"]["fragments"]} == {
        ("keep", reason)
    }


def test_archive_is_not_allowed_when_the_classifier_saw_only_an_excerpt(
    transcript: Callable[..., Messages],
) -> None:
    provider = Choosing("archive")
    result = run(transcript(5, output=lambda n: "data line\n" * 1000), provider)
    items = [i for c in provider.calls for i in c.payload["items"]]
    assert all("[... excerpt" in i["text"] and "archive" not in i["choices"] for i in items)
    assert {f["action"] for f in result["compaction"]["fragments"]} == {"keep"}


def test_a_unit_too_large_to_summarize_whole_is_kept_and_reported(
    transcript: Callable[..., Messages],
) -> None:
    result = run(transcript(5, output=lambda n: "y" * 60_000 if n == 0 else "ok"))
    assert {
        "start": 2,
        "end": 4,
        "reason": "oversized_unit",
        "decision": None,
        "action": "keep",
    } in (result["compaction"]["fragments"])
    assert result["compaction"]["limits"][0]["reason"] == "oversized_unit"


def test_batches_hold_at_most_eight_fragments_and_one_decision_call_each(
    transcript: Callable[..., Messages],
) -> None:
    provider = Choosing("keep")
    run(transcript(40, output=lambda n: "line\n" * 20), provider)
    sizes = [len(c.payload["items"]) for c in provider.calls]
    assert max(sizes) == 8 and sum(sizes) == 37


def test_decision_requests_fit_32_kb_and_summary_inputs_50_kb(
    transcript: Callable[..., Messages],
) -> None:
    provider = Choosing("summarize")
    run(transcript(30, output=lambda n: "é data " * (300 + 400 * (n % 7))), provider)
    for call in provider.calls:
        size = len(json.dumps(call.payload, ensure_ascii=True, separators=(",", ":")))
        assert size <= (32 * 1024 if call.kind == "decision" else 50 * 1024)
        assert len(call.messages[1]["content"]) == size and call.messages[1]["content"].isascii()


def test_at_most_128_fragments_are_selectable_and_the_rest_are_kept_with_a_reason(
    transcript: Callable[..., Messages],
) -> None:
    provider = Choosing("archive")
    result = run(transcript(140, output=lambda n: "ok"), provider)
    classified = sum(len(c.payload["items"]) for c in provider.calls)
    assert classified == 128
    reasons = {limit["reason"] for limit in result["compaction"]["limits"]}
    assert reasons == {"fragment_limit"}


def test_at_most_32_batches_are_classified(transcript: Callable[..., Messages]) -> None:
    provider = Choosing("keep")
    result = run(transcript(60, output=lambda n: "z" * 24_000), provider)
    assert len(provider.calls) <= 32
    assert "batch_limit" in {limit["reason"] for limit in result["compaction"]["limits"]}


def test_the_flow_input_stays_below_900_kb(transcript: Callable[..., Messages]) -> None:
    provider = Choosing("keep")
    result = run(transcript(120, output=lambda n: "w" * 12_000), provider)
    sent = sum(len(i["text"]) for c in provider.calls for i in c.payload["items"])
    assert sent < 900 * 1024
    assert "flow_input_limit" in {limit["reason"] for limit in result["compaction"]["limits"]}


def test_the_target_never_overrides_protected_content(transcript: Callable[..., Messages]) -> None:
    messages = transcript(6)
    result = run(messages, Choosing("archive"), target_ratio=0.0001)
    report = result["compaction"]
    assert report["target_met"] is False
    assert report["output_bytes"] >= report["protected_bytes"]
    assert result["messages"][:2] == messages[:2]


def test_the_report_gives_sizes_target_and_flow_fingerprint(
    transcript: Callable[..., Messages],
) -> None:
    messages = transcript()
    report = run(messages, target_ratio=0.5)["compaction"]
    assert report["original_bytes"] == json_bytes(messages)
    assert report["output_bytes"] == json_bytes(run(messages, target_ratio=0.5)["messages"])
    assert report["target_bytes"] == report["original_bytes"] // 2
    assert report["target_met"] == (report["output_bytes"] <= report["target_bytes"])
    assert report["flow_fingerprint"] == preset("selective-compaction").fingerprint()


def test_nothing_to_classify_means_no_cost_or_usage_in_the_response() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    router = run(messages)["x_router"]
    assert "cost_usd" not in router and "usage" not in router
    assert router["decision_trace"]["flow_nodes"]


def test_model_calls_report_usage_and_cost(transcript: Callable[..., Messages]) -> None:
    router = run(transcript())["x_router"]
    assert router["cost_usd"] == 0.0
    assert router["usage"]["calls"] >= 2


def test_offline_compaction_is_deterministic(transcript: Callable[..., Messages]) -> None:
    first, second = run(transcript()), run(transcript())
    assert first["messages"] == second["messages"]
    assert first["compaction"]["fragments"] == second["compaction"]["fragments"]


def test_explicit_pins_keep_those_messages_and_unpin_other_user_messages() -> None:
    messages = [
        {"role": "user", "content": "the real instruction"},
        *[{"role": "user", "content": f"observation {i}: " + "data " * 200} for i in range(8)],
        {"role": "assistant", "content": "ok"},
    ]
    out = run(messages, Choosing("archive"), pinned_indices=[0])["messages"]
    assert out[0] == messages[0] and len(out) < len(messages)


def test_a_policy_naming_an_unavailable_provider_is_refused() -> None:
    messages = [{"role": "user", "content": "hi"}]
    request = CompactRequest(messages=messages, decision_policy_ir={"providers": ["gpt-9"]})
    with pytest.raises(PolicyError, match="gpt-9") as caught:
        compact(request, collect_providers(None))
    assert caught.value.field == "decision_policy_ir.providers"


@pytest.mark.parametrize("ratio", [0, -0.1, 1.5])
def test_target_ratio_must_be_in_zero_to_one(ratio: float) -> None:
    with pytest.raises(ValidationError, match="target_ratio"):
        CompactRequest(messages=[{"role": "user", "content": "x"}], target_ratio=ratio)


def test_a_policy_must_name_its_providers() -> None:
    with pytest.raises(ValidationError, match="providers"):
        CompactRequest(messages=[{"role": "user", "content": "x"}], decision_policy_ir={})


def test_pinned_indices_must_point_into_the_transcript() -> None:
    with pytest.raises(ValidationError, match="outside the 1 messages"):
        CompactRequest(messages=[{"role": "user", "content": "x"}], pinned_indices=[3])


def test_compacting_a_compacted_transcript_moves_on_to_newer_units(
    transcript: Callable[..., Messages],
) -> None:
    messages = transcript(20, output=lambda n: "line of output\n" * 60)
    once = run(messages, Choosing("summarize"))
    markers = [m for m in once["messages"] if "[contextfuse summary" in str(m["content"])]
    twice = run([*once["messages"], *transcript(12)[2:]], Choosing("summarize"))
    assert all(m in twice["messages"] for m in markers)
    assert min(f["start"] for f in twice["compaction"]["fragments"]) > len(markers) + 1
