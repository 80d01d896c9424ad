"""``ACMSPipeline``: the three phases and ten components that turn a request into a payload.

Phase 1 (StrategyCoordinator) selects strategies, shares the budget and runs them; phase 2
(FusionEngine) deduplicates, resolves depths, scores and packs; phase 3 orders the result,
writes the preamble and, for focus nodes, compresses the rest to a skeleton.

Which object fills each component: the one passed to the constructor, else the one an
installed plugin provides through its hook, else the core default.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from contextfuse.backends import BackendSet, FragmentBackend
from contextfuse.components.protocols import (
    COMPONENT_NAMES,
    AssembledContext,
    ScoredFragment,
)
from contextfuse.config import check_section
from contextfuse.errors import ComponentContractError
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextPayload,
    ContextRequest,
    PlanContext,
)
from contextfuse.plugin_manager import ContextfusePluginManager, make_plugin_manager
from contextfuse.registry import StrategyRegistry
from contextfuse.slots import SLOTS
from contextfuse.strategy import AnyStrategy, as_strategy, renamed
from contextfuse.tokenizer import Tokenizer, default_tokenizer

__all__ = ["ACMSPipeline", "PipelineConfig"]

log = logging.getLogger(__name__)


class PipelineConfig(BaseModel):
    """Settings of a pipeline; each section is handed to its phase's components."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    coordinator: dict[str, Any] = Field(default_factory=dict)
    fusion: dict[str, Any] = Field(default_factory=dict)
    finalize: dict[str, Any] = Field(default_factory=dict)
    components: dict[str, str] = Field(
        default_factory=dict, description="Pins: component slot -> plugin name."
    )
    preamble_share: float = Field(
        default=0.05, ge=0.0, le=0.5, description="Share of the budget reserved for a preamble."
    )
    preamble_max_tokens: int = Field(default=400, ge=0)


class ACMSPipeline:
    """Assembles context payloads within a token budget.

    ``ACMSPipeline()`` loads installed plugins; pass ``plugin_manager=`` to control that
    (e.g. ``make_plugin_manager(autoload=False)`` in tests). Any of the ten components can be
    passed by keyword (``fragment_scorer=MyScorer()``).
    """

    def __init__(
        self,
        *,
        plugin_manager: ContextfusePluginManager | None = None,
        config: PipelineConfig | Mapping[str, Any] | None = None,
        tokenizer: Tokenizer | None = None,
        registry: StrategyRegistry | None = None,
        **components: Any,
    ) -> None:
        unknown = set(components) - set(COMPONENT_NAMES)
        if unknown:
            raise TypeError(
                f"unknown pipeline component(s) {sorted(unknown)}; components are "
                f"{list(COMPONENT_NAMES)}"
            )
        self.config = (
            config if isinstance(config, PipelineConfig) else PipelineConfig(**(config or {}))
        )
        # Each section is checked once, here: a typo is a ConfigError naming the key.
        for section in ("coordinator", "fusion", "finalize"):
            check_section(section, getattr(self.config, section), source="ACMSPipeline(config=...)")
        self._fusion_config = _fusion_config(self.config.fusion)
        self.plugin_manager = plugin_manager or make_plugin_manager(
            component_pins=self.config.components
        )
        if self.config.components:
            self.plugin_manager.component_pins.update(self.config.components)
        self.tokenizer = tokenizer or default_tokenizer()
        self._components: dict[str, Any] = {}
        for entry in SLOTS:
            component = components.get(entry.name)
            if component is None:
                section = getattr(self.config, entry.section)
                component = self.plugin_manager.make_component(entry.name, section)
            if not callable(getattr(component, entry.method, None)):
                raise ComponentContractError(
                    f"component {entry.name!r} ({type(component).__qualname__}) has no "
                    f"{entry.method}() method"
                )
            self._components[entry.name] = component
        self.registry = registry or StrategyRegistry(self.plugin_manager)

    # ---- components and strategies ----------------------------------------------------------

    def close(self) -> None:
        """Release what the components hold (the executor's worker threads)."""
        for component in self._components.values():
            close = getattr(component, "close", None)
            if callable(close):
                close()

    def __enter__(self) -> ACMSPipeline:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def component(self, slot: str) -> Any:
        """The object filling component ``slot``."""
        return self._components[slot]

    @property
    def strategies(self) -> dict[str, AnyStrategy]:
        """Registered strategies by name (the registry's, enabled or not)."""
        return {entry.name: entry.strategy for entry in self.registry.entries()}

    def register_strategy(self, name: str, strategy: Any) -> None:
        """Register ``strategy`` under ``name`` (v1 strategies are adapted)."""
        self.registry.register(name, renamed(as_strategy(strategy, name), name))

    def _resolve_strategies(self, names: Sequence[str] | None) -> list[AnyStrategy]:
        if names is None:
            return [entry.strategy for entry in self.registry.entries()]
        return [self.registry.get(name) for name in names]

    # ---- the v1 API -------------------------------------------------------------------------

    def assemble(
        self,
        plan_id: str,
        fragments: Sequence[ContextFragment],
        budget: ContextBudget,
        strategy: str = "relevance",
        *,
        preamble: bool = False,
    ) -> ContextPayload:
        """Rank pre-fetched ``fragments`` with one strategy and fill ``budget``.

        The preamble is off unless asked for, so the payload holds exactly the fragments.
        """
        request = ContextRequest(plan_id=plan_id, preferred_strategies=(strategy,))
        backends = BackendSet(fragments=FragmentBackend(fragments), tokenizer=self.tokenizer)
        return self.run(
            request,
            backends,
            budget,
            plan_context=PlanContext(plan_id=plan_id),
            strategies=[strategy],
            preamble=preamble,
        )

    # ---- the full pipeline ------------------------------------------------------------------

    def run(
        self,
        request: ContextRequest | Mapping[str, Any] | str,
        backends: BackendSet | Mapping[str, Any],
        budget: ContextBudget,
        *,
        plan_context: PlanContext | Mapping[str, Any] | None = None,
        strategies: Sequence[str] | None = None,
        preamble: bool = True,
        explain: bool = False,
    ) -> ContextPayload:
        """Run the three phases for ``request`` over ``backends`` and return the payload."""
        from contextfuse.components.coordination import StrategyCoordinator
        from contextfuse.components.fusion import FusionEngine

        started = time.perf_counter()
        request = ContextRequest.coerce(request)
        backends = BackendSet.coerce(backends)
        plan = PlanContext.coerce(plan_context or {"plan_id": request.plan_id or ""})
        chosen = self._resolve_strategies(strategies)

        # Phase 1: strategy orchestration.
        coordinator = StrategyCoordinator(
            selector=self._components["strategy_selector"],
            allocator=self._components["budget_allocator"],
            executor=self._components["strategy_executor"],
        )
        coordination = coordinator.coordinate(
            request=request,
            strategies=chosen,
            budget=budget,
            backends=backends,
            plan_context=plan,
        )
        sources, ranks = coordination.sources(), coordination.ranks()
        quality = {s.name: s.capabilities.quality_score for s in chosen}

        # Phase 2: fusion. A preamble's tokens come off the budget before packing.
        reserve = self._preamble_reserve(budget) if preamble else 0
        fusion = FusionEngine(
            deduplicator=self._components["fragment_deduplicator"],
            resolver=self._components["detail_depth_resolver"],
            scorer=self._components["fragment_scorer"],
            packer=self._components["budget_packer"],
            config=self._fusion_config,
        ).fuse(
            coordination.fragments,
            budget,
            plan_context=plan,
            sources=sources,
            ranks=ranks,
            quality=quality,
            reserve_tokens=reserve,
        )

        scored = list(fusion.scored)

        # Phase 3: finalization.
        ordered: list[ScoredFragment] = self._components["fragment_orderer"].order(scored, request)
        fragments = [s.fragment for s in ordered]
        if request.focus_nodes:
            focus_tokens = sum(
                f.token_count for f in fragments if _in_focus(f.uko_node, request.focus_nodes)
            )
            compressed = self._components["skeleton_compressor"].compress(
                AssembledContext(tuple(fragments), dict(fusion.alternatives)),
                list(request.focus_nodes),
                max(0, budget.available_tokens - reserve - focus_tokens),
            )
            fragments = list(compressed.fragments)
        strategies_used = tuple(coordination.strategies_used)
        preamble_text: str | None = None
        preamble_tokens = 0
        if preamble and reserve:
            total = sum(f.token_count for f in fragments)
            preamble_text = self._components["preamble_generator"].generate(
                fragments,
                strategies_used,
                total / budget.available_tokens,
                reserve,
                [s.fragment for s in fusion.omitted],
            )
            preamble_tokens = self.tokenizer.count(preamble_text) if preamble_text else 0
            if preamble_tokens > reserve:
                raise ComponentContractError(
                    f"preamble_generator wrote {preamble_tokens} tokens; it was given {reserve}"
                )
        explanation = (
            _explain(ordered, fusion, coordination, reserve, time.perf_counter() - started)
            if explain
            else None
        )
        payload = ContextPayload(
            plan_id=request.plan_id or plan.plan_id,
            fragments=tuple(fragments),
            budget=budget,
            strategies_used=strategies_used,
            preamble=preamble_text or None,
            preamble_tokens=preamble_tokens,
            explanation=explanation,
        )
        if not payload.is_within_budget:
            raise ComponentContractError(
                f"the pipeline produced {payload.total_tokens + payload.preamble_tokens} tokens "
                f"for a budget of {budget.available_tokens}"
            )
        self._notify(request, payload)
        return payload

    def compress_for_child(
        self, payload: ContextPayload, child_focus: Sequence[str], skeleton_budget: int
    ) -> AssembledContext:
        """Compress a parent's payload for a child task focused on ``child_focus`` nodes."""
        result: AssembledContext = self._components["skeleton_compressor"].compress(
            AssembledContext(payload.fragments), list(child_focus), skeleton_budget
        )
        return result

    def _preamble_reserve(self, budget: ContextBudget) -> int:
        share = int(budget.available_tokens * self.config.preamble_share)
        return max(0, min(share, self.config.preamble_max_tokens))

    def _notify(self, request: ContextRequest, payload: ContextPayload) -> None:
        # One call; a failing observer is logged and does not silence the others.
        self.plugin_manager.notify(
            "contextfuse_assembly_finished", request=request, payload=payload
        )


def _fusion_config(section: Mapping[str, Any]) -> Any:
    from contextfuse.components.fusion import FusionConfig

    return FusionConfig(**section)


def _in_focus(node: str, focus: Iterable[str]) -> bool:
    return any(node == f or node.startswith(f + "#") for f in focus)


def _explain(
    ordered: Sequence[ScoredFragment],
    fusion: Any,
    coordination: Any,
    reserve: int,
    seconds: float,
) -> dict[str, Any]:
    """What the pipeline decided, in units a reader can check (``--explain``, the explorer)."""
    ranks = coordination.ranks()
    fallbacks, notes, reasons = fusion.fallbacks, fusion.packer_notes, fusion.depth_reasons
    kept = {s.fragment.uko_node for s in ordered}
    ended = "fragment cap" if fusion.stopped_by == "fragment cap" else "not reached"
    omitted = [
        {
            "uko_node": s.fragment.uko_node,
            "score": round(s.score, 6),
            "depth": s.fragment.detail_depth,
            "tokens": s.fragment.token_count,
            "reason": notes.get(s.fragment.uko_node, ended),
        }
        for s in fusion.omitted
        if s.fragment.metadata.get("role", "candidate") == "candidate"
        and s.fragment.uko_node not in kept
    ][:_OMITTED_SHOWN]
    for result in coordination.results:
        for uri in result.stats.get("below_cut_shown", ()):
            omitted.append(
                {"uko_node": uri, "strategy": result.strategy_name, "reason": "below the cut"}
            )
    return {
        "allocations": [list(a) for a in coordination.allocations],
        "circuit_broken": list(coordination.circuit_broken),
        "strategy_errors": {
            r.strategy_name: list(r.errors) for r in coordination.results if r.errors
        },
        "candidates": {
            r.strategy_name: {
                "rendered": len(r.stats.get("rank_order", ())),
                "below_cut": int(r.stats.get("below_cut", 0)),
            }
            for r in coordination.results
            if r.stats.get("ranked")
        },
        "preamble_reserve": reserve,
        "available_tokens": fusion.available_tokens,
        "dedup_count": fusion.dedup_count,
        "dropped_by_overage_guard": fusion.dropped_by_overage_guard,
        "depth_resolved_count": fusion.depth_resolved_count,
        "stopped_by": fusion.stopped_by,
        "fragments": [_explain_fragment(s, ranks, fallbacks, notes, reasons) for s in ordered],
        "omitted": omitted,
        "seconds": round(seconds, 4),
    }


#: Omitted fragments listed by ``--explain`` at most (the best of them).
_OMITTED_SHOWN = 50


def _explain_fragment(
    scored: ScoredFragment,
    ranks: Mapping[str, Mapping[str, int]],
    fallbacks: Mapping[str, tuple[int, int]],
    notes: Mapping[str, str],
    reasons: Mapping[str, str],
) -> dict[str, Any]:
    fragment = scored.fragment
    node = fragment.uko_node
    if node in fallbacks:
        depth_by = "budget_packer"
        before, after = fallbacks[node]
        reason = notes.get(node) or (
            f"fell back from depth {before} to {after}: the deeper rendering did not fit"
        )
    elif node in reasons:
        depth_by, reason = "detail_depth_resolver", reasons[node]
    else:
        depth_by = "strategy"
        reason = str(fragment.metadata.get("depth_reason", "the rendering the strategy returned"))
    return {
        "uko_node": node,
        "resource_uri": fragment.provenance.resource_uri,
        "location": fragment.provenance.location,
        "strategies": list(scored.strategies),
        "score": round(scored.score, 6),
        "components": {k: round(v, 6) for k, v in scored.components.items()},
        # Each strategy's own rank of the node (1 = its best) and the share that agreed.
        "ranks": {name: order[node] + 1 for name, order in ranks.items() if node in order},
        "agreement": round(sum(node in order for order in ranks.values()) / max(1, len(ranks)), 3),
        "depth": fragment.detail_depth,
        "depth_by": depth_by,
        "depth_reason": reason,
        "signals": str(fragment.metadata.get("signals", "")),
        "redacted": int(fragment.metadata.get("redacted", "0") or 0),
        "tokens": fragment.token_count,
    }
