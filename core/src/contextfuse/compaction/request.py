"""The validated compaction request and the policies it carries."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from contextfuse.compaction.transcript import check_message

__all__ = ["MAX_MESSAGES", "MAX_SUMMARY_TOKENS", "CompactRequest", "ModelPolicy"]

MAX_MESSAGES = 50_000
MAX_SUMMARY_TOKENS = 4096

ProviderName = Annotated[str, Field(min_length=1, max_length=64)]
ChatMessage = Annotated[dict[str, Any], AfterValidator(check_message)]


class ModelPolicy(BaseModel):
    """Which model providers a flow's model nodes may use, in preference order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    providers: list[ProviderName] = Field(
        min_length=1, max_length=8, description="Allowed providers, tried in this order."
    )
    max_output_tokens: int | None = Field(
        default=None,
        ge=1,
        description=f"Caller's limit on a reply's tokens (a summary gets at most "
        f"{MAX_SUMMARY_TOKENS} anyway).",
    )


def _offline() -> ModelPolicy:
    return ModelPolicy(providers=["offline"])


class CompactRequest(BaseModel):
    """A transcript to compact (spec/fragment-compaction.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: list[ChatMessage] = Field(
        min_length=1,
        max_length=MAX_MESSAGES,
        description="The transcript in the OpenAI chat format, oldest first.",
    )
    target_ratio: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description="Desired output/input ratio of serialized UTF-8 bytes.",
    )
    pinned_indices: list[Annotated[int, Field(ge=0)]] | None = Field(
        default=None,
        max_length=MAX_MESSAGES,
        description="Message indexes kept verbatim; default: every user message.",
    )
    decision_policy_ir: ModelPolicy | None = Field(
        default=None, description="Policy of the decision nodes; enables selective compaction."
    )
    policy_ir: ModelPolicy = Field(
        default_factory=_offline, description="Policy of the summary generators."
    )

    @model_validator(mode="after")
    def _pins_in_range(self) -> CompactRequest:
        outside = [i for i in self.pinned_indices or () if i >= len(self.messages)]
        if outside:
            raise ValueError(
                f"pinned_indices {outside[:5]} are outside the {len(self.messages)} messages"
            )
        return self
