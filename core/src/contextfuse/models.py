"""The public data model: fragments, budgets, requests, payloads and strategy results.

Every model is a frozen pydantic v2 model; the validation rules are those of
``spec/acms-pipeline.md`` and ``spec/strategy-registry.md``.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    computed_field,
    field_validator,
    model_validator,
)

from contextfuse.hashing import context_hash

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_DEPTH",
    "MAX_METADATA_ENTRIES",
    "ContextBudget",
    "ContextFragment",
    "ContextPayload",
    "ContextRequest",
    "ContextStrategyResult",
    "Decision",
    "DecisionStatus",
    "DetailDepth",
    "FragmentProvenance",
    "Plan",
    "PlanContext",
    "PlanStatus",
    "StrategyCapabilities",
    "Tier",
    "new_ulid",
    "utc_now",
]

MAX_CONTENT_CHARS = 1_000_000
MAX_METADATA_ENTRIES = 64
MAX_DEPTH = 9

Tier = Literal["hot", "warm", "cold"]
PlanStatus = Literal["active", "done", "abandoned"]
DecisionStatus = Literal["proposed", "accepted", "rejected", "deprecated", "superseded"]


class DetailDepth:
    """Named detail depths. Every code node has renderings at the four fallback depths."""

    MODULE_LISTING = 0
    OUTLINE = 2
    SIGNATURES = 4
    FULL_SOURCE = 9
    FALLBACK = (9, 4, 2, 0)

    @staticmethod
    def describe(depth: int) -> str:
        """The depth in words: ``full source``, ``signatures``, ``outline``, ``listing``."""
        return _DEPTH_NAMES.get(depth, f"depth {depth}")


_DEPTH_NAMES = {9: "full source", 4: "signatures", 2: "outline", 0: "listing"}


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
#: Every 10-bit value as its two Crockford digits: a ULID's 80-bit random part is 8 of them.
_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)


def _draw_base() -> int:
    # 79 bits: the counter added to it never carries out of the 80-bit random part.
    return int.from_bytes(os.urandom(10), "big") >> 1


# The time part counts from a monotonic clock anchored once to the wall clock: it never goes
# back, whatever happens to the wall clock meanwhile.
_ulid_anchor_ns = time.time_ns() - time.monotonic_ns()
_ulid_base = _draw_base()
_ulid_count = itertools.count()
_ulid_stamp = (-1, "")  # the last millisecond encoded, and its encoding
_ulid_high = (-1, "")  # the last random part's bits above its lowest 20, and their encoding


def _after_fork() -> None:  # a forked child must not make its parent's ids
    global _ulid_base
    _ulid_base = _draw_base()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def new_ulid() -> str:
    """A fresh ULID as its 26-character string, ascending within the process.

    The random part is a per-process random number plus a process-wide counter, so an id
    made after another one (in any thread) sorts after it, as the ULID specification's
    monotonic mode has it. It takes no lock: a payload of 8k tokens makes hundreds of
    fragments, each with an id, and a lock here made concurrent requests queue behind a
    thread holding it while it waited for the GIL. ``next`` on an ``itertools.count`` is
    atomic, and the time is read after the count: a call that starts after another returned
    has both a higher count and a time no earlier.
    """
    global _ulid_stamp
    n = next(_ulid_count)
    ms = (time.monotonic_ns() + _ulid_anchor_ns) // 1_000_000
    last_ms, stamp = _ulid_stamp  # one tuple, read and replaced whole: no torn pair
    if ms != last_ms:
        stamp = "".join(_CROCKFORD[(ms >> s) & 31] for s in range(45, -1, -5))
        _ulid_stamp = (ms, stamp)
    return stamp + _random_digits(_ulid_base + n)


def _random_digits(value: int) -> str:
    """The 16 Crockford digits of an 80-bit ``value`` (a ULID's random part)."""
    global _ulid_high
    # The top 60 bits change once in a million consecutive values: their 12 digits are
    # kept, the last 4 looked up (an assembly makes hundreds of ids; base32 cost 2 us each).
    high = value >> 20
    last_high, digits = _ulid_high  # one tuple, read and replaced whole: no torn pair
    if high != last_high:
        digits = "".join(_PAIRS[(high >> s) & 1023] for s in range(50, -1, -10))
        _ulid_high = (high, digits)
    return digits + _PAIRS[(value >> 10) & 1023] + _PAIRS[value & 1023]


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(timezone.utc)


def _check_ulid(value: str) -> str:
    from ulid import ULID  # here: ids are made by new_ulid; only given ones are parsed

    try:
        ULID.from_str(value)
    except ValueError as exc:
        raise ValueError(f"not a ULID: {value!r}") from exc
    return value


def _check_utc(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("timestamp must be timezone-aware (UTC); got a naive datetime")
    return value.astimezone(timezone.utc)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


_M = TypeVar("_M", bound=_Frozen)


class FragmentProvenance(_Frozen):
    """Where a fragment came from."""

    resource_uri: str = Field(min_length=1)
    location: str = ""
    resource_type: str = "unknown"


class ContextFragment(_Frozen):
    """One piece of context: a rendering of one knowledge-base node at one detail depth."""

    fragment_id: str = Field(default_factory=new_ulid)
    uko_node: str = Field(min_length=1)
    content: str = Field(max_length=MAX_CONTENT_CHARS)
    detail_depth: int = Field(default=0, ge=0, le=MAX_DEPTH)
    token_count: int = Field(ge=0)
    relevance_score: float = Field(default=0.5, ge=0.0, le=1.0)
    provenance: FragmentProvenance
    tier: Tier = "warm"
    metadata: dict[str, str] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utc_now)

    @field_validator("fragment_id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return _check_ulid(value)

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return _check_utc(value)

    @field_validator("metadata")
    @classmethod
    def _metadata_size(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_METADATA_ENTRIES:
            raise ValueError(
                f"metadata has {len(value)} entries; at most {MAX_METADATA_ENTRIES} are allowed"
            )
        return value


_TIER_NAMES = frozenset({"hot", "warm", "cold"})
_FRAGMENT_GIVEN = ("uko_node", "content", "detail_depth", "token_count", "relevance_score")
_PROVENANCE_GIVEN = frozenset({"resource_uri", "location", "resource_type"})


def build_fragment(
    *,
    uko_node: str,
    content: str,
    detail_depth: int,
    token_count: int,
    relevance_score: float,
    resource_uri: str,
    location: str,
    resource_type: str,
    tier: str,
    metadata: dict[str, str],
    created_at: datetime | None = None,
) -> ContextFragment:
    """The fragment ``ContextFragment(...)`` makes of these fields, for a fraction of the cost.

    The pipeline renders a strategy's candidates at every depth, hundreds of fragments a
    request of which a payload keeps a few dozen: their validation was a fifth of an
    assembly's CPU. Values of exactly the model's types and within its bounds are stored as
    validation would store them (the ids and times made here are valid by construction);
    anything else, whoever supplied it, goes through validated construction, which rejects
    it as it always did.
    """
    if (
        type(uko_node) is str
        and uko_node
        and type(content) is str
        and len(content) <= MAX_CONTENT_CHARS
        and type(detail_depth) is int
        and 0 <= detail_depth <= MAX_DEPTH
        and type(token_count) is int
        and token_count >= 0
        and type(relevance_score) is float
        and 0.0 <= relevance_score <= 1.0
        and type(resource_uri) is str
        and resource_uri
        and type(location) is str
        and type(resource_type) is str
        and type(tier) is str
        and tier in _TIER_NAMES
        and type(metadata) is dict
        and len(metadata) <= MAX_METADATA_ENTRIES
        and _all_text(metadata)
        and (
            created_at is None
            or (type(created_at) is datetime and created_at.tzinfo is timezone.utc)
        )
    ):
        provenance = _constructed(
            FragmentProvenance,
            {"resource_uri": resource_uri, "location": location, "resource_type": resource_type},
            set(_PROVENANCE_GIVEN),
        )
        given = {*_FRAGMENT_GIVEN, "provenance", "tier", "metadata"}
        if created_at is None:
            created_at = utc_now()
        else:
            given.add("created_at")
        values = {
            "fragment_id": new_ulid(),
            "uko_node": uko_node,
            "content": content,
            "detail_depth": detail_depth,
            "token_count": token_count,
            "relevance_score": relevance_score,
            "provenance": provenance,
            "tier": tier,
            "metadata": dict(metadata),
            "created_at": created_at,
        }
        return _constructed(ContextFragment, values, given)
    fields: dict[str, Any] = {} if created_at is None else {"created_at": created_at}
    return ContextFragment(
        uko_node=uko_node,
        content=content,
        detail_depth=detail_depth,
        token_count=token_count,
        relevance_score=relevance_score,
        provenance=FragmentProvenance(
            resource_uri=resource_uri, location=location, resource_type=resource_type
        ),
        tier=tier,  # type: ignore[arg-type]
        metadata=metadata,
        **fields,
    )


# The slots ``model_construct`` fills besides ``__dict__`` (pydantic v2's BaseModel slots),
# set through their descriptors: a frozen model refuses ``setattr``.
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__


def _constructed(cls: type[_M], values: dict[str, Any], given: set[str]) -> _M:
    """An instance of ``cls`` holding ``values`` as they are, as ``model_construct`` makes it
    (without its Python loop over the fields): the caller vouches for every value."""
    model = cls.__new__(cls)
    model.__dict__.update(values)
    _SET_FIELDS_SET(model, given)
    _SET_EXTRA(model, None)
    _SET_PRIVATE(model, None)
    return model


def _all_text(metadata: dict[str, str]) -> bool:
    for key, value in metadata.items():
        if type(key) is not str or type(value) is not str:
            return False
    return True


class ContextBudget(_Frozen):
    """A token budget: ``available_tokens = max_tokens - reserved_tokens``."""

    max_tokens: int = Field(default=4096, ge=1)
    reserved_tokens: int = Field(default=512, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _accept_serialized(cls, data: Any) -> Any:
        # A dumped budget carries its computed available_tokens; accept it when consistent.
        if isinstance(data, dict) and "available_tokens" in data:
            data = dict(data)
            given = data.pop("available_tokens")
            expected = data.get("max_tokens", 4096) - data.get("reserved_tokens", 512)
            if given != expected:
                raise ValueError(
                    f"available_tokens ({given}) must equal max_tokens - reserved_tokens "
                    f"({expected})"
                )
        return data

    @model_validator(mode="after")
    def _reserved_below_max(self) -> ContextBudget:
        if self.reserved_tokens >= self.max_tokens:
            raise ValueError(
                f"reserved_tokens ({self.reserved_tokens}) must be less than "
                f"max_tokens ({self.max_tokens})"
            )
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def available_tokens(self) -> int:
        """Tokens the payload may fill."""
        return self.max_tokens - self.reserved_tokens

    @classmethod
    def of(cls, tokens: int) -> ContextBudget:
        """A budget whose available tokens are exactly ``tokens`` (at least 1), none reserved."""
        return cls(max_tokens=max(1, tokens), reserved_tokens=0)


class ContextRequest(_Frozen):
    """What an agent is about to do (the spec's CRP request)."""

    request_id: str = Field(default_factory=new_ulid)
    query: str = Field(default="", max_length=MAX_CONTENT_CHARS)
    plan_id: str | None = None
    preferred_strategies: tuple[str, ...] = ()
    focus_nodes: tuple[str, ...] = ()
    resource_types: tuple[str, ...] = ()
    metadata: dict[str, str] = Field(default_factory=dict)

    @field_validator("request_id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return _check_ulid(value)

    @classmethod
    def coerce(cls, value: ContextRequest | Mapping[str, Any] | str | None) -> ContextRequest:
        """Accept a request, a mapping of its fields (the v1 form) or a bare query."""
        if isinstance(value, ContextRequest):
            return value
        if value is None:
            return cls()
        if isinstance(value, str):
            return cls(query=value)
        known = {k: v for k, v in value.items() if k in cls.model_fields}
        extra = {str(k): str(v) for k, v in value.items() if k not in cls.model_fields}
        if extra:
            known["metadata"] = {**dict(known.get("metadata", {})), **extra}
        return cls.model_validate(known)


class Plan(_Frozen):
    """A plan: what an agent (or a team) set out to do, under an optional parent plan.

    ``uri`` is ``plan://<project>/<id>``. An active plan is warm context; a closed one
    (done, abandoned) is cold.
    """

    id: str
    uri: str
    title: str = Field(min_length=1, max_length=500)
    body: str = Field(default="", max_length=MAX_CONTENT_CHARS)
    parent_id: str | None = None
    status: PlanStatus = "active"
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return _check_ulid(value)

    @field_validator("created_at", "updated_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return _check_utc(value)

    @property
    def tier(self) -> Tier:
        """``warm`` while active, ``cold`` once closed."""
        return "warm" if self.status == "active" else "cold"


class Decision(_Frozen):
    """A decision taken under a plan, or recorded in the repository (an ADR: no plan).

    ``uri`` is ``decision://<project>/<id>``; ``supersedes`` and ``superseded_by`` hold
    decision ids; ``source`` is the ADR file a decision was imported from ("" otherwise).
    """

    id: str
    uri: str
    title: str = Field(min_length=1, max_length=500)
    body: str = Field(default="", max_length=MAX_CONTENT_CHARS)
    plan_id: str | None = None
    status: DecisionStatus = "accepted"
    supersedes: tuple[str, ...] = ()
    superseded_by: tuple[str, ...] = ()
    source: str = ""
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return _check_ulid(value)

    @field_validator("created_at", "updated_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return _check_utc(value)

    @property
    def in_force(self) -> bool:
        """True for a proposed or accepted decision that nothing superseded."""
        return self.status in ("proposed", "accepted") and not self.superseded_by


class PlanContext(_Frozen):
    """The plan a request belongs to: its goal, its ancestors and the decisions taken.

    ``plans`` is the plan itself then its ancestors, nearest first (``parent_plan_ids`` are
    the ancestors' ids in that order); ``decision_records`` are the decisions of those
    plans in the same order, newest first within a plan (``decisions`` are their ids).
    """

    plan_id: str = ""
    goal: str = ""
    parent_plan_ids: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    plans: tuple[Plan, ...] = ()
    decision_records: tuple[Decision, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def coerce(cls, value: PlanContext | Mapping[str, Any] | None) -> PlanContext:
        """Accept a plan context or a mapping of its fields."""
        if isinstance(value, PlanContext):
            return value
        if value is None:
            return cls()
        known = {k: v for k, v in value.items() if k in cls.model_fields}
        extra = {k: v for k, v in value.items() if k not in cls.model_fields}
        if extra:
            known["metadata"] = {**dict(known.get("metadata", {})), **extra}
        return cls.model_validate(known)


class StrategyCapabilities(_Frozen):
    """What a strategy needs and how good it is (spec/strategy-registry.md)."""

    uses_text: bool = False
    uses_vector: bool = False
    uses_graph: bool = False
    uses_temporal: bool = False
    uses_plans: bool = False
    uses_fragments: bool = False
    uko_levels: tuple[int, ...] = ()
    resource_types: tuple[str, ...] = ()
    quality_score: float = Field(default=0.5, ge=0.0, le=1.0)
    supports_depth_breadth: bool = False
    supports_plan_hierarchy: bool = False
    supports_temporal: bool = False

    @property
    def required_backends(self) -> frozenset[str]:
        """Names of the backends (see ``BackendSet.available``) this strategy needs."""
        flags = {
            "text": self.uses_text,
            "vector": self.uses_vector,
            "graph": self.uses_graph,
            "temporal": self.uses_temporal,
            "plans": self.uses_plans,
            "fragments": self.uses_fragments,
        }
        return frozenset(name for name, used in flags.items() if used)


def _fragment_order(fragment: ContextFragment) -> tuple[float, str]:
    return (-fragment.relevance_score, fragment.uko_node)


class ContextStrategyResult(_Frozen):
    """The output of one strategy run. Fragments are ordered by relevance desc, uko_node asc."""

    strategy_name: str
    fragments: tuple[ContextFragment, ...] = ()
    total_fragments: int = Field(default=0, ge=0)
    tokens_used: int = Field(default=0, ge=0)
    execution_time_ms: float = Field(default=0.0, ge=0.0)
    errors: tuple[str, ...] = ()
    stats: dict[str, Any] = Field(default_factory=dict)

    @field_validator("fragments")
    @classmethod
    def _ordered(cls, value: tuple[ContextFragment, ...]) -> tuple[ContextFragment, ...]:
        return tuple(sorted(value, key=_fragment_order))

    @model_validator(mode="before")
    @classmethod
    def _derive_totals(cls, data: Any) -> Any:
        if isinstance(data, dict) and "fragments" in data:
            frags = data["fragments"]
            data = dict(data)
            data.setdefault("tokens_used", sum(_tokens_of(f) for f in frags))
            data.setdefault("total_fragments", len(frags))
        return data


def _tokens_of(fragment: Any) -> int:
    if isinstance(fragment, ContextFragment):
        return fragment.token_count
    return int(fragment["token_count"])


class ContextPayload(_Frozen):
    """The assembled context: selected fragments, their cost and a reproducible hash.

    ``total_tokens``, ``budget_used``, ``context_hash`` and ``provenance_map`` are derived
    from the fragments when not given; a given value that disagrees is rejected.
    """

    payload_id: str = Field(default_factory=new_ulid)
    plan_id: str = ""
    fragments: tuple[ContextFragment, ...] = ()
    total_tokens: int = Field(default=0, ge=0)
    budget: ContextBudget = Field(default_factory=ContextBudget)
    budget_used: float = Field(default=0.0, ge=0.0)
    strategies_used: tuple[str, ...] = ()
    context_hash: str = ""
    preamble: str | None = None
    preamble_tokens: int = Field(default=0, ge=0)
    provenance_map: dict[str, Any] = Field(default_factory=dict)
    explanation: dict[str, Any] | None = None
    assembled_at: datetime = Field(default_factory=utc_now)

    @field_validator("payload_id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return _check_ulid(value)

    @field_validator("assembled_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return _check_utc(value)

    @model_validator(mode="after")
    def _derived_fields(self) -> ContextPayload:
        total = sum(f.token_count for f in self.fragments)
        if self.total_tokens not in (0, total) or (self.total_tokens and not self.fragments):
            raise ValueError(
                f"total_tokens ({self.total_tokens}) must equal the sum of the fragments' "
                f"token counts ({total})"
            )
        digest = context_hash((f.uko_node, f.content) for f in self.fragments)
        if self.context_hash and self.context_hash != digest:
            raise ValueError("context_hash does not match the fragments' content")
        used = (total + self.preamble_tokens) / self.budget.available_tokens
        # The model is frozen; derived values are filled in once, at validation.
        object.__setattr__(self, "total_tokens", total)
        object.__setattr__(self, "context_hash", digest)
        object.__setattr__(self, "budget_used", round(used, 6))
        if not self.provenance_map:
            object.__setattr__(
                self,
                "provenance_map",
                {f.fragment_id: f.provenance.model_dump() for f in self.fragments},
            )
        return self

    @property
    def is_within_budget(self) -> bool:
        """True when the fragments (and preamble) fit the available tokens."""
        return self.total_tokens + self.preamble_tokens <= self.budget.available_tokens

    @property
    def remaining_tokens(self) -> int:
        """Available tokens not yet used (never negative)."""
        return max(0, self.budget.available_tokens - self.total_tokens - self.preamble_tokens)
