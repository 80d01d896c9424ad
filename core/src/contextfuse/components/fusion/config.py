"""``FusionConfig``: what the default fusion components are built from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from contextfuse.components.fusion.packer import check_depth_steps
from contextfuse.components.fusion.policy import PackingPolicy
from contextfuse.components.fusion.scorer import ScorerWeights
from contextfuse.models import DetailDepth


class FusionConfig(BaseModel):
    """Configuration of the fusion engine (spec/acms-fusion.md, FusionConfig)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scorer_weights: ScorerWeights | None = Field(
        default=None, description="Composite scoring weights; None uses ScorerWeights()."
    )
    depth_fallback_steps: tuple[int, ...] = Field(
        default=DetailDepth.FALLBACK,
        description="Depth fallback sequence, strictly descending within 0..9.",
    )
    min_fragment_tokens: int = Field(
        default=10,
        ge=0,
        description="Packing stops once fewer than this many tokens remain.",
    )
    overage_guard_enabled: bool = Field(
        default=True, description="Enable the post-packing budget overage guard."
    )
    packing: PackingPolicy = Field(
        default_factory=PackingPolicy,
        description=(
            "How the default depth resolver and packer spend the budget on the candidates of "
            "ranking strategies (the [fusion.packing] table)."
        ),
    )

    @field_validator("depth_fallback_steps")
    @classmethod
    def _valid_steps(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        return check_depth_steps(value)
