"""The plugin entry point: contributes the plan-decision-context strategy."""

from __future__ import annotations

from collections.abc import Sequence

from contextfuse.plugin import hookimpl
from contextfuse_plan_decision_context.strategy import PlanDecisionContextStrategy


@hookimpl
def contextfuse_strategies() -> Sequence[PlanDecisionContextStrategy]:
    return [PlanDecisionContextStrategy()]
