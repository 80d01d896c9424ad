"""CoordinatorConfig, ConfidenceWeightedSelector, ProportionalBudgetAllocator, StrategyCoordinator.

The executor (threads, deadlines, circuit breakers) is in test_coordinator_executor.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from fractions import Fraction
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from contextfuse.backends import BackendSet, FragmentBackend
from contextfuse.components.coordination import (
    ConfidenceWeightedSelector,
    CoordinationResult,
    CoordinatorConfig,
    ParallelStrategyExecutor,
    ProportionalBudgetAllocator,
    StrategyCoordinator,
)
from contextfuse.components.protocols import (
    Allocation,
    BudgetAllocator,
    Candidate,
    StrategyExecutor,
    StrategySelector,
)
from contextfuse.errors import ComponentContractError
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextRequest,
    FragmentProvenance,
    PlanContext,
    StrategyCapabilities,
)
from contextfuse.ranking import RecencyStrategy, RelevanceStrategy

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def frag(node: str, tokens: int = 10, relevance: float = 0.5, age_days: int = 0) -> ContextFragment:
    return ContextFragment(
        uko_node=node,
        content=f"content of {node}",
        token_count=tokens,
        relevance_score=relevance,
        provenance=FragmentProvenance(resource_uri=node),
        created_at=T0 - timedelta(days=age_days),
    )


class Stub:
    """A strategy with a fixed (or computed) confidence and a fixed answer."""

    def __init__(
        self,
        name: str,
        confidence: Any = 1.0,
        *,
        caps: StrategyCapabilities | None = None,
        answer: Callable[[ContextBudget], Any] | None = None,
    ) -> None:
        self._name = name
        self._confidence = confidence
        self._caps = caps or StrategyCapabilities()
        self._answer = answer or (lambda budget: [])
        self.polled = 0
        self.plans: list[PlanContext] = []
        self.requests: list[ContextRequest] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> StrategyCapabilities:
        return self._caps

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        self.polled += 1
        if callable(self._confidence):
            return float(self._confidence())
        return self._confidence  # type: ignore[no-any-return]

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> Any:
        self.plans.append(plan_context)
        self.requests.append(request)
        return self._answer(budget)

    def explain(self) -> str:
        return "test stub"


def fill(*fragments: ContextFragment) -> Callable[[ContextBudget], list[ContextFragment]]:
    return lambda budget: list(fragments)


def boom(budget: ContextBudget) -> Any:
    raise RuntimeError("boom")


REQUEST = ContextRequest()


def select(
    strategies: Sequence[Stub],
    request: ContextRequest = REQUEST,
    backends: BackendSet | None = None,
    **config: Any,
) -> tuple[list[tuple[str, float]], ConfidenceWeightedSelector]:
    selector = ConfidenceWeightedSelector(CoordinatorConfig(**config))
    candidates = selector.select(strategies, request, backends or BackendSet())
    return [(c.name, c.confidence) for c in candidates], selector


def allocate(confidences: dict[str, float], total: int, **config: Any) -> list[tuple[str, int]]:
    allocator = ProportionalBudgetAllocator(CoordinatorConfig(**config))
    candidates = [Candidate(strategy=Stub(n), confidence=c) for n, c in confidences.items()]
    return [(a.name, a.tokens) for a in allocator.allocate(candidates, total, REQUEST)]


# ---- configuration ----------------------------------------------------------------------------


def test_config_defaults_are_the_specs() -> None:
    config = CoordinatorConfig()
    assert config.model_dump() == {
        "min_useful_budget": 64,
        "executor_timeout": 30.0,
        "executor_max_workers": 4,
        "circuit_breaker_threshold": 3,
        "preference_boost": 1.5,
        "per_strategy_max_cap": None,
        "circuit_breaker_cooldown": 30.0,
        "max_fragments_per_strategy": 100,
        "min_candidates": 150,
        "tokens_per_candidate": 40,
        "header_files": 40,
        "strategy_limits": {},
    }


@pytest.mark.parametrize(
    "bad",
    [
        {"min_useful_budget": 0},
        {"executor_timeout": 0},
        {"executor_timeout": math.nan},
        {"executor_timeout": math.inf},
        {"executor_max_workers": 0},
        {"circuit_breaker_threshold": 0},
        {"preference_boost": 0.5},
        {"per_strategy_max_cap": 0},
        {"per_strategy_max_cap": 32},  # below min_useful_budget 64
        {"circuit_breaker_cooldown": -1},
        {"max_fragments_per_strategy": 0},
        {"unknown_setting": 1},
    ],
)
def test_config_rejects_invalid_values(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        CoordinatorConfig(**bad)


def test_config_accepts_the_registry_setting_names_as_aliases() -> None:
    config = CoordinatorConfig.coerce({"timeout_seconds": 5, "max_workers": 2, "max_fragments": 7})
    assert (config.executor_timeout, config.executor_max_workers) == (5.0, 2)
    assert config.max_fragments_per_strategy == 7


def test_config_is_frozen() -> None:
    with pytest.raises(ValidationError):
        CoordinatorConfig().min_useful_budget = 1


def test_the_defaults_implement_their_protocols() -> None:
    assert isinstance(ConfidenceWeightedSelector(), StrategySelector)
    assert isinstance(ProportionalBudgetAllocator(), BudgetAllocator)
    assert isinstance(ParallelStrategyExecutor(), StrategyExecutor)


# ---- selection --------------------------------------------------------------------------------


def test_selector_orders_candidates_by_confidence_then_name() -> None:
    chosen, _ = select([Stub("b", 0.5), Stub("c", 0.9), Stub("a", 0.5)])
    assert chosen == [("c", 0.9), ("a", 0.5), ("b", 0.5)]


def test_selector_boosts_preferred_strategies_by_preference_boost() -> None:
    request = ContextRequest(preferred_strategies=("low",))
    chosen, _ = select([Stub("high", 0.6), Stub("low", 0.5)], request, preference_boost=1.5)
    assert chosen == [("low", 0.75), ("high", 0.6)]


def test_a_boosted_confidence_may_exceed_one_so_the_boost_still_shifts_the_budget() -> None:
    request = ContextRequest(preferred_strategies=("sure",))
    chosen, _ = select([Stub("sure", 1.0), Stub("other", 1.0)], request, preference_boost=2.0)
    assert chosen == [("sure", 2.0), ("other", 1.0)]


def test_selector_clamps_confidence_to_the_unit_interval() -> None:
    chosen, _ = select([Stub("big", 7), Stub("inf", math.inf), Stub("neg", -3.0)])
    assert chosen == [("big", 1.0), ("inf", 1.0)]


def test_selector_drops_strategies_with_zero_confidence() -> None:
    chosen, selector = select([Stub("zero", 0.0), Stub("some", 0.1)])
    assert chosen == [("some", 0.1)]
    assert selector.last_dropped == {"zero": "confidence 0"}


def test_selector_drops_strategies_missing_a_required_backend_without_polling_them() -> None:
    needs_graph = Stub("graph", caps=StrategyCapabilities(uses_graph=True, uses_text=True))
    needs_vector = Stub("vector", caps=StrategyCapabilities(uses_vector=True))
    backends = BackendSet.coerce({"vector": True, "text": True})
    chosen, selector = select([needs_graph, needs_vector], backends=backends)
    assert chosen == [("vector", 1.0)]
    assert needs_graph.polled == 0
    assert selector.last_dropped == {"graph": "missing backend(s): graph"}


@pytest.mark.parametrize(
    ("confidence", "message"),
    [
        (lambda: 1 / 0, "can_handle raised ZeroDivisionError: division by zero"),
        ("high", "can_handle returned 'high' (str), expected a number in [0, 1]"),
        (None, "can_handle returned None (NoneType), expected a number in [0, 1]"),
        (math.nan, "can_handle returned nan (float), expected a number in [0, 1]"),
    ],
)
def test_a_failing_can_handle_leaves_out_only_that_strategy(confidence: Any, message: str) -> None:
    chosen, selector = select([Stub("broken", confidence), Stub("fine", 0.4)])
    assert chosen == [("fine", 0.4)]
    assert selector.last_errors == {"broken": message}


def test_a_strategy_whose_capabilities_raise_is_left_out() -> None:
    class NoCaps(Stub):
        @property
        def capabilities(self) -> StrategyCapabilities:
            raise LookupError("no capabilities")

    chosen, selector = select([NoCaps("nocaps"), Stub("fine")])
    assert chosen == [("fine", 1.0)]
    assert selector.last_errors == {"nocaps": "capabilities raised LookupError: no capabilities"}


def test_a_repeated_strategy_name_keeps_the_first_strategy() -> None:
    first, second = Stub("twin", 0.3), Stub("twin", 0.9)
    chosen, selector = select([first, second])
    assert chosen == [("twin", 0.3)]
    assert second.polled == 0
    assert "twin" in selector.last_errors


# ---- allocation: examples ---------------------------------------------------------------------


def test_allocation_is_proportional_to_confidence() -> None:
    assert allocate({"a": 0.8, "b": 0.2}, 1000) == [("a", 800), ("b", 200)]


def test_rounding_leftovers_go_to_the_largest_remainders_ties_by_name() -> None:
    assert allocate({"c": 1.0, "a": 1.0, "b": 1.0}, 100, min_useful_budget=1) == [
        ("a", 34),
        ("b", 33),
        ("c", 33),
    ]


def test_a_share_below_min_useful_budget_is_excluded_and_given_to_the_others() -> None:
    # 200 * (0.4, 0.3, 0.3) = 80, 60, 60: only the weakest goes, then 0.4:0.3 gives 114, 86.
    shares = allocate({"a": 0.4, "b": 0.3, "c": 0.3}, 200, min_useful_budget=64)
    assert shares == [("a", 114), ("b", 86)]


def test_a_budget_too_small_for_anyone_goes_entirely_to_the_best_strategy() -> None:
    assert allocate({"a": 0.5, "b": 0.9}, 50, min_useful_budget=64) == [("b", 50)]


def test_the_cap_clamps_and_redistributes_the_excess_repeatedly() -> None:
    # 600/300/100 -> a capped at 400; 600 re-shared 3:1 -> 450/150 -> b capped; c gets 200.
    shares = allocate({"a": 0.6, "b": 0.3, "c": 0.1}, 1000, per_strategy_max_cap=400)
    assert shares == [("a", 400), ("b", 400), ("c", 200)]


def test_when_every_strategy_is_capped_the_rest_of_the_budget_is_left_unallocated() -> None:
    assert allocate({"a": 1.0, "b": 1.0}, 1000, per_strategy_max_cap=300) == [
        ("a", 300),
        ("b", 300),
    ]


def test_a_weak_strategy_is_judged_on_its_share_after_capping() -> None:
    # Uncapped, c would get 24 tokens; with a and b capped at 300 it gets 300 and is kept.
    shares = allocate({"a": 1.0, "b": 1.0, "c": 0.05}, 1000, per_strategy_max_cap=300)
    assert shares == [("a", 300), ("b", 300), ("c", 300)]


def test_no_budget_or_no_candidates_allocates_nothing() -> None:
    assert allocate({"a": 1.0}, 0) == []
    assert allocate({}, 1000) == []


# ---- allocation: properties -------------------------------------------------------------------


@attrs.frozen
class Scenario:
    confidences: dict[str, float]
    total: int
    minimum: int
    cap: int | None

    @property
    def config(self) -> dict[str, Any]:
        return {"min_useful_budget": self.minimum, "per_strategy_max_cap": self.cap}

    def ranked(self) -> list[str]:
        return sorted(self.confidences, key=lambda n: (-self.confidences[n], n))


# No deadline: a loaded CI machine must not turn a slow example into a failure.
PROPERTY = settings(deadline=None, max_examples=150)

CONFIDENCES = st.sampled_from([0.1, 0.25, 0.5, 0.75, 1.0, 1.5]) | st.floats(
    min_value=1e-3, max_value=1.5, allow_nan=False
)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    names = draw(
        st.lists(st.text("abcdef", min_size=1, max_size=3), min_size=1, max_size=8, unique=True)
    )
    confidences = {n: draw(CONFIDENCES) for n in names}
    minimum = draw(st.integers(1, 300))
    cap = draw(st.none() | st.integers(minimum, 5000))
    total = draw(st.integers(0, 20_000))
    return Scenario(confidences, total, minimum, cap)


def shares_of(s: Scenario) -> list[tuple[str, int]]:
    return allocate(s.confidences, s.total, **s.config)


@PROPERTY
@given(scenarios())
def test_allocations_sum_exactly_to_the_budget_unless_every_strategy_is_capped(s: Scenario) -> None:
    shares = shares_of(s)
    allocated = sum(t for _, t in shares)
    if s.total == 0:
        assert shares == []
    elif allocated != s.total:
        assert s.cap is not None
        assert all(t == s.cap for _, t in shares)
        assert allocated < s.total


@PROPERTY
@given(scenarios())
def test_allocations_are_positive_and_never_exceed_the_cap(s: Scenario) -> None:
    for _, tokens in shares_of(s):
        assert tokens >= 1
        assert s.cap is None or tokens <= s.cap


@PROPERTY
@given(scenarios())
def test_every_share_is_useful_unless_only_the_best_strategy_remains(s: Scenario) -> None:
    shares = shares_of(s)
    if len(shares) > 1:
        assert all(tokens >= s.minimum for _, tokens in shares)
    elif shares:
        best = s.ranked()[0]
        assert shares == [(best, min(s.total, s.cap or s.total))]


@PROPERTY
@given(scenarios())
def test_only_the_weakest_strategies_are_excluded(s: Scenario) -> None:
    names = [n for n, _ in shares_of(s)]
    assert names == s.ranked()[: len(names)]


@PROPERTY
@given(scenarios())
def test_no_excluded_strategy_could_have_had_a_useful_share(s: Scenario) -> None:
    kept = len(shares_of(s))
    ranked = s.ranked()
    if 0 < kept < len(ranked):
        one_more = {n: s.confidences[n] for n in ranked[: kept + 1]}
        unfiltered = dict(
            allocate(one_more, s.total, min_useful_budget=1, per_strategy_max_cap=s.cap)
        )
        assert unfiltered.get(ranked[kept], 0) < s.minimum


@PROPERTY
@given(scenarios(), st.randoms())
def test_allocation_is_deterministic_whatever_the_candidate_order(s: Scenario, rnd: Any) -> None:
    items = list(s.confidences.items())
    rnd.shuffle(items)
    assert allocate(dict(items), s.total, **s.config) == shares_of(s)


@PROPERTY
@given(scenarios())
def test_uncapped_shares_are_within_one_token_of_the_exact_proportion(s: Scenario) -> None:
    s = attrs.evolve(s, cap=None)
    shares = shares_of(s)
    weight = sum(Fraction(s.confidences[n]) for n, _ in shares)
    for name, tokens in shares:
        exact = s.total * Fraction(s.confidences[name]) / weight
        assert abs(tokens - exact) < 1


@PROPERTY
@given(scenarios())
def test_a_stronger_strategy_never_gets_fewer_tokens_than_a_weaker_one(s: Scenario) -> None:
    tokens = [t for _, t in shares_of(s)]
    assert tokens == sorted(tokens, reverse=True)


# ---- the coordinator --------------------------------------------------------------------------


def corpus() -> list[ContextFragment]:
    """Eight 100-token fragments; the most relevant are the oldest."""
    return [frag(f"project://p/f{i}.py", 100, relevance=i / 10, age_days=i) for i in range(8)]


def spec_example(
    coordinator: StrategyCoordinator, fragments: Sequence[ContextFragment]
) -> CoordinationResult:
    return coordinator.coordinate(
        request={"preferred_strategies": ["relevance"]},
        strategies=[RelevanceStrategy(), RecencyStrategy()],
        budget=ContextBudget(max_tokens=4096),
        fragments=fragments,
        backends={"vector": True},
        plan_context={"plan_id": "plan-42"},
    )


def test_the_spec_example_allocates_coordinates_and_reports() -> None:
    coordinator = StrategyCoordinator(
        config=CoordinatorConfig(per_strategy_max_cap=500, min_useful_budget=64)
    )
    result = spec_example(coordinator, corpus())
    # 3584 tokens shared 1.5 : 1.0 -> 2150 / 1434, both capped at 500.
    assert result.allocations == [("relevance", 1.5, 500), ("recency", 1.0, 500)]
    assert result.strategies_used == ["relevance", "recency"]
    assert result.circuit_broken == []
    assert result.errors == []
    assert result.total_budget == 3584
    assert result.tokens_used == 1000
    assert [r.strategy_name for r in result.results] == ["relevance", "recency"]


def test_fragments_are_concatenated_in_allocation_order_each_in_its_strategys_order() -> None:
    coordinator = StrategyCoordinator(config=CoordinatorConfig(per_strategy_max_cap=500))
    nodes = [
        f.uko_node.removeprefix("project://p/")
        for f in spec_example(coordinator, corpus()).fragments
    ]
    by_relevance = ["f7.py", "f6.py", "f5.py", "f4.py", "f3.py"]
    by_recency = ["f0.py", "f1.py", "f2.py", "f3.py", "f4.py"]  # not re-sorted by relevance
    assert nodes == by_relevance + by_recency


def test_the_result_exposes_each_strategys_ranks_and_each_nodes_sources() -> None:
    coordinator = StrategyCoordinator(config=CoordinatorConfig(per_strategy_max_cap=500))
    result = spec_example(coordinator, corpus())
    assert result.ranks()["recency"]["project://p/f0.py"] == 0
    assert result.ranks()["relevance"]["project://p/f7.py"] == 0
    assert result.sources()["project://p/f3.py"] == ["relevance", "recency"]
    assert result.sources()["project://p/f7.py"] == ["relevance"]


def test_request_and_plan_context_mappings_reach_the_strategies_coerced() -> None:
    stub = Stub("s")
    StrategyCoordinator().coordinate(
        request={"query": "q", "ticket": "T-1"},
        strategies=[stub],
        budget=1000,
        plan_context={"plan_id": "plan-7", "owner": "me"},
    )
    assert stub.requests[0].query == "q"
    assert stub.requests[0].metadata == {"ticket": "T-1"}
    assert stub.plans[0].plan_id == "plan-7"


def test_a_token_count_is_accepted_as_the_budget() -> None:
    result = StrategyCoordinator().coordinate("q", [Stub("s")], 1234)
    assert result.allocations == [("s", 1.0, 1234)]


def test_declared_backends_select_the_strategies_that_need_them() -> None:
    vector = Stub("vector", caps=StrategyCapabilities(uses_vector=True))
    graph = Stub("graph", caps=StrategyCapabilities(uses_graph=True))
    result = StrategyCoordinator().coordinate(
        "q", [vector, graph], ContextBudget(max_tokens=4096), backends={"vector": True}
    )
    assert [name for name, _, _ in result.allocations] == ["vector"]


def test_given_fragments_are_served_as_the_fragments_backend() -> None:
    seen: list[tuple[ContextFragment, ...]] = []

    class Peek(Stub):
        def assemble(self, request: Any, backends: BackendSet, budget: Any, plan: Any) -> Any:
            assert isinstance(backends.fragments, FragmentBackend)
            seen.append(backends.fragments.fragments)
            return []

    fragments = corpus()
    StrategyCoordinator().coordinate("q", [Peek("peek")], 1000, fragments=fragments)
    assert seen == [tuple(fragments)]


def test_given_fragment_mappings_are_validated() -> None:
    raw = frag("project://p/a.py").model_dump()
    result = StrategyCoordinator().coordinate("q", [RelevanceStrategy()], 1000, fragments=[raw])
    assert [f.uko_node for f in result.fragments] == ["project://p/a.py"]


def test_a_given_fragment_of_the_wrong_type_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"fragments\[0\] is str"):
        StrategyCoordinator().coordinate(
            "q",
            [RelevanceStrategy()],
            1000,
            fragments=["text"],  # type: ignore[list-item]
        )


def test_v1_strategies_are_adapted() -> None:
    class TopOne:
        name = "top-one"

        def can_handle(self, request: dict[str, Any]) -> float:
            return 0.5

        def assemble(self, fragments: Sequence[ContextFragment], budget: Any) -> list[Any]:
            return [max(fragments, key=lambda f: f.relevance_score)]

        def explain(self) -> str:
            return "the single most relevant fragment"

    result = StrategyCoordinator().coordinate("q", [TopOne()], 1000, fragments=corpus())
    assert result.strategies_used == ["top-one"]
    assert [f.uko_node for f in result.fragments] == ["project://p/f7.py"]


def test_the_same_strategy_objects_work_round_after_round() -> None:
    class V1:
        name = "v1"

        def can_handle(self, request: dict[str, Any]) -> float:
            return 1.0

        def assemble(self, fragments: Sequence[ContextFragment], budget: Any) -> list[Any]:
            return list(fragments)[:1]

        def explain(self) -> str:
            return "first fragment"

    class Unhashable(Stub):  # cannot be memoised by object
        __hash__ = None  # type: ignore[assignment]

    strategies = [V1(), Unhashable("unhashable", answer=fill(frag("project://p/s.py")))]
    coordinator = StrategyCoordinator()
    for _ in range(3):
        result = coordinator.coordinate("q", strategies, 1000, fragments=corpus())
        assert result.strategies_used == ["unhashable", "v1"]


def test_something_that_is_not_a_strategy_is_rejected() -> None:
    with pytest.raises(TypeError, match="not a context strategy"):
        StrategyCoordinator().coordinate("q", [object()], 1000)


def test_strategies_used_lists_only_successful_strategies_that_contributed() -> None:
    strategies = [
        Stub("gives", 0.9, answer=fill(frag("project://p/a.py"))),
        Stub("empty", 0.8),
        Stub("fails", 0.7, answer=boom),
    ]
    result = StrategyCoordinator().coordinate("q", strategies, ContextBudget(max_tokens=4096))
    assert result.strategies_used == ["gives"]
    assert [r.strategy_name for r in result.results] == ["gives", "empty", "fails"]


def test_errors_name_the_strategy_they_come_from() -> None:
    strategies = [Stub("fails", answer=boom), Stub("confused", "very")]
    result = StrategyCoordinator().coordinate("q", strategies, 1000)
    assert result.errors == [
        "confused: can_handle returned 'very' (str), expected a number in [0, 1]",
        "fails: raised RuntimeError: boom",
    ]


def test_a_strategy_with_an_open_circuit_gets_no_budget_and_is_reported() -> None:
    coordinator = StrategyCoordinator(CoordinatorConfig(circuit_breaker_threshold=1))
    flaky = Stub("flaky", answer=boom)
    steady = Stub("steady", answer=fill(frag("project://p/a.py")))
    first = coordinator.coordinate("q", [flaky, steady], 1000)
    assert first.allocations == [("flaky", 1.0, 500), ("steady", 1.0, 500)]
    second = coordinator.coordinate("q", [flaky, steady], 1000)
    assert second.circuit_broken == ["flaky"]
    assert second.allocations == [("steady", 1.0, 1000)]
    assert second.strategies_used == ["steady"]


def test_the_circuit_state_outlives_a_round_and_lives_in_the_executor() -> None:
    executor = ParallelStrategyExecutor(CoordinatorConfig(circuit_breaker_threshold=1))
    flaky = Stub("flaky", answer=boom)
    StrategyCoordinator(executor=executor).coordinate("q", [flaky], 1000)
    result = StrategyCoordinator(executor=executor).coordinate("q", [flaky], 1000)
    assert result.circuit_broken == ["flaky"]


def test_injected_components_are_used() -> None:
    class Everything:
        def allocate(
            self, candidates: Sequence[Candidate], total_budget: int, request: ContextRequest
        ) -> list[Allocation]:
            best = candidates[0]
            return [
                Allocation(strategy=best.strategy, confidence=best.confidence, tokens=total_budget)
            ]

    result = StrategyCoordinator(allocator=Everything()).coordinate(
        "q", [Stub("a", 0.9), Stub("b", 0.8)], 1000
    )
    assert result.allocations == [("a", 0.9, 1000)]


def test_an_allocator_that_overspends_breaks_its_contract() -> None:
    class Overspender:
        def allocate(
            self, candidates: Sequence[Candidate], total_budget: int, request: ContextRequest
        ) -> list[Allocation]:
            return [Allocation(c.strategy, c.confidence, total_budget) for c in candidates]

    coordinator = StrategyCoordinator(allocator=Overspender())
    with pytest.raises(ComponentContractError, match="allocated 2000 tokens of a budget of 1000"):
        coordinator.coordinate("q", [Stub("a"), Stub("b")], 1000)


def test_no_strategy_able_to_run_gives_an_empty_result() -> None:
    result = StrategyCoordinator().coordinate("q", [Stub("none", 0.0)], 1000)
    assert (result.fragments, result.allocations, result.strategies_used) == ([], [], [])
