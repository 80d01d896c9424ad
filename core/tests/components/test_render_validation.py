"""A ranking's candidates rendered into fragments: what a strategy brings is still validated."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from contextfuse import (
    BackendSet,
    ContextFragment,
    ContextRequest,
    FragmentProvenance,
    PlanContext,
)
from contextfuse.backends import FragmentBackend, Rendering
from contextfuse.components.coordination.render import render_ranking
from contextfuse.ranked import Ranked
from contextfuse.testing import assemble_with

URI = "commit://shop/4f2a"
GOOD = {9: Rendering(9, "commit 4f2a: fix the cart total", 9, 0, 0)}


def rendered(**fields: Any) -> list[ContextFragment]:
    fields.setdefault("renderings", GOOD)
    ranked = [Ranked(URI, 1.0, {"history": 1}, **fields)]
    return render_ranking(ranked, BackendSet(), strategy="history", tokens=100).fragments


def test_a_candidates_own_rendering_becomes_a_fragment_as_validation_makes_it() -> None:
    (fragment,) = rendered(metadata={"sha": "4f2a"}, resource_type="commit", tier="cold")
    assert fragment == ContextFragment(
        fragment_id=fragment.fragment_id,
        created_at=fragment.created_at,
        uko_node=URI,
        content="commit 4f2a: fix the cart total",
        detail_depth=9,
        token_count=9,
        relevance_score=1.0,
        provenance=FragmentProvenance(resource_uri=URI, location="", resource_type="commit"),
        tier="cold",
        metadata={"strategy": "history", "kind": "commit", "role": "candidate",
                  "signals": "history #1", "sha": "4f2a"},
    )  # fmt: skip


@pytest.mark.parametrize(
    "fields",
    [
        {"metadata": {"lines": 12}},
        {"metadata": {f"k{i}": "v" for i in range(64)}},
        {"renderings": {9: Rendering(9, "text", -1, 0, 0)}},
        {"renderings": {12: Rendering(12, "text", 3, 0, 0)}},
        {"renderings": {9: Rendering(9, "x" * 1_000_001, 3, 0, 0)}},
    ],
    ids=["metadata value not text", "too much metadata", "negative tokens", "depth 12", "too long"],
)
def test_a_candidate_the_model_refuses_is_refused_as_before(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        rendered(**fields)


class _BadMetadata:
    """A ranking strategy whose candidate carries metadata the fragment model refuses."""

    name = "bad-metadata"

    def __init__(self) -> None:
        from contextfuse.models import StrategyCapabilities

        self.capabilities = StrategyCapabilities(uses_fragments=True, resource_types=("commit",))

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        return 1.0

    def rank(
        self, request: ContextRequest, backends: BackendSet, plan_context: PlanContext
    ) -> list[Ranked]:
        return [Ranked(URI, 1.0, renderings=GOOD, metadata={"lines": 12})]  # type: ignore[dict-item]

    def explain(self) -> str:
        return "ranks one commit with a number where text belongs"


def test_a_strategy_whose_candidates_the_model_refuses_fails_and_adds_nothing() -> None:
    backends = BackendSet(fragments=FragmentBackend(()))
    payload = assemble_with(_BadMetadata(), backends, "cart total", explain=True)
    assert payload.fragments == ()
    assert payload.explanation is not None
    (error,) = payload.explanation["strategy_errors"]["bad-metadata"]
    assert "ValidationError" in error and "metadata" in error
