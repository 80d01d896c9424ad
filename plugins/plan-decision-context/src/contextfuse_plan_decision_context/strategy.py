"""The plan-decision-context strategy: the plan a request belongs to, and what was decided.

With a plan id, it ranks the plan, its ancestors and their decisions, nearest first; without
one, the decisions whose text matches the request. Active plans and decisions in force are
warm; closed plans, and decisions superseded, rejected or deprecated, are cold and offered at
most as a summary. The pipeline shows each record as deep as the budget allows and falls
back to shallower renderings, down to a one-line listing, when it does not fit.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from contextfuse.plugin import (
    BackendSet,
    ContextRequest,
    Decision,
    DetailDepth,
    Plan,
    PlanContext,
    PlanStore,
    Ranked,
    Rendering,
    StrategyCapabilities,
    decision_tier,
)

__all__ = ["PlanDecisionContextStrategy"]

#: The score of each record of a plan chain relative to the record before it: the chain's
#: order (nearest first) is the ranking, by a margin larger than the pipeline's adjustments.
CHAIN_DECAY = 0.8
#: Relevance of a matching decision no longer in force, relative to one in force.
INACTIVE_FACTOR = 0.5
#: Decisions matched by text, at most (without a plan id).
SEARCH_HITS = 40
_DEPTHS = (DetailDepth.FULL_SOURCE, DetailDepth.SIGNATURES, DetailDepth.MODULE_LISTING)


@attrs.frozen
class _Item:
    """A plan or decision to show, with its relevance, tier and distance from the plan."""

    record: Plan | Decision
    relevance: float
    tier: str
    distance: int


class PlanDecisionContextStrategy:
    """Plan hierarchy and decisions from the plan store, nearest first."""

    name = "plan-decision-context"
    capabilities = StrategyCapabilities(
        uses_plans=True,
        resource_types=("plan", "decision"),
        uko_levels=(0, 4, 9),
        quality_score=0.7,
        supports_plan_hierarchy=True,
    )

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        store = backends.plans
        if store is None:
            return 0.0
        if request.plan_id and store.get_plan(request.plan_id) is not None:
            return 0.9
        if request.query.strip() and _decision_hits(store, request.query, limit=1):
            return 0.35
        return 0.0

    def rank(
        self, request: ContextRequest, backends: BackendSet, plan_context: PlanContext
    ) -> list[Ranked]:
        """The plan chain (or the matching decisions), nearest and strongest first."""
        store = backends.plans
        if store is None:
            return []
        plan_id = request.plan_id or plan_context.plan_id
        context: PlanContext | None = None
        if plan_id:
            same = plan_context.plans and plan_context.plan_id == plan_id
            context = plan_context if same else store.get_plan(plan_id)
        if context is not None and context.plans:
            items, signal = _chain(context), "plan chain"
        elif request.query.strip():
            items, signal = _matching_decisions(store, request.query), "decision search"
        else:
            return []
        renderings = store.get_renderings([i.record.uri for i in items], _DEPTHS)
        return [
            _ranked(item, renderings.get(item.record.uri, {}), {signal: position})
            for position, item in enumerate(items, start=1)
        ]

    def explain(self) -> str:
        return (
            "The plan the request belongs to, its ancestor plans and their decisions, nearest "
            "first, each as deep as the budget allows (superseded decisions shown shallower); "
            "without a plan, the decisions whose text matches the request."
        )


def _decision_hits(store: PlanStore, query: str, limit: int) -> list[tuple[str, float]]:
    hits = store.search(query, limit=limit * 2)
    return [(h.uri, h.score) for h in hits if h.uri.startswith("decision://")][:limit]


def _chain(context: PlanContext) -> list[_Item]:
    """The plan, then its decisions, then each ancestor and its decisions: nearest first."""
    by_plan: dict[str | None, list[Decision]] = {}
    for decision in context.decision_records:
        by_plan.setdefault(decision.plan_id, []).append(decision)
    records: list[tuple[Plan | Decision, str, int]] = []
    for distance, plan in enumerate(context.plans):
        records.append((plan, plan.tier, distance))
        for decision in by_plan.get(plan.id, []):
            records.append((decision, decision_tier(decision, plan), distance))
    return [
        _Item(record, CHAIN_DECAY**position, tier, distance)
        for position, (record, tier, distance) in enumerate(records)
    ]


def _matching_decisions(store: PlanStore, query: str) -> list[_Item]:
    """Decisions matching ``query``, best first; those no longer in force weigh half."""
    hits = _decision_hits(store, query, SEARCH_HITS)
    if not hits:
        return []
    records = store.get_records([uri for uri, _ in hits])
    plan_uris = [
        f"plan://{uri.split('/')[2]}/{r.plan_id}"
        for uri, r in records.items()
        if isinstance(r, Decision) and r.plan_id
    ]
    plans = store.get_records(plan_uris) if plan_uris else {}
    plans_by_id = {p.id: p for p in plans.values() if isinstance(p, Plan)}
    best = hits[0][1] or 1.0
    items: list[_Item] = []
    for uri, score in hits:
        decision = records.get(uri)
        if not isinstance(decision, Decision):
            continue
        plan = plans_by_id.get(decision.plan_id or "")
        factor = 1.0 if decision.in_force else INACTIVE_FACTOR
        items.append(_Item(decision, score / best * factor, decision_tier(decision, plan), 0))
    items.sort(key=lambda i: (-i.relevance, i.record.uri))
    return items


def _ranked(item: _Item, renderings: Mapping[int, Rendering], signals: Mapping[str, int]) -> Ranked:
    """The record as a candidate: decisions no longer in force offer no full text."""
    record = item.record
    kind = "plan" if isinstance(record, Plan) else "decision"
    resource = record.uri
    if isinstance(record, Decision) and record.source:
        resource = f"project://{record.uri.split('/')[2]}/{record.source}"
    deep = isinstance(record, Plan) or record.in_force
    offered = {d: r for d, r in renderings.items() if deep or d < DetailDepth.FULL_SOURCE}
    return Ranked(
        record.uri,
        item.relevance,
        signals,
        renderings=offered,
        resource_type=kind,
        resource_uri=resource,
        tier=item.tier,
        metadata={"status": record.status, "distance": str(item.distance)},
    )
