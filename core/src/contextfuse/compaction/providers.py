"""Model providers: the built-in ones and those plugins contribute, and policy resolution."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextfuse.compaction.offline import OfflineProvider
from contextfuse.compaction.openai_chat import OpenAIChatProvider
from contextfuse.compaction.request import MAX_SUMMARY_TOKENS, ModelPolicy
from contextfuse.errors import ConfigError
from contextfuse.flow.provider import ModelProvider
from contextfuse.flow.runtime import ResolvedPolicy

__all__ = ["PolicyError", "collect_providers", "resolve_policy"]


class PolicyError(ValueError):
    """A policy names a provider that is not available; ``field`` is where it was named."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def collect_providers(
    pm: Any, configured: Sequence[ModelProvider] = ()
) -> dict[str, ModelProvider]:
    """Every model provider by name: ``offline``, ``openai`` when the environment configures
    it, ``configured`` ones, then those of the ``contextfuse_model_providers`` hook.

    :raises ConfigError: a provider lacks ``name``/``complete``, or a name is taken twice.
    """
    found: dict[str, tuple[ModelProvider, str]] = {}

    def add(provider: Any, origin: str) -> None:
        if not isinstance(provider, ModelProvider):
            raise ConfigError(
                f"{origin} gave {provider!r}, which is not a model provider (needs a `name` "
                "and `complete(call)`)"
            )
        if provider.name in found:
            raise ConfigError(
                f"model provider name {provider.name!r} from {origin} is already taken by "
                f"{found[provider.name][1]}"
            )
        found[provider.name] = (provider, origin)

    add(OfflineProvider(), "contextfuse-core")
    from_env = OpenAIChatProvider.from_env()
    for provider in [*([from_env] if from_env else []), *configured]:
        add(provider, "configuration")
    if pm is not None:
        for given in pm.collect("contextfuse_model_providers"):
            add(given.item, f"plugin {given.plugin!r}")
    return {name: provider for name, (provider, _) in found.items()}


def resolve_policy(
    policy: ModelPolicy, providers: Mapping[str, ModelProvider], field: str
) -> ResolvedPolicy:
    """Bind ``policy`` to its providers; refuse one that names an unavailable provider."""
    unknown = [name for name in policy.providers if name not in providers]
    if unknown:
        raise PolicyError(
            f"{field}.providers names {unknown}, which are not available; available: "
            f"{sorted(providers)}",
            field=f"{field}.providers",
        )
    limit = min(MAX_SUMMARY_TOKENS, policy.max_output_tokens or MAX_SUMMARY_TOKENS)
    return ResolvedPolicy(tuple(providers[name] for name in policy.providers), limit)
