"""Coordinator overhead per round: six no-op strategies through ``StrategyCoordinator``.

Each no-op strategy answers ``can_handle`` with 1.0 and ``assemble`` with ``[]`` at once, so a
round's time is the coordinator's own cost: coercion, selection, allocation, the thread round
of the executor, result validation and the ``CoordinationResult``. The floor is the same six
strategies called directly (``can_handle`` then ``assemble``) in a loop. Goal: under 5 ms mean
per round on 2 cores.

    PYTHONPATH=core/src python bench/bench_coordinator.py [--rounds 500] [--profile] [--json]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from contextfuse.backends import BackendSet
from contextfuse.components.coordination import CoordinatorConfig, StrategyCoordinator
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextRequest,
    PlanContext,
    StrategyCapabilities,
)

GOAL_MS = 5.0
_CAPS = StrategyCapabilities()


class NoOp:
    """A strategy that does nothing, as fast as possible."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> StrategyCapabilities:
        return _CAPS

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        return 1.0

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[ContextFragment]:
        return []

    def explain(self) -> str:
        return "does nothing"


def timings_ms(round_: Callable[[], object], rounds: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        round_()
    samples: list[float] = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        round_()
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "mean_ms": statistics.fmean(ordered),
        "p50_ms": ordered[len(ordered) // 2],
        "p95_ms": ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)],
        "max_ms": ordered[-1],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--strategies", type=int, default=6)
    parser.add_argument("--profile", action="store_true", help="cProfile the coordinator rounds")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)

    strategies = [NoOp(f"noop-{i}") for i in range(args.strategies)]
    request = ContextRequest(query="where is the configuration parsed")
    budget = ContextBudget(max_tokens=8192)
    backends = BackendSet()
    plan = PlanContext(plan_id="bench")
    inner = ContextBudget.of(budget.available_tokens // len(strategies))
    coordinator = StrategyCoordinator(CoordinatorConfig())

    def coordinated() -> object:
        result = coordinator.coordinate(
            request, strategies, budget, backends=backends, plan_context=plan
        )
        assert len(result.results) == len(strategies), result.errors
        return result

    def spec_style() -> object:  # mappings coerced every round, as in the spec's example
        return coordinator.coordinate(
            {"query": "where is the configuration parsed"},
            strategies,
            budget,
            backends={},
            plan_context={"plan_id": "bench"},
        )

    def floor() -> object:
        for strategy in strategies:
            strategy.can_handle(request, backends)
            strategy.assemble(request, backends, inner, plan)
        return None

    figures: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "strategies": len(strategies),
        "rounds": args.rounds,
        "coordinator": summary(timings_ms(coordinated, args.rounds, args.warmup)),
        "coordinator_spec_style_inputs": summary(timings_ms(spec_style, args.rounds, args.warmup)),
        "floor": summary(timings_ms(floor, args.rounds, args.warmup)),
    }
    figures["ratio_mean"] = figures["coordinator"]["mean_ms"] / figures["floor"]["mean_ms"]
    figures["goal_mean_ms"] = GOAL_MS
    figures["meets_goal"] = figures["coordinator"]["mean_ms"] < GOAL_MS

    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(
            f"python {figures['python']}, {figures['cpus']} cpu(s), "
            f"{len(strategies)} no-op strategies, {args.rounds} rounds"
        )
        for key in ("coordinator", "coordinator_spec_style_inputs", "floor"):
            s = figures[key]
            print(
                f"  {key:31s} mean {s['mean_ms']:8.3f} ms  p50 {s['p50_ms']:8.3f} ms  "
                f"p95 {s['p95_ms']:8.3f} ms  max {s['max_ms']:8.3f} ms"
            )
        verdict = "meets" if figures["meets_goal"] else "MISSES"
        print(
            f"  coordinator / floor (mean): {figures['ratio_mean']:.0f}x; "
            f"{verdict} the {GOAL_MS:g} ms goal"
        )

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.rounds):
            coordinated()
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
