"""``compact()``: run a compaction preset over a transcript and describe what it did."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from typing import Any

from contextfuse.compaction.operations import OPERATIONS
from contextfuse.compaction.providers import resolve_policy
from contextfuse.compaction.request import CompactRequest
from contextfuse.compaction.transcript import json_bytes
from contextfuse.flow.definition import FlowDefinition
from contextfuse.flow.provider import ModelProvider
from contextfuse.flow.runtime import FlowRuntime

__all__ = ["compact", "preset"]


@cache
def preset(name: str) -> FlowDefinition:
    """A compaction preset shipped with contextfuse (``selective-compaction``,
    ``single-summary``), validated."""
    text = (resources.files("contextfuse.compaction") / "presets" / f"{name}.json").read_text(
        encoding="utf-8"
    )
    return FlowDefinition.model_validate_json(text)


def compact(
    request: CompactRequest,
    providers: Mapping[str, ModelProvider],
    *,
    clock: Callable[[], float] | None = None,
) -> dict[str, Any]:
    """Compact ``request.messages``; the response's ``messages``, ``compaction`` and ``x_router``.

    Without ``decision_policy_ir`` the single-summary preset runs, with it the
    selective-compaction preset.

    :raises PolicyError: a policy names a provider that is not in ``providers``.
    """
    policies = {"generation": resolve_policy(request.policy_ir, providers, "policy_ir")}
    if request.decision_policy_ir is not None:
        policies["decision"] = resolve_policy(
            request.decision_policy_ir, providers, "decision_policy_ir"
        )
        flow = preset("selective-compaction")
    else:
        flow = preset("single-summary")
    runtime = FlowRuntime(OPERATIONS) if clock is None else FlowRuntime(OPERATIONS, clock=clock)
    run = runtime.run(
        flow,
        {
            "messages": request.messages,
            "pinned_indices": request.pinned_indices,
            "target_ratio": request.target_ratio,
        },
        policies,
    )
    result = run.result
    prepared = run.state["prepared"]
    original = int(prepared["original_bytes"])
    output = json_bytes(result["messages"])
    target = math.floor(original * request.target_ratio)
    router: dict[str, Any] = {"decision_trace": {"flow": flow.name, "flow_nodes": run.trace}}
    if run.model_calls:
        router["cost_usd"] = run.cost_usd
        router["usage"] = {
            "calls": run.model_calls,
            "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens,
            "total_tokens": run.prompt_tokens + run.completion_tokens,
        }
    return {
        "messages": result["messages"],
        "compaction": {
            "flow": flow.name,
            "flow_fingerprint": run.fingerprint,
            "original_bytes": original,
            "output_bytes": output,
            "target_ratio": request.target_ratio,
            "target_bytes": target,
            "target_met": output <= target,
            "target_note": _target_note(
                output, target, int(prepared["protected_bytes"]), result["fragments"]
            ),
            "ratio": round(output / original, 6),
            "protected_bytes": int(prepared["protected_bytes"]),
            "fragments": result["fragments"],
            "limits": prepared["limits"],
        },
        "x_router": router,
    }


def _target_note(
    output: int, target: int, protected: int, fragments: list[dict[str, Any]]
) -> str | None:
    """Why the output is over its target (None when it is not)."""
    if output <= target:
        return None
    if protected >= target:
        return (
            f"the protected messages alone (system, developer and pinned messages, the most "
            f"recent units) are {protected:,} bytes, over the target of {target:,}"
        )
    failed = sorted({f["reason"] for f in fragments if f.get("action") == "keep" and "reason" in f})
    if failed and all(f.get("action") == "keep" for f in fragments):
        return f"no summary replaced the old messages ({', '.join(failed)})"
    return (
        f"besides the {protected:,} protected bytes the output keeps {output - protected:,} "
        f"(the failures, errors, changed files and decisions of the summaries, and units kept "
        f"whole) where the target of {target:,} left {target - protected:,}"
    )
