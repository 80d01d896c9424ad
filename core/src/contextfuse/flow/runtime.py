"""The flow runtime: runs a FlowDefinition's nodes in order within one time budget.

Model calls go to the providers a policy allows, in the policy's order; a failed call falls
back to the next provider, then to the node's deterministic default. Every call is traced
with its outcome, and usage and cost are aggregated over every attempted call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from contextfuse.flow.definition import FlowDefinition, NodeSpec
from contextfuse.flow.provider import (
    CallKind,
    ModelCall,
    ModelProvider,
    ModelReply,
    ProviderError,
)

__all__ = ["FlowRun", "FlowRuntime", "Operation", "ResolvedPolicy", "ascii_json_size"]

Operation = Callable[..., Any]
Record = dict[str, Any]
Batch = list[Record]


@attrs.frozen
class ResolvedPolicy:
    """A policy bound to the providers it allows (in preference order)."""

    providers: tuple[ModelProvider, ...]
    max_output_tokens: int | None = None


@attrs.define
class _Ledger:
    """Usage and cost of every attempted model call."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0

    def add(self, cost: float | None, prompt: int = 0, completion: int = 0) -> None:
        self.calls += 1
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + cost


@attrs.frozen
class FlowRun:
    """The outcome of a flow: its state, per-node trace, and model usage and cost.

    ``model_calls`` is 0 when no model node executed a call; ``cost_usd`` is None when any
    attempted call's cost is unknown.
    """

    state: dict[str, Any]
    trace: list[dict[str, Any]]
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    fingerprint: str

    @property
    def result(self) -> Any:
        """The value the flow names as its result."""
        return self.state["__result__"]


class FlowRuntime:
    """Runs flows with caller-supplied operations and policies.

    :param operations: op name -> pure function, for ``op`` nodes.
    :param clock: monotonic seconds (injectable so budgets can be tested).
    """

    def __init__(
        self,
        operations: Mapping[str, Operation],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._operations = dict(operations)
        self._clock = clock

    def run(
        self,
        flow: FlowDefinition,
        inputs: Mapping[str, Any],
        policies: Mapping[str, ResolvedPolicy],
    ) -> FlowRun:
        """Run every node of ``flow`` on ``inputs``; model nodes use ``policies`` by name."""
        missing = [name for name in flow.inputs if name not in inputs]
        if missing:
            raise ValueError(f"flow {flow.name!r} needs inputs {missing}")
        for node in flow.nodes:
            if node.kind == "op" and node.op not in self._operations:
                raise ValueError(f"flow {flow.name!r} node {node.id!r}: unknown op {node.op!r}")
            if node.policy is not None and node.policy not in policies:
                raise ValueError(f"flow {flow.name!r} node {node.id!r}: no policy {node.policy!r}")
        state: dict[str, Any] = dict(inputs)
        ledger = _Ledger()
        trace: list[dict[str, Any]] = []
        deadline = self._clock() + flow.budget_s
        for node in flow.nodes:
            started = self._clock()
            entry: dict[str, Any] = {"id": node.id, "kind": node.kind}
            args = [_lookup(state, name) for name in node.inputs]
            if node.kind == "op":
                params = {**flow.params, **node.params}
                state[node.output] = self._operations[str(node.op)](*args, params=params)
                entry["status"] = "ok"
            elif node.kind == "select":
                state[node.output] = _select(args[0], node.where)
                entry["status"] = "ok"
                entry["records"] = sum(len(b) for b in state[node.output])
            else:
                policy = policies[str(node.policy)]
                run = _ModelNode(node, policy, ledger, self._clock, deadline, entry)
                state[node.output] = run.run(args[0])
            entry["duration_ms"] = round((self._clock() - started) * 1000, 3)
            trace.append(entry)
        state["__result__"] = state[flow.result]
        return FlowRun(
            state=state,
            trace=trace,
            model_calls=ledger.calls,
            prompt_tokens=ledger.prompt_tokens,
            completion_tokens=ledger.completion_tokens,
            cost_usd=ledger.cost_usd,
            fingerprint=flow.fingerprint(),
        )


def _lookup(state: Mapping[str, Any], dotted: str) -> Any:
    head, *rest = dotted.split(".")
    value = state[head]
    for key in rest:
        value = value[key]
    return value


def _select(batches: Sequence[Batch], where: Mapping[str, str]) -> list[Batch]:
    chosen = []
    for batch in batches:
        kept = [r for r in batch if all(r.get(k) == v for k, v in where.items())]
        if kept:
            chosen.append(kept)
    return chosen


def ascii_json_size(value: Any) -> int:
    """Bytes of ``value`` as compact ASCII JSON (the bound model requests are held to)."""
    return len(json.dumps(value, ensure_ascii=True, separators=(",", ":")))


class _ModelNode:
    """One decide or generate node: a call per batch, validated, with fallbacks traced."""

    def __init__(
        self,
        node: NodeSpec,
        policy: ResolvedPolicy,
        ledger: _Ledger,
        clock: Callable[[], float],
        deadline: float,
        entry: dict[str, Any],
    ) -> None:
        self.node = node
        self.policy = policy
        self.ledger = ledger
        self.clock = clock
        self.deadline = deadline
        self.entry = entry
        self.events: list[dict[str, Any]] = []

    def run(self, batches: Sequence[Batch]) -> Any:
        out: list[Any] = []
        for index, batch in enumerate(batches):
            if self.node.kind == "decide":
                out.append(self._decide(index, batch))
            else:
                out.extend(self._generate(index, batch))
        calls = sum(1 for e in self.events if "provider" in e)
        self.entry["status"] = (
            "skipped"
            if not batches
            else ("ok" if all(e["outcome"] == "ok" for e in self.events) else "fallback")
        )
        self.entry["batches"] = len(batches)
        self.entry["calls"] = calls
        self.entry["events"] = self.events
        return out

    # ---- decide -----------------------------------------------------------------------------

    def _decide(self, index: int, batch: Batch) -> Batch:
        node = self.node
        items = [
            {
                "id": r["id"],
                "choices": list(r.get("choices") or node.choices),
                "text": r[node.text_key],
                "signals": r.get("signals", {}),
            }
            for r in batch
        ]
        payload = {"question": node.question, "choices": list(node.choices), "items": items}
        prompt = (
            f"{node.question}\nFor every item choose one of its allowed choices. Reply with "
            'JSON only: {"decisions": [{"id": "<item id>", "choice": "<choice>"}]}'
        )
        answers = self._call(index, "decision", payload, prompt, self._decision_tokens(batch))
        answered_by = self.events[-1].get("provider", "default") if answers is not None else ""
        parsed = _decisions(answers) if answers is not None else {}
        if answers is not None and not parsed:
            self.events[-1]["outcome"] = "invalid_reply"
        decided: Batch = []
        invalid = 0
        for record, item in zip(batch, items, strict=True):
            choice = parsed.get(record["id"])
            ok = choice in item["choices"]
            invalid += choice is not None and not ok
            decided.append(
                {
                    **record,
                    "decision": choice if ok else node.default,
                    "decision_source": answered_by if ok else "default",
                }
            )
        if answers is not None and (invalid or len(parsed) < len(batch)):
            self.events[-1]["detail"] = (
                f"{invalid} invalid and {len(batch) - len(parsed)} missing choices defaulted "
                f"to {node.default!r}"
            )
        return decided

    def _decision_tokens(self, batch: Batch) -> int:
        # A choice per item plus JSON punctuation; generous so short replies never truncate.
        return 64 + 48 * len(batch)

    # ---- generate ---------------------------------------------------------------------------

    def _generate(self, index: int, batch: Batch) -> Batch:
        node = self.node
        shape = node.response
        assert shape is not None  # validated by NodeSpec
        size_key = node.limit_key
        records = [
            {
                "id": r["id"],
                "text": r[node.text_key],
                **({size_key: r[size_key]} if size_key is not None and size_key in r else {}),
            }
            for r in batch
        ]
        payload = {"instruction": node.instruction, "records": records}
        bound = (
            f" Keep each value within its record's {size_key} (UTF-8 bytes)." if size_key else ""
        )
        prompt = (
            f"{node.instruction}{bound}\nReply with JSON only: "
            f'{{"{shape.list_key}": [{{"{shape.id_key}": "<record id>", '
            f'"{shape.value_key}": "<text>"}}]}}'
        )
        limit = min(node.max_output_tokens or 1, self.policy.max_output_tokens or 1 << 30)
        text = self._call(index, "generation", payload, prompt, limit)
        values: dict[str, str] = {}
        error: str | None = self.events[-1]["outcome"] if self.events else "failed"
        if text is not None:
            values, error = _generated(text, shape.list_key, shape.id_key, shape.value_key)
            if error is not None:
                self.events[-1]["outcome"] = error
        out: Batch = []
        for record in batch:
            value = values.get(record["id"])
            if value is None:
                out.append({**record, "generated": None, "generation_error": error or "missing"})
            else:
                out.append({**record, "generated": value, "generation_error": None})
        return out

    # ---- calls ------------------------------------------------------------------------------

    def _call(
        self, index: int, kind: CallKind, payload: dict[str, Any], prompt: str, max_tokens: int
    ) -> str | None:
        """The reply text of the first allowed provider that answers, else None (traced)."""
        node = self.node
        size = ascii_json_size(payload)
        if node.max_request_bytes is not None and size > node.max_request_bytes:
            self.events.append(
                {
                    "batch": index,
                    "outcome": "request_too_large",
                    "detail": f"{size} bytes > {node.max_request_bytes}",
                }
            )
            return None
        messages = (
            {"role": "system", "content": prompt},
            {"role": "user", "content": json.dumps(payload, separators=(",", ":"))},
        )
        for provider in self.policy.providers:
            remaining = self.deadline - self.clock()
            if remaining <= 0:
                self.events.append({"batch": index, "outcome": "budget_exhausted"})
                return None
            timeout = min(float(node.timeout_s or remaining), remaining)
            call = ModelCall(kind, messages, payload, max_tokens, timeout)
            started = self.clock()
            event: dict[str, Any] = {"batch": index, "provider": provider.name}
            self.events.append(event)
            try:
                reply: object = provider.complete(call)
            except ProviderError as exc:
                self.ledger.add(exc.cost_usd)
                event.update(outcome="provider_error", detail=str(exc))
                continue
            except Exception as exc:  # a plugin's bug must not fail the flow: fall back
                self.ledger.add(None)
                event.update(outcome="provider_crash", detail=f"{type(exc).__name__}: {exc}")
                continue
            finally:
                event["duration_ms"] = round((self.clock() - started) * 1000, 3)
            if not isinstance(reply, ModelReply) or not isinstance(reply.text, str):
                self.ledger.add(None)
                event.update(outcome="invalid_reply", detail=f"not a ModelReply: {reply!r:.80}")
                continue
            self.ledger.add(reply.cost_usd, reply.prompt_tokens, reply.completion_tokens)
            event["usage"] = {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
            }
            if reply.finish_reason == "length":
                event.update(outcome="truncated", detail=f"reply hit {max_tokens} tokens")
                continue
            event["outcome"] = "ok"
            return reply.text
        return None


def _decisions(text: str) -> dict[str, str]:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    rows = data.get("decisions") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return {}
    return {
        str(row["id"]): row["choice"]
        for row in rows
        if isinstance(row, dict) and isinstance(row.get("choice"), str) and "id" in row
    }


def _generated(
    text: str, list_key: str, id_key: str, value_key: str
) -> tuple[dict[str, str], str | None]:
    """Per-id values of a generation reply, and why none could be read (None: read)."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}, "invalid_json"
    rows = data.get(list_key) if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return {}, "invalid_shape"
    values = {
        str(row[id_key]): row[value_key]
        for row in rows
        if isinstance(row, dict)
        and id_key in row
        and isinstance(row.get(value_key), str)
        and row[value_key].strip()
    }
    return values, None
