"""Phase 1, strategy orchestration: the defaults and the ``StrategyCoordinator`` facade.

``ConfidenceWeightedSelector`` polls each strategy's ``can_handle``, ``ProportionalBudgetAllocator``
shares the token budget in proportion to confidence, and ``ParallelStrategyExecutor`` runs the
strategies on threads with a round deadline and a per-strategy circuit breaker.
``StrategyCoordinator.coordinate()`` chains the three (``spec/acms-fusion.md``).

Decisions where the spec is silent:

* A preferred strategy's confidence is multiplied by ``preference_boost`` *after* clamping to
  ``[0, 1]`` and is not clamped again, so it may exceed 1.0 (up to ``preference_boost``):
  allocation is proportional, so a boost capped at 1.0 would do nothing for a strategy that is
  already certain.
* Strategies whose circuit is open are removed before allocation, so their tokens go to the
  strategies that will run; they are listed in ``CoordinationResult.circuit_broken``.
* When every allocated strategy sits at ``per_strategy_max_cap``, the tokens left over are not
  allocated: the allocations then sum to less than the total budget.
* ``executor_timeout`` is a round deadline measured from the start of ``execute``. A strategy
  still running then has timed out (a failure for its circuit); one that never started because
  every worker was busy is reported as not started and does not count against its circuit.
* A strategy that returns too many tokens or fragments is trimmed, not failed: the run counts
  as a success for its circuit and the trim is reported.
* ``CoordinationResult.strategies_used`` lists the strategies that ran successfully *and*
  contributed at least one fragment, in allocation order.

Every ``ContextStrategyResult`` the executor writes has ``stats["status"]`` (``ok``, ``error``,
``timeout``, ``not_started``, ``circuit_open`` or ``skipped``) and ``stats["allocation"]``; a
successful one also has ``rank_order`` (uko_node in the strategy's own order, first occurrence)
and ``fragment_order`` (fragment_id in that order), and when trimmed ``trimmed_tokens`` and
``trimmed_fragments``.
"""

from __future__ import annotations

from contextfuse.components.coordination.allocator import ProportionalBudgetAllocator
from contextfuse.components.coordination.breaker import CircuitState
from contextfuse.components.coordination.config import CoordinatorConfig, StrategyLimits
from contextfuse.components.coordination.executor import ParallelStrategyExecutor
from contextfuse.components.coordination.facade import StrategyCoordinator
from contextfuse.components.coordination.result import CoordinationResult
from contextfuse.components.coordination.selector import ConfidenceWeightedSelector, Selection

__all__ = [
    "CircuitState",
    "ConfidenceWeightedSelector",
    "CoordinationResult",
    "CoordinatorConfig",
    "ParallelStrategyExecutor",
    "ProportionalBudgetAllocator",
    "Selection",
    "StrategyCoordinator",
    "StrategyLimits",
]
