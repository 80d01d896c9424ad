"""Helpers for plugin authors' tests."""

from __future__ import annotations

from typing import Any

from contextfuse.backends import BackendSet
from contextfuse.models import ContextBudget, ContextRequest, PlanContext, StrategyCapabilities
from contextfuse.strategy import ContextStrategy, as_strategy
from contextfuse.validation import validate_strategy

__all__ = ["assert_strategy_conforms"]


def assert_strategy_conforms(obj: Any, backends: BackendSet | None = None) -> ContextStrategy:
    """Fail unless ``obj`` is a valid strategy that behaves on an empty backend set.

    Checks the protocol, the registry's validation rules, that ``can_handle`` returns a
    confidence in [0, 1] and that ``assemble`` returns a list within a tiny budget.
    """
    strategy = as_strategy(obj)
    validate_strategy(strategy)
    assert isinstance(strategy.capabilities, StrategyCapabilities)
    assert isinstance(strategy.explain(), str) and strategy.explain()
    backends = backends or BackendSet()
    request = ContextRequest(query="conformance check")
    confidence = strategy.can_handle(request, backends)
    assert isinstance(confidence, (int, float)) and 0.0 <= confidence <= 1.0, confidence
    if confidence > 0:
        fragments = strategy.assemble(request, backends, ContextBudget.of(16), PlanContext())
        assert isinstance(fragments, list)
        assert sum(f.token_count for f in fragments) <= 16
    return strategy
