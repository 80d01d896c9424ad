"""Helpers for plugin authors' tests."""

from __future__ import annotations

from typing import Any

from contextfuse.backends import BackendSet
from contextfuse.models import (
    ContextBudget,
    ContextPayload,
    ContextRequest,
    PlanContext,
    StrategyCapabilities,
)
from contextfuse.ranked import Ranked
from contextfuse.strategy import AnyStrategy, RankingStrategy, as_strategy
from contextfuse.validation import validate_strategy

__all__ = ["assemble_with", "assert_strategy_conforms"]


def assert_strategy_conforms(obj: Any, backends: BackendSet | None = None) -> AnyStrategy:
    """Fail unless ``obj`` is a valid strategy that behaves on an empty backend set.

    Checks the protocol, the registry's validation rules, that ``can_handle`` returns a
    confidence in [0, 1], and that ``rank`` returns a list of ``Ranked`` (a ranking strategy)
    or ``assemble`` a list within a tiny budget (a fragment strategy).
    """
    strategy = as_strategy(obj)
    validate_strategy(strategy)
    assert isinstance(strategy.capabilities, StrategyCapabilities)
    assert isinstance(strategy.explain(), str) and strategy.explain()
    backends = backends or BackendSet()
    request = ContextRequest(query="conformance check")
    confidence = strategy.can_handle(request, backends)
    assert isinstance(confidence, (int, float)) and 0.0 <= confidence <= 1.0, confidence
    if confidence <= 0:
        return strategy
    if isinstance(strategy, RankingStrategy):
        ranked = strategy.rank(request, backends, PlanContext())
        assert isinstance(ranked, list) and all(isinstance(r, Ranked) for r in ranked)
    else:
        fragments = strategy.assemble(request, backends, ContextBudget.of(16), PlanContext())
        assert isinstance(fragments, list)
        assert sum(f.token_count for f in fragments) <= 16
    return strategy


def assemble_with(
    strategy: Any,
    backends: BackendSet,
    request: ContextRequest | str,
    budget: int = 2000,
    *,
    plan_context: PlanContext | None = None,
    explain: bool = False,
) -> ContextPayload:
    """What a user gets from ``strategy`` alone: the default pipeline's payload (no plugins,
    no preamble) for ``request`` within ``budget`` tokens, nothing reserved."""
    from contextfuse.pipeline import ACMSPipeline
    from contextfuse.plugin_manager import make_plugin_manager

    adapted = as_strategy(strategy)
    with ACMSPipeline(plugin_manager=make_plugin_manager(autoload=False)) as pipeline:
        pipeline.register_strategy(adapted.name, adapted)
        return pipeline.run(
            request,
            backends,
            ContextBudget(max_tokens=budget, reserved_tokens=0),
            plan_context=plan_context,
            strategies=[adapted.name],
            preamble=False,
            explain=explain,
        )
