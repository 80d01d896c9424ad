"""contextfuse-plan-decision-context: a plan, its ancestors and their decisions."""

from contextfuse_plan_decision_context.strategy import PlanDecisionContextStrategy

__all__ = ["PlanDecisionContextStrategy"]
