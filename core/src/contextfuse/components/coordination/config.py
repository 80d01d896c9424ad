"""``CoordinatorConfig``: the ``[coordinator]`` settings of phase 1 and its three components."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from contextfuse.components.coordination.render import RenderLimits

__all__ = ["CoordinatorConfig", "StrategyLimits"]


class StrategyLimits(BaseModel):
    """One strategy's overrides of the executor settings (the registry's per-strategy table)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    timeout_seconds: float | None = Field(default=None, gt=0.0, allow_inf_nan=False)
    max_fragments: int | None = Field(default=None, ge=1)
    circuit_breaker_threshold: int | None = Field(default=None, ge=1)


class CoordinatorConfig(BaseModel):
    """Settings of the coordinator and its three components (the ``[coordinator]`` table).

    The first six are the spec's (``spec/acms-fusion.md``). ``circuit_breaker_cooldown``: seconds
    an open circuit waits before letting one trial call through. ``max_fragments_per_strategy``:
    fragments kept from one run of a fragment strategy, in the strategy's order (the registry's
    ``max_fragments``). ``per_strategy_max_cap`` must be at least ``min_useful_budget``.
    ``min_candidates``, ``tokens_per_candidate`` and ``header_files``: how far down a ranking
    strategy's list the executor renders candidates (``contextfuse.components.coordination.
    render``).

    ``timeout_seconds``, ``max_workers`` and ``max_fragments`` (the registry's names for the same
    settings) are accepted as aliases of ``executor_timeout``, ``executor_max_workers`` and
    ``max_fragments_per_strategy``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_useful_budget: int = Field(default=64, ge=1)
    executor_timeout: float = Field(
        default=30.0,
        gt=0.0,
        allow_inf_nan=False,
        validation_alias=AliasChoices("executor_timeout", "timeout_seconds"),
    )
    executor_max_workers: int = Field(
        default=4, ge=1, validation_alias=AliasChoices("executor_max_workers", "max_workers")
    )
    circuit_breaker_threshold: int = Field(default=3, ge=1)
    preference_boost: float = Field(default=1.5, ge=1.0, allow_inf_nan=False)
    per_strategy_max_cap: int | None = Field(default=None, ge=1)
    circuit_breaker_cooldown: float = Field(default=30.0, ge=0.0, allow_inf_nan=False)
    max_fragments_per_strategy: int = Field(
        default=100,
        ge=1,
        validation_alias=AliasChoices("max_fragments_per_strategy", "max_fragments"),
    )

    min_candidates: int = Field(
        default=150,
        ge=1,
        description="Candidates of a ranking strategy rendered whatever its allocation.",
    )
    tokens_per_candidate: int = Field(
        default=40,
        ge=1,
        description=(
            "A ranking strategy's candidates are rendered down to max(min_candidates, "
            "allocation // tokens_per_candidate); the rest are below the cut."
        ),
    )
    header_files: int = Field(
        default=40,
        ge=0,
        description="Files of the best code candidates that get a header fragment.",
    )

    strategy_limits: dict[str, StrategyLimits] = Field(
        default_factory=dict,
        description="Per-strategy overrides of timeout, max fragments and breaker threshold.",
    )

    def timeout_for(self, name: str) -> float:
        """The timeout of strategy ``name`` (its override, else ``executor_timeout``)."""
        limits = self.strategy_limits.get(name)
        return (
            limits.timeout_seconds if limits and limits.timeout_seconds else self.executor_timeout
        )

    def max_fragments_for(self, name: str) -> int:
        """How many fragments strategy ``name`` may return."""
        limits = self.strategy_limits.get(name)
        if limits and limits.max_fragments:
            return limits.max_fragments
        return self.max_fragments_per_strategy

    def render_limits(self) -> RenderLimits:
        """How far down a ranking the executor renders."""
        return RenderLimits(self.min_candidates, self.tokens_per_candidate, self.header_files)

    def threshold_for(self, name: str) -> int:
        """Consecutive failures that open the circuit of strategy ``name``."""
        limits = self.strategy_limits.get(name)
        if limits and limits.circuit_breaker_threshold:
            return limits.circuit_breaker_threshold
        return self.circuit_breaker_threshold

    @model_validator(mode="after")
    def _cap_holds_a_useful_share(self) -> CoordinatorConfig:
        cap = self.per_strategy_max_cap
        if cap is not None and cap < self.min_useful_budget:
            raise ValueError(
                f"per_strategy_max_cap ({cap}) must be at least min_useful_budget "
                f"({self.min_useful_budget}): no strategy could receive a useful share"
            )
        return self

    @classmethod
    def coerce(cls, value: CoordinatorConfig | Mapping[str, Any] | None) -> CoordinatorConfig:
        """Accept a config, a mapping of its fields (a ``[coordinator]`` table) or None."""
        if isinstance(value, CoordinatorConfig):
            return value
        if value is None:
            return cls()
        return cls.model_validate(dict(value))
