"""``FusionResult``: what fusion kept and why."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from contextfuse.components.protocols import ScoredFragment
from contextfuse.models import ContextFragment


def _total_tokens(result: FusionResult) -> int:
    return sum(f.token_count for f in result.fragments)


@attrs.frozen(slots=True)
class FusionResult:
    """What fusion kept and why (spec fields first, then the records for explanations).

    ``total_tokens`` is always the sum of the fragments' token counts (derived when not
    given; a disagreeing value is rejected). ``budget_utilization`` = total_tokens /
    ``available_tokens`` (0.0 for a zero budget).
    """

    fragments: list[ContextFragment]
    dedup_count: int = 0
    depth_resolved_count: int = 0
    dropped_by_overage_guard: int = 0
    total_tokens: int = attrs.field(default=attrs.Factory(_total_tokens, takes_self=True))
    budget_utilization: float = 0.0
    scored: tuple[ScoredFragment, ...] = ()
    omitted: tuple[ScoredFragment, ...] = ()
    alternatives: Mapping[str, tuple[ContextFragment, ...]] = attrs.field(factory=dict)
    fallbacks: Mapping[str, tuple[int, int]] = attrs.field(factory=dict)
    available_tokens: int = 0
    depth_reasons: Mapping[str, str] = attrs.field(factory=dict)  # the resolver's, per node
    packer_notes: Mapping[str, str] = attrs.field(factory=dict)  # the packer's, per node
    stopped_by: str = ""

    def __attrs_post_init__(self) -> None:
        expected = _total_tokens(self)
        if self.total_tokens != expected:
            raise ValueError(
                f"total_tokens ({self.total_tokens}) must equal the sum of the fragments' "
                f"token counts ({expected})"
            )
