"""The plan-decision-context strategy: the plan a request belongs to, and what was decided.

With a plan id, it returns the plan, its ancestors and their decisions, nearest first: every
record gets a one-line listing first, then the nearest are deepened (full text, else a
summary) while the budget lasts, so a small budget still shows the whole chain. Without one,
it returns the decisions whose text matches the request. Active plans and decisions in force
are warm; closed plans, and decisions superseded, rejected or deprecated, are cold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from contextfuse.backends import BackendSet, PlanStore, Rendering
from contextfuse.kb.plans import decision_tier
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextRequest,
    Decision,
    DetailDepth,
    FragmentProvenance,
    Plan,
    PlanContext,
    StrategyCapabilities,
    Tier,
)

__all__ = ["PlanDecisionContextStrategy"]

#: Relevance lost per step up the plan hierarchy.
ANCESTOR_DECAY = 0.8
#: Relevance of a decision no longer in force, relative to one in force.
INACTIVE_FACTOR = 0.5
#: Relevance added to a record of the chain whose text also matches the request.
MATCH_BONUS = 0.2
#: Decisions matched by text, at most (without a plan id).
SEARCH_HITS = 40
_DEPTHS = (DetailDepth.FULL_SOURCE, DetailDepth.SIGNATURES)


@attrs.frozen
class _Item:
    """A plan or decision to show, with its relevance, tier and distance from the plan."""

    record: Plan | Decision
    relevance: float
    tier: Tier
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

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[ContextFragment]:
        store = backends.plans
        if store is None or budget.available_tokens <= 0:
            return []
        plan_id = request.plan_id or plan_context.plan_id
        context: PlanContext | None = None
        if plan_id:
            same = plan_context.plans and plan_context.plan_id == plan_id
            context = plan_context if same else store.get_plan(plan_id)
        if context is not None and context.plans:
            items = _chain(context, _matches(store, request.query))
        elif request.query.strip():
            items = _matching_decisions(store, request.query)
        else:
            return []
        renderings = store.get_renderings([i.record.uri for i in items], (0, *_DEPTHS))
        return _fit(items, renderings, budget.available_tokens, self.name)

    def explain(self) -> str:
        return (
            "The plan the request belongs to, its ancestor plans and their decisions, nearest "
            "first, each as deep as the budget allows (superseded decisions shown shallower); "
            "without a plan, the decisions whose text matches the request."
        )


def _decision_hits(store: PlanStore, query: str, limit: int) -> list[tuple[str, float]]:
    hits = store.search(query, limit=limit * 2)
    return [(h.uri, h.score) for h in hits if h.uri.startswith("decision://")][:limit]


def _matches(store: PlanStore, query: str) -> dict[str, float]:
    """URI -> match strength in [0, 1] of the plans and decisions matching ``query``."""
    if not query.strip():
        return {}
    hits = store.search(query, limit=SEARCH_HITS)
    best = max((h.score for h in hits), default=0.0) or 1.0
    return {h.uri: h.score / best for h in hits}


def _chain(context: PlanContext, matches: Mapping[str, float]) -> list[_Item]:
    """The plan, then its decisions, then each ancestor and its decisions: nearest first."""
    by_plan: dict[str | None, list[Decision]] = {}
    for decision in context.decision_records:
        by_plan.setdefault(decision.plan_id, []).append(decision)
    items: list[_Item] = []
    for distance, plan in enumerate(context.plans):
        base = ANCESTOR_DECAY**distance
        bonus = MATCH_BONUS * matches.get(plan.uri, 0.0)
        relevance = 1.0 if distance == 0 else 0.9 * base + bonus
        items.append(_Item(plan, min(1.0, relevance), plan.tier, distance))
        for decision in by_plan.get(plan.id, []):
            weight = 0.95 if decision.in_force else 0.95 * INACTIVE_FACTOR
            value = weight * base + MATCH_BONUS * matches.get(decision.uri, 0.0)
            items.append(_Item(decision, min(1.0, value), decision_tier(decision, plan), distance))
    return items


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


def _fit(
    items: Sequence[_Item],
    renderings: Mapping[str, Mapping[int, Rendering]],
    available: int,
    strategy: str,
) -> list[ContextFragment]:
    """One fragment per item: every item listed first, then the nearest deepened in order."""
    chosen: dict[str, Rendering] = {}
    used = 0
    for item in items:
        line = renderings.get(item.record.uri, {}).get(DetailDepth.MODULE_LISTING)
        if line is not None and used + line.token_count <= available:
            chosen[item.record.uri] = line
            used += line.token_count
    for item in items:
        uri = item.record.uri
        current = chosen.get(uri)
        if current is None:
            continue
        depths = _DEPTHS if _deep_worthy(item.record) else _DEPTHS[1:]
        for depth in depths:
            deeper = renderings.get(uri, {}).get(depth)
            if deeper is None or deeper.content == current.content:
                continue
            if used - current.token_count + deeper.token_count <= available:
                used += deeper.token_count - current.token_count
                chosen[uri] = deeper
                break
    return [
        _fragment(item, chosen[item.record.uri], strategy)
        for item in items
        if item.record.uri in chosen
    ]


def _deep_worthy(record: Plan | Decision) -> bool:
    """Decisions no longer in force are shown at most as a summary."""
    return isinstance(record, Plan) or record.in_force


def _fragment(item: _Item, rendering: Rendering, strategy: str) -> ContextFragment:
    record = item.record
    kind = "plan" if isinstance(record, Plan) else "decision"
    resource = record.uri
    if isinstance(record, Decision) and record.source:
        resource = f"project://{record.uri.split('/')[2]}/{record.source}"
    return ContextFragment(
        uko_node=record.uri,
        content=rendering.content,
        detail_depth=rendering.depth,
        token_count=rendering.token_count,
        relevance_score=max(0.0, min(1.0, item.relevance)),
        provenance=FragmentProvenance(resource_uri=resource, resource_type=kind),
        tier=item.tier,
        metadata={
            "strategy": strategy,
            "kind": kind,
            "status": record.status,
            "distance": str(item.distance),
        },
    )
