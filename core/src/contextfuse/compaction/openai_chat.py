"""A model provider for any OpenAI-compatible ``/chat/completions`` endpoint, over httpx.

Configured by arguments or the environment: ``CONTEXTFUSE_OPENAI_BASE_URL`` (default
``https://api.openai.com/v1``), ``CONTEXTFUSE_OPENAI_MODEL`` (required to enable it),
``CONTEXTFUSE_OPENAI_API_KEY`` (else ``OPENAI_API_KEY``), and optional prices
``CONTEXTFUSE_OPENAI_INPUT_USD_PER_MTOK`` / ``..._OUTPUT_USD_PER_MTOK``; without prices a
call's cost is unknown (None).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from contextfuse.flow.provider import ModelCall, ModelReply, ProviderError

__all__ = ["OpenAIChatProvider"]

_ENV = "CONTEXTFUSE_OPENAI_"


class OpenAIChatProvider:
    """Chat completions with JSON replies; every failure becomes a ProviderError."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        name: str = "openai",
        input_usd_per_mtok: float | None = None,
        output_usd_per_mtok: float | None = None,
    ) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key
        self._prices = (
            (input_usd_per_mtok, output_usd_per_mtok)
            if input_usd_per_mtok is not None and output_usd_per_mtok is not None
            else None
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OpenAIChatProvider | None:
        """The provider the environment configures, or None when no model is named."""
        env = os.environ if env is None else env
        model = env.get(_ENV + "MODEL")
        if not model:
            return None
        prices = [env.get(_ENV + "INPUT_USD_PER_MTOK"), env.get(_ENV + "OUTPUT_USD_PER_MTOK")]
        return cls(
            base_url=env.get(_ENV + "BASE_URL", "https://api.openai.com/v1"),
            model=model,
            api_key=env.get(_ENV + "API_KEY") or env.get("OPENAI_API_KEY"),
            input_usd_per_mtok=float(prices[0]) if prices[0] else None,
            output_usd_per_mtok=float(prices[1]) if prices[1] else None,
        )

    def complete(self, call: ModelCall) -> ModelReply:
        """POST the call's messages and read the first choice's content."""
        try:
            import httpx
        except ImportError as exc:
            raise ProviderError(
                "httpx is not installed: pip install 'contextfuse-core[serve]'"
            ) from exc

        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        body = {
            "model": self.model,
            "messages": list(call.messages),
            "max_tokens": call.max_tokens,
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
        try:
            with httpx.Client(timeout=httpx.Timeout(call.timeout_s)) as client:
                response = client.post(
                    f"{self.base_url}/chat/completions", json=body, headers=headers
                )
        except httpx.TimeoutException as exc:
            raise ProviderError(f"timed out after {call.timeout_s:.1f} s") from exc
        except httpx.HTTPError as exc:
            raise ProviderError(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            raise ProviderError(f"HTTP {response.status_code}: {response.text[:200]}")
        try:
            data = response.json()
            choice = data["choices"][0]
            text = choice["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("message content is not a string")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ProviderError(f"unreadable reply: {type(exc).__name__}: {exc}") from exc
        usage: dict[str, Any] = data.get("usage") or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        return ModelReply(
            text=text,
            finish_reason=str(choice.get("finish_reason") or "stop"),
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=self._cost(prompt, completion) if usage else None,
        )

    def _cost(self, prompt: int, completion: int) -> float | None:
        if self._prices is None:
            return None
        return (prompt * self._prices[0] + completion * self._prices[1]) / 1_000_000

    def __repr__(self) -> str:
        return f"OpenAIChatProvider(name={self.name!r}, base_url={self.base_url!r})"
