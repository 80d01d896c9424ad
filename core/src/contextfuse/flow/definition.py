"""Flow definitions: validated, hashable descriptions of a flow loaded from data."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["FlowDefinition", "NodeSpec", "ResponseShape", "load_flow"]

NodeKind = Literal["op", "decide", "select", "generate"]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ResponseShape(_Strict):
    """Where a generation node finds its per-record answers in the reply JSON.

    The reply must be an object whose ``list_key`` holds objects carrying ``id_key`` and a
    non-empty string under ``value_key``.
    """

    list_key: str
    id_key: str = "id"
    value_key: str


class NodeSpec(_Strict):
    """One node of a flow.

    * ``op``: ``output = operations[op](*inputs, params=flow.params | node.params)``.
    * ``decide``: for every batch of records in ``inputs[0]``, one call to the ``policy``'s
      provider asking ``question`` with ``choices``; each record gets ``decision`` (a choice
      it allows (its ``choices`` field, else all), else ``default``) and ``decision_source``
      (the name of the provider that chose, or ``"default"``).
      The model sees each record's ``id``, ``text_key`` field, ``choices`` and ``signals``.
    * ``select``: the batches of ``inputs[0]`` reduced to the records whose fields equal
      ``where``; empty batches are dropped.
    * ``generate``: for every batch of ``inputs[0]``, one JSON generation call; each record
      gets ``generated`` (a string) or ``generation_error``. With ``limit_key``, each record's
      field of that name (the most UTF-8 bytes its value should take) goes to the provider
      with the record's text.
    """

    id: str = Field(min_length=1)
    kind: NodeKind
    inputs: tuple[str, ...] = Field(min_length=1)
    output: str = Field(min_length=1)
    op: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    policy: str | None = None
    question: str | None = None
    instruction: str | None = None
    choices: tuple[str, ...] = ()
    default: str | None = None
    where: dict[str, str] = Field(default_factory=dict)
    text_key: str = "text"
    limit_key: str | None = None
    response: ResponseShape | None = None
    timeout_s: float | None = Field(default=None, gt=0)
    max_request_bytes: int | None = Field(default=None, ge=1)
    max_output_tokens: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _fields_of_kind(self) -> NodeSpec:
        required: dict[str, tuple[str, ...]] = {
            "op": ("op",),
            "decide": ("policy", "question", "default", "timeout_s", "max_request_bytes"),
            "select": ("where",),
            "generate": (
                "policy",
                "instruction",
                "response",
                "timeout_s",
                "max_request_bytes",
                "max_output_tokens",
            ),
        }
        missing = [name for name in required[self.kind] if not getattr(self, name)]
        if missing:
            raise ValueError(f"node {self.id!r} of kind {self.kind!r} needs {missing}")
        if self.kind == "decide" and (not self.choices or self.default not in self.choices):
            raise ValueError(f"node {self.id!r}: default must be one of its choices")
        return self


class FlowDefinition(_Strict):
    """A flow: named inputs, shared parameters, a time budget and nodes run in order."""

    name: str = Field(min_length=1)
    version: int = Field(ge=1)
    description: str = ""
    inputs: tuple[str, ...]
    budget_s: float = Field(gt=0)
    params: dict[str, Any] = Field(default_factory=dict)
    nodes: tuple[NodeSpec, ...] = Field(min_length=1)
    result: str

    @model_validator(mode="after")
    def _wired(self) -> FlowDefinition:
        known = set(self.inputs)
        for node in self.nodes:
            for name in node.inputs:
                if name.split(".", 1)[0] not in known:
                    raise ValueError(
                        f"node {node.id!r} reads {name!r}, which no input or earlier node gives"
                    )
            if node.output in known:
                raise ValueError(f"node {node.id!r} overwrites {node.output!r}")
            known.add(node.output)
        if self.result not in known:
            raise ValueError(f"result {self.result!r} is not produced by the flow")
        return self

    def fingerprint(self) -> str:
        """sha256 of the definition's canonical JSON: changes whenever the flow does."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def load_flow(path: Path) -> FlowDefinition:
    """Read and validate a flow definition from a JSON file."""
    return FlowDefinition.model_validate_json(path.read_text(encoding="utf-8"))
