"""Request bodies of the HTTP API (pydantic: validated, documented in the OpenAPI schema)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from contextfuse.limits import MAX_BUDGET, MAX_QUERY_CHARS, MIN_BUDGET, clean_text
from contextfuse.server.settings import PROJECT_NAME_PATTERN

__all__ = [
    "ERROR_RESPONSES",
    "MAX_BUDGET",
    "MAX_QUERY_CHARS",
    "MIN_BUDGET",
    "AssembleRequest",
    "ErrorMessage",
    "Problem",
    "ValidationProblems",
]

StrategyName = Annotated[str, Field(min_length=1, max_length=128)]


class AssembleRequest(BaseModel):
    """Assemble context for a query from one of the served projects."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    project: str = Field(
        pattern=PROJECT_NAME_PATTERN, description="A project the server was started with."
    )
    budget: int = Field(
        default=8000, ge=MIN_BUDGET, le=MAX_BUDGET, description="Maximum tokens, reserve included."
    )
    reserved: int = Field(default=0, ge=0, description="Tokens of the budget kept free.")
    strategies: list[StrategyName] | None = Field(
        default=None, max_length=32, description="Run these strategies; default: the enabled."
    )
    plan_id: str | None = Field(default=None, min_length=1, max_length=256)
    explain: bool = False

    @field_validator("query", mode="before")
    @classmethod
    def _no_lone_surrogate(cls, value: object) -> object:
        # JSON may escape a lone surrogate ("\ud800"); it becomes U+FFFD, as on the CLI.
        return clean_text(value) if isinstance(value, str) else value

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must contain more than whitespace")
        return value

    @field_validator("reserved")
    @classmethod
    def _reserve_below_budget(cls, value: int, info: ValidationInfo) -> int:
        budget = info.data.get("budget")
        if budget is not None and value >= budget:
            raise ValueError(f"reserved ({value}) must be less than budget ({budget})")
        return value


class Problem(BaseModel):
    """One thing wrong with a request: the field, the rule it breaks, and why."""

    field: str = Field(description="Dotted path of the field, or 'body'.")
    rule: str = Field(description="The rule broken, e.g. 'missing', 'served_project'.")
    message: str


class ValidationProblems(BaseModel):
    """The body of every 422 answer."""

    detail: list[Problem]


class ErrorMessage(BaseModel):
    """The body of the other error answers (401, 403, 413, 503)."""

    detail: str


#: The error answers every route may give, published in the OpenAPI schema as they are sent.
ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    401: {"model": ErrorMessage, "description": "Missing or wrong bearer token."},
    403: {"model": ErrorMessage, "description": "A Host name the server does not answer."},
    413: {"model": ErrorMessage, "description": "The body is larger than the limit."},
    422: {"model": ValidationProblems, "description": "The request breaks a rule."},
    503: {"model": ErrorMessage, "description": "The project's index cannot be read now."},
}
