"""The model-provider protocol the flow runtime calls (``contextfuse_model_providers``)."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

import attrs

__all__ = ["ModelCall", "ModelProvider", "ModelReply", "ProviderError"]

CallKind = Literal["decision", "generation"]


@attrs.frozen
class ModelCall:
    """One request to a model.

    ``messages`` is the prompt in the OpenAI chat format, for providers that talk to a model;
    ``payload`` is the same request as structured data, for deterministic providers that
    decide without one. ``max_tokens`` bounds the reply and ``timeout_s`` its wall time.
    """

    kind: CallKind
    messages: tuple[dict[str, Any], ...]
    payload: dict[str, Any]
    max_tokens: int
    timeout_s: float


@attrs.frozen
class ModelReply:
    """A model's answer: its text (JSON expected), why it stopped, usage and cost.

    ``finish_reason == "length"`` means the reply was truncated. ``cost_usd`` is None when the
    provider cannot price the call.
    """

    text: str
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0


class ProviderError(Exception):
    """A model call failed (timeout, HTTP error, unreadable reply).

    ``cost_usd`` is what the failed attempt cost, None when unknown.
    """

    def __init__(self, message: str, *, cost_usd: float | None = None) -> None:
        super().__init__(message)
        self.cost_usd = cost_usd


@runtime_checkable
class ModelProvider(Protocol):
    """What a ``contextfuse_model_providers`` hook returns: a named model endpoint."""

    @property
    def name(self) -> str:
        """The name policies use to allow this provider (e.g. ``"offline"``)."""
        ...

    def complete(self, call: ModelCall) -> ModelReply:
        """Answer ``call`` within ``call.timeout_s``; raise ProviderError on failure."""
        ...
