"""``FusionEngine``: the phase 2 facade (dedup, resolve depth, score, pack, overage guard).

The facade calls its components through their protocols, so any replacement keeps the
overage guard and the result's explanations. Two shortcuts keep the defaults fast at 100k
fragments without special-casing them: a scorer that implements ``KeyedScorer`` and a packer
that implements ``KeyedPacker`` share the scorer's sorted packing keys (any replacement that
implements both gets the same path), and the default deduplicator and resolver share one
grouping pass (``dedup_and_resolve``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from contextfuse.components.fusion.config import FusionConfig
from contextfuse.components.fusion.dedup import ContentHashDedup
from contextfuse.components.fusion.depth import (
    MaxDepthResolver,
    PolicyDepthResolver,
    dedup_and_resolve,
)
from contextfuse.components.fusion.gc_pause import gc_paused
from contextfuse.components.fusion.guard import BudgetOverageGuard
from contextfuse.components.fusion.result import FusionResult
from contextfuse.components.protocols import (
    BudgetPacker,
    DetailDepthResolver,
    FragmentDeduplicator,
    FragmentScorer,
    KeyedPacker,
    KeyedScorer,
)
from contextfuse.models import ContextBudget, ContextFragment, PlanContext
from contextfuse.slots import slot


def _has_own(component: object, method: str) -> bool:
    """Whether ``component`` has ``method`` without ``__getattr__``.

    ``isinstance`` on a protocol looks methods up statically only from Python 3.12: checking
    here too means a proxy that forwards attributes through ``__getattr__`` (a wrapper that
    records or changes ``score`` or ``pack``) is called through its plain method, the one it
    wraps, on every Python version.
    """
    return inspect.getattr_static(component, method, None) is not None


class FusionEngine:
    """Phase 2 facade: dedup -> resolve depth -> score -> pack -> overage guard.

    Every component is injectable (e.g. plugin-provided ones); the defaults are built from
    ``config``. ``fuse`` packs into ``budget.available_tokens - reserve_tokens`` (``budget``
    may also be a plain number of available tokens).

    ``pause_gc``: fusing allocates a record per fragment and creates no reference cycles, so
    the cyclic garbage collector has nothing to find in it; left on, it promotes those
    records and may then walk the whole heap (every fragment) in a full collection, which at
    100k fragments can cost as much as the fusion itself. ``fuse`` therefore pauses it for
    its own duration (re-entrant and thread-safe across concurrent calls; never re-enabled if
    it was off). Pass ``pause_gc=False`` to leave the collector alone.
    """

    def __init__(
        self,
        config: FusionConfig | None = None,
        *,
        deduplicator: FragmentDeduplicator | None = None,
        resolver: DetailDepthResolver | None = None,
        scorer: FragmentScorer | None = None,
        packer: BudgetPacker | None = None,
        guard: BudgetOverageGuard | None = None,
        pause_gc: bool = True,
    ) -> None:
        self.config = config if config is not None else FusionConfig()
        self.pause_gc = pause_gc
        cfg = self.config
        # The defaults are the slot table's (one place names them), built from ``config``.
        self.deduplicator: FragmentDeduplicator = deduplicator or slot(
            "fragment_deduplicator"
        ).build(cfg)
        self.resolver: DetailDepthResolver = resolver or slot("detail_depth_resolver").build(cfg)
        self.scorer: FragmentScorer = scorer or slot("fragment_scorer").build(cfg)
        self.packer: BudgetPacker = packer or slot("budget_packer").build(cfg)
        self.guard = guard or BudgetOverageGuard(enabled=cfg.overage_guard_enabled)

    def fuse(
        self,
        fragments: Sequence[ContextFragment],
        budget: ContextBudget | int,
        *,
        plan_context: PlanContext | Mapping[str, Any] | None = None,
        sources: Mapping[str, Sequence[str]] | None = None,
        ranks: Mapping[str, Mapping[str, int]] | None = None,
        quality: Mapping[str, float] | None = None,
        reserve_tokens: int = 0,
    ) -> FusionResult:
        """Fuse strategy output into what fits the budget.

        ``sources``: uko_node -> strategies that returned it; ``ranks``: strategy ->
        {uko_node: rank in its own order, 0 = best}; ``quality``: strategy -> quality score.
        """
        if reserve_tokens < 0:
            raise ValueError(f"reserve_tokens must be >= 0; got {reserve_tokens}")
        if isinstance(budget, ContextBudget):
            budget_model, available = budget, budget.available_tokens
        else:
            available = int(budget)
            budget_model = ContextBudget.of(available)
        # The resolver sizes pieces against the budget (a piece's share of it is a property of
        # the request, whatever the preamble takes); the packer fills what the reserve leaves.
        available = max(0, available - reserve_tokens)
        with gc_paused(self.pause_gc):
            return self._fuse(
                fragments,
                budget_model,
                available,
                PlanContext.coerce(plan_context),
                sources=sources,
                ranks=ranks,
                quality=quality,
            )

    def _fuse(
        self,
        fragments: Sequence[ContextFragment],
        budget_model: ContextBudget,
        available: int,
        plan_context: PlanContext,
        *,
        sources: Mapping[str, Sequence[str]] | None,
        ranks: Mapping[str, Mapping[str, int]] | None,
        quality: Mapping[str, float] | None,
    ) -> FusionResult:
        # The default dedup and resolver share one grouping pass, and a keyed scorer and packer
        # share the packing keys; otherwise each component is called through its protocol.
        # Both routes give one result.
        nodes: list[str] | None = None
        resolver = self.resolver
        if type(self.deduplicator) is ContentHashDedup and type(resolver) in _FUSED_RESOLVERS:
            resolution, dedup_count, nodes = dedup_and_resolve(
                fragments,
                resolver,  # type: ignore[arg-type]
                budget_model.available_tokens,
            )
        else:
            deduped = self.deduplicator.deduplicate(fragments)
            dedup_count = len(fragments) - len(deduped)
            resolution = self.resolver.resolve(deduped, budget_model)
        scorer, packer = self.scorer, self.packer
        if (
            isinstance(scorer, KeyedScorer)
            and isinstance(packer, KeyedPacker)
            and _has_own(scorer, "score_keyed")
            and _has_own(packer, "pack_keyed")
        ):
            scored_items, keys = scorer.score_keyed(
                resolution.fragments,
                plan_context,
                nodes=nodes,
                sources=sources,
                ranks=ranks,
                quality=quality,
            )
            result = packer.pack_keyed(scored_items, keys, available, resolution.alternatives)
        else:
            scored = scorer.score(
                resolution.fragments, plan_context, sources=sources, ranks=ranks, quality=quality
            )
            result = packer.pack(scored, available, resolution.alternatives)
        result = self.guard.enforce(result, available)

        kept = [s.fragment for s in result.packed]
        total = sum(f.token_count for f in kept)
        return FusionResult(
            fragments=kept,
            dedup_count=dedup_count,
            depth_resolved_count=resolution.resolved_count,
            dropped_by_overage_guard=result.dropped_by_overage_guard,
            total_tokens=total,
            budget_utilization=total / available if available else 0.0,
            scored=result.packed,
            omitted=result.omitted,
            alternatives=resolution.alternatives,
            fallbacks=result.fallbacks,
            available_tokens=available,
            depth_reasons=resolution.reasons,
            packer_notes=result.notes,
            stopped_by=result.stopped_by,
        )


#: Resolvers whose work is fused with the default deduplicator's in one grouping pass.
_FUSED_RESOLVERS = (MaxDepthResolver, PolicyDepthResolver)
