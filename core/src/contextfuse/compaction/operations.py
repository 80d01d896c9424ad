"""The pure operations the compaction presets name in their ``op`` nodes.

Each takes flow state values and ``params`` (the preset's parameters) and returns new
state; none calls a model. The flow runtime knows them only by name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from contextfuse.compaction.transcript import (
    SUMMARY_MARKER,
    Unit,
    group_units,
    json_bytes,
    render_unit,
)
from contextfuse.flow.runtime import Operation, ascii_json_size

__all__ = ["OPERATIONS", "excerpt", "signals_of"]

Message = Mapping[str, Any]
_ERROR_LINE = re.compile(r"error|exception|traceback|fail|fatal|denied|not found", re.I)
#: A summary marker's bytes besides its summary: the role, the header and the JSON punctuation.
_MARKER_BYTES = json_bytes({"role": "assistant", "content": f"{SUMMARY_MARKER}00000-00000]\n"})


def units(messages: Sequence[Message], pinned: Sequence[int] | None, *, params: Any) -> list[Unit]:
    """The transcript's units, protected ones marked."""
    return group_units(messages, pinned, int(params["recent_units"]))


def excerpt(text: str, max_ascii_bytes: int) -> str:
    """``text`` if its ASCII-JSON form fits ``max_ascii_bytes``, else its head and tail that do."""
    if ascii_json_size(text) <= max_ascii_bytes:
        return text
    keep = max_ascii_bytes // 2
    marker = "\n[... excerpt: middle omitted ...]\n"
    while keep > 0:
        half = keep // 2
        candidate = text[:half] + marker + text[len(text) - half :]
        if ascii_json_size(candidate) <= max_ascii_bytes:
            return candidate
        keep = int(keep * 0.8)
    return marker.strip()


def signals_of(messages: Sequence[Message], unit: Unit, text: str) -> dict[str, Any]:
    """Simple, deterministic facts about a unit for a decision policy."""
    roles = [messages[k].get("role") for k in range(unit.start, unit.end)]
    tool_text = "\n".join(
        str(messages[k].get("content") or "")
        for k in range(unit.start, unit.end)
        if messages[k].get("role") == "tool"
    )
    return {
        "age": round((len(messages) - unit.start) / len(messages), 4),
        "bytes": unit.bytes,
        "messages": unit.end - unit.start,
        "tool_results": roles.count("tool"),
        "tool_output_lines": tool_text.count("\n") + 1 if tool_text else 0,
        "tool_output_shape": _shape(tool_text),
        "has_error": bool(_ERROR_LINE.search(tool_text or text)),
    }


def _shape(text: str) -> str:
    """What a tool's output looks like: none, json, listing, log or prose."""
    stripped = text.strip()
    if not stripped:
        return "none"
    if stripped[0] in "[{":
        return "json"
    lines = stripped.splitlines()
    if len(lines) >= 5:
        words = sum(len(line.split()) for line in lines) / len(lines)
        return "listing" if words <= 3 else "log"
    return "prose"


def prepare_selective(
    messages: Sequence[Message],
    all_units: Sequence[Unit],
    target_ratio: float,
    *,
    params: Any,
) -> dict[str, Any]:
    """Bounded batches of the compactable units, oldest first, and why others were left out.

    A batch holds at most ``batch_size`` records whose decision request fits
    ``decision_request_bytes`` and whose summary inputs fit ``summary_input_bytes``; the
    model sees an excerpt of a unit too large for its share of a decision request, and may
    not archive what it saw only in part. At most ``max_fragments`` records, ``max_batches``
    batches and ``max_flow_input_bytes`` of records in all.
    """
    batch_size = int(params["batch_size"])
    overhead = int(params["request_overhead_bytes"])
    decision_cap = (int(params["decision_request_bytes"]) - overhead) // batch_size
    summary_cap = int(params["summary_input_bytes"]) - overhead
    original = json_bytes(list(messages))
    protected = sum(u.bytes for u in all_units if u.protected)
    selectable = [(i, u) for i, u in enumerate(all_units) if not u.protected]
    shed = max(0, original - math.floor(original * target_ratio))
    selectable_bytes = max(1, sum(u.bytes for _, u in selectable))
    pressure = min(1.0, shed / selectable_bytes)
    # Each summary's share of the room the target leaves beside the protected units.
    room = max(0, math.floor(original * target_ratio) - protected)
    minimum = int(params["min_summary_bytes"])
    limits: list[dict[str, Any]] = []
    batches: list[list[dict[str, Any]]] = []
    batch: list[dict[str, Any]] = []
    batch_summary_bytes = flow_bytes = records = 0
    for index, unit in selectable:
        text = render_unit(messages, unit)
        summary_size = ascii_json_size({"id": f"u{index}", "text": text})
        shown = excerpt(text, decision_cap)
        partial = shown != text
        reason = ""
        if partial and summary_size > summary_cap:
            reason = "oversized_unit"
        elif records >= int(params["max_fragments"]):
            reason = "fragment_limit"
        elif flow_bytes + summary_size + ascii_json_size(shown) >= int(
            params["max_flow_input_bytes"]
        ):
            reason = "flow_input_limit"
        if (
            not reason
            and batch
            and (
                len(batch) >= batch_size
                or batch_summary_bytes + summary_size > summary_cap
                or ascii_json_size([r["excerpt"] for r in batch] + [shown])
                > decision_cap * batch_size
            )
        ):
            batches.append(batch)
            batch, batch_summary_bytes = [], 0
        if not reason and len(batches) >= int(params["max_batches"]):
            reason = "batch_limit"
        if reason:
            limits.append({"start": unit.start, "end": unit.end, "reason": reason})
            continue
        choices = ["keep"]
        if summary_size <= summary_cap:
            choices.append("summarize")
        if not partial:
            choices.append("archive")
        signals = signals_of(messages, unit, text)
        signals["pressure"] = round(pressure, 4)
        batch.append(
            {
                "id": f"u{index}",
                "unit": index,
                "text": text,
                "max_bytes": max(minimum, room * unit.bytes // selectable_bytes),
                "excerpt": shown,
                "choices": choices,
                "signals": signals,
            }
        )
        batch_summary_bytes += summary_size
        flow_bytes += summary_size + ascii_json_size(shown)
        records += 1
    if batch:
        batches.append(batch)
    return {
        "batches": batches,
        "limits": limits,
        "original_bytes": original,
        "protected_bytes": protected,
    }


def prepare_single(
    messages: Sequence[Message],
    all_units: Sequence[Unit],
    target_ratio: float,
    *,
    params: Any,
) -> dict[str, Any]:
    """The compactable units as records of whole units, each within a summary request.

    One batch per record, oldest first, at most ``max_chunks``; the oldest units beyond that
    share one record as an excerpt (as does a unit too large for a request alone). Each
    record's ``max_bytes`` is its share of the room the target leaves beside the protected
    units and the marker.
    """
    selectable = [(i, u) for i, u in enumerate(all_units) if not u.protected]
    cap = int(params["summary_input_bytes"]) - int(params["request_overhead_bytes"])
    original = json_bytes(list(messages))
    protected = sum(u.bytes for u in all_units if u.protected)
    texts = [render_unit(messages, u) for _, u in selectable]
    chunks: list[list[str]] = []
    size = cap  # start a new chunk at once
    for text in texts:
        needed = ascii_json_size(text)
        if chunks and size + needed <= cap:
            chunks[-1].append(text)
            size += needed
        else:
            chunks.append([text])
            size = needed
    limit = int(params["max_chunks"])
    if len(chunks) > limit:  # the oldest ones share the first record, as an excerpt
        merged = len(chunks) - limit + 1
        chunks = [[text for chunk in chunks[:merged] for text in chunk], *chunks[merged:]]
    room = math.floor(original * target_ratio) - protected - _MARKER_BYTES
    total = max(1, sum(len(t) for t in texts))
    minimum = int(params["min_summary_bytes"])
    batches = []
    for number, chunk in enumerate(chunks):
        text = "\n".join(chunk)
        share = max(minimum // len(chunks), room * len(text) // total)
        batches.append([{"id": f"part{number}", "text": excerpt(text, cap), "max_bytes": share}])
    return {
        "batches": batches,
        "limits": [],
        "original_bytes": original,
        "protected_bytes": protected,
        "units": [i for i, _ in selectable],
    }


def _marker(messages: Sequence[Message], start: int, end: int, summary: str) -> dict[str, Any]:
    role = messages[start].get("role")
    return {
        "role": "user" if role == "user" else "assistant",
        "content": f"{SUMMARY_MARKER}{start}-{end - 1}]\n{summary}",
    }


def reassemble_selective(
    messages: Sequence[Message],
    all_units: Sequence[Unit],
    prepared: Mapping[str, Any],
    decisions: Sequence[Sequence[Mapping[str, Any]]],
    summaries: Sequence[Mapping[str, Any]],
    *,
    params: Any,
) -> dict[str, Any]:
    """Apply validated summaries and removals in original order; report every fragment."""
    generated = {s["unit"]: s for s in summaries}
    replacement: dict[int, dict[str, Any] | None] = {}
    fragments: list[dict[str, Any]] = []
    for record in (r for batch in decisions for r in batch):
        unit = all_units[record["unit"]]
        entry = {
            "start": unit.start,
            "end": unit.end,
            "decision": record["decision"],
            "decision_source": record["decision_source"],
            "action": "keep",
        }
        if record["decision"] == "archive":
            replacement[record["unit"]] = None
            entry["action"] = "archive"
        elif record["decision"] == "summarize":
            outcome = generated.get(record["unit"], {})
            text = outcome.get("generated")
            marker = _marker(messages, unit.start, unit.end, text) if text else None
            if marker is None:
                entry["reason"] = outcome.get("generation_error") or "failed"
            elif json_bytes(marker) >= unit.bytes:
                entry["reason"] = "expanded"
            else:
                replacement[record["unit"]] = marker
                entry["action"] = "summarize"
        fragments.append(entry)
    for limit in prepared["limits"]:
        fragments.append({**limit, "decision": None, "action": "keep"})
    fragments.sort(key=lambda f: f["start"])
    out: list[Any] = []
    for index, unit in enumerate(all_units):
        if index not in replacement:
            out.extend(messages[unit.start : unit.end])
        elif replacement[index] is not None:
            out.append(replacement[index])
    return {"messages": out, "fragments": fragments}


def reassemble_single(
    messages: Sequence[Message],
    all_units: Sequence[Unit],
    prepared: Mapping[str, Any],
    summaries: Sequence[Mapping[str, Any]],
    *,
    params: Any,
) -> dict[str, Any]:
    """Replace every compactable unit with one summary (the records' summaries in order) at
    the first one's place, if every record was summarized and the whole is smaller."""
    chosen = list(prepared["units"])
    if not chosen:
        return {"messages": list(messages), "fragments": []}
    first, last = all_units[chosen[0]], all_units[chosen[-1]]
    parts = [s.get("generated") for s in summaries]
    failed = [s.get("generation_error") or "failed" for s in summaries if not s.get("generated")]
    text = "\n".join(str(p) for p in parts) if parts and not failed else None
    reason = failed[0] if failed else "failed"
    marker = _marker(messages, first.start, last.end, text) if text else None
    if marker is not None and json_bytes(marker) >= sum(all_units[i].bytes for i in chosen):
        marker, reason = None, "expanded"
    fragments = [
        {
            "start": all_units[i].start,
            "end": all_units[i].end,
            "decision": "summarize",
            "action": "summarize" if marker else "keep",
            **({} if marker else {"reason": reason}),
        }
        for i in chosen
    ]
    if marker is None:
        return {"messages": list(messages), "fragments": fragments}
    out: list[Any] = []
    dropped = set(chosen)
    for index, unit in enumerate(all_units):
        if index == chosen[0]:
            out.append(marker)
        elif index not in dropped:
            out.extend(messages[unit.start : unit.end])
    return {"messages": out, "fragments": fragments}


OPERATIONS: dict[str, Operation] = {
    "compaction.units": units,
    "compaction.prepare_selective": prepare_selective,
    "compaction.prepare_single": prepare_single,
    "compaction.reassemble_selective": reassemble_selective,
    "compaction.reassemble_single": reassemble_single,
}
