"""The built-in ``offline`` model provider: deterministic decisions and extractive summaries.

It reads the structured ``payload`` of a call instead of a prompt, so compaction works with
no model at all and gives the same answer for the same transcript every time.
"""

from __future__ import annotations

import json
from typing import Any

from contextfuse.compaction.digest import digest
from contextfuse.flow.provider import ModelCall, ModelReply

__all__ = ["OfflineProvider"]


class OfflineProvider:
    """Decides from age, size and tool-output shape; summarizes by extraction.

    Decisions (only among an item's allowed choices):

    * nothing to shed (``signals.pressure`` is 0): keep;
    * the older half of the transcript, a tool result without errors whose output is data
      or a listing (json, listing, log), seen in full: archive;
    * at least ``summarize_min_bytes``: summarize;
    * otherwise keep.
    """

    name = "offline"

    def __init__(self, summarize_min_bytes: int = 512) -> None:
        self.summarize_min_bytes = summarize_min_bytes

    def complete(self, call: ModelCall) -> ModelReply:
        """Answer a decision or generation call from its payload."""
        if call.kind == "decision":
            rows = [
                {"id": item["id"], "choice": self._decide(item)} for item in call.payload["items"]
            ]
            return ModelReply(text=json.dumps({"decisions": rows}))
        summaries = [
            {"id": record["id"], "summary": summarize(record["text"], record.get("max_bytes"))}
            for record in call.payload["records"]
        ]
        return ModelReply(text=json.dumps({"summaries": summaries}))

    def _decide(self, item: dict[str, Any]) -> str:
        signals = item.get("signals", {})
        allowed = item["choices"]
        if signals.get("pressure", 1.0) <= 0:
            return "keep"
        if (
            "archive" in allowed
            and signals.get("age", 0) >= 0.5
            and signals.get("tool_results", 0) > 0
            and not signals.get("has_error")
            and signals.get("tool_output_shape") in ("json", "listing", "log")
        ):
            return "archive"
        if "summarize" in allowed and signals.get("bytes", 0) >= self.summarize_min_bytes:
            return "summarize"
        return "keep"


def summarize(text: str, max_bytes: int | None = None) -> str:
    """An extractive summary of rendered transcript units within ``max_bytes`` (see
    :func:`contextfuse.compaction.digest.digest`)."""
    return digest(text, max_bytes)
