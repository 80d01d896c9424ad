"""The coordinator facade talks to components only through their protocols."""

from __future__ import annotations

from contextfuse import StrategyCoordinator
from contextfuse.plugin import Candidate, StrategyCapabilities


class Strategy:
    def __init__(self, name, confidence=0.5, fail=False):
        self.name = name
        self.confidence = confidence
        self.fail = fail
        self.capabilities = StrategyCapabilities(uses_fragments=True, resource_types=("*",))

    def can_handle(self, request, backends):
        if self.fail:
            raise RuntimeError("cannot judge")
        return self.confidence

    def assemble(self, request, backends, budget, plan_context):
        if self.fail:
            raise RuntimeError("broken")
        return []

    def explain(self):
        return self.name


class EveryoneSelector:
    """A replacement selector: keeps every strategy, confidence from can_handle."""

    def select(self, strategies, request, backends):
        found = [Candidate(s, s.can_handle(request, backends)) for s in strategies]
        return [c for c in found if c.confidence > 0]


def test_a_replaced_selector_keeps_error_reporting(make_fragment):
    coordinator = StrategyCoordinator(selector=EveryoneSelector())
    result = coordinator.coordinate(
        "q", [Strategy("ok"), Strategy("bad", fail=True)], 1000, fragments=[make_fragment()]
    )
    assert result.errors == ["bad: can_handle raised RuntimeError: cannot judge"]


def test_a_replaced_selector_keeps_circuit_pre_filtering(make_fragment):
    coordinator = StrategyCoordinator({"circuit_breaker_threshold": 1}, selector=EveryoneSelector())
    flaky = Strategy("flaky")
    coordinator.coordinate("q", [flaky], 1000, fragments=[make_fragment()])
    flaky.fail = True
    flaky.can_handle = lambda request, backends: 0.5
    coordinator.coordinate("q", [flaky], 1000, fragments=[make_fragment()])
    result = coordinator.coordinate("q", [flaky], 1000, fragments=[make_fragment()])
    assert result.circuit_broken == ["flaky"] and result.allocations == []


def test_the_selector_receives_the_original_strategy_in_its_candidates(make_fragment):
    strategy = Strategy("one")
    result = StrategyCoordinator(selector=EveryoneSelector()).coordinate(
        "q", [strategy], 1000, fragments=[make_fragment()]
    )
    assert result.allocations[0][0] == "one"
