"""The ten pipeline components as protocols, and the records that flow between them.

Phase 1 (strategy orchestration): StrategySelector, BudgetAllocator, StrategyExecutor.
Phase 2 (fragment fusion): FragmentDeduplicator, DetailDepthResolver, FragmentScorer,
BudgetPacker. Phase 3 (finalization): FragmentOrderer, PreambleGenerator, SkeletonCompressor.

Two optional extensions let a scorer and a packer share precomputed packing keys
(``KeyedScorer``, ``KeyedPacker``): ``FusionEngine`` uses them when both its scorer and its
packer implement them, and the plain ``FragmentScorer`` / ``BudgetPacker`` methods otherwise.

Each protocol has one production default in ``contextfuse.components``; a plugin replaces one
through its ``contextfuse_<component>`` hook, a caller through ``ACMSPipeline(<component>=...)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from contextfuse.models import ContextBudget, ContextFragment, ContextRequest, PlanContext
from contextfuse.slots import SLOTS

if TYPE_CHECKING:
    from contextfuse.backends import BackendSet
    from contextfuse.strategy import AnyStrategy

__all__ = [
    "COMPONENT_NAMES",
    "Allocation",
    "AssembledContext",
    "BudgetAllocator",
    "BudgetPacker",
    "Candidate",
    "CircuitAware",
    "DepthResolution",
    "DetailDepthResolver",
    "ExecutionReport",
    "FragmentDeduplicator",
    "FragmentOrderer",
    "FragmentScorer",
    "KeyedPacker",
    "KeyedScorer",
    "PackKey",
    "PackResult",
    "PreambleGenerator",
    "ScoredFragment",
    "SkeletonCompressor",
    "StrategyExecutor",
    "StrategySelector",
]

#: Component slot names, in pipeline order (from ``contextfuse.slots.SLOTS``).
COMPONENT_NAMES: tuple[str, ...] = tuple(s.name for s in SLOTS)


# ---- records ----------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class Candidate:
    """A strategy the selector kept, with its (possibly boosted) confidence."""

    strategy: AnyStrategy
    confidence: float

    @property
    def name(self) -> str:
        return self.strategy.name


@attrs.frozen(slots=True)
class Allocation:
    """The tokens a strategy may fill in this round."""

    strategy: AnyStrategy
    confidence: float
    tokens: int

    @property
    def name(self) -> str:
        return self.strategy.name

    def as_tuple(self) -> tuple[str, float, int]:
        """``(name, confidence, tokens)``, the spec's allocation triple."""
        return (self.name, self.confidence, self.tokens)


@attrs.frozen(slots=True)
class ExecutionReport:
    """What the executor did: one result per strategy run and the circuits left open."""

    results: tuple[Any, ...]  # tuple[ContextStrategyResult, ...]
    circuit_broken: tuple[str, ...] = ()
    trimmed: Mapping[str, int] = attrs.field(factory=dict)  # strategy -> tokens trimmed


@attrs.frozen(slots=True)
class DepthResolution:
    """One fragment per node and the node's other renderings, kept aside for the packer.

    ``reasons``: why a node got its depth (uko_node -> one line), where the resolver says.
    """

    fragments: tuple[ContextFragment, ...]
    alternatives: Mapping[str, tuple[ContextFragment, ...]]  # uko_node -> other renderings
    resolved_count: int = 0
    reasons: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen(slots=True)
class ScoredFragment:
    """A fragment with its composite score and the components that made it."""

    fragment: ContextFragment
    score: float
    components: Mapping[str, float] = attrs.field(factory=dict)
    strategies: tuple[str, ...] = ()

    @property
    def uko_node(self) -> str:
        return self.fragment.uko_node

    @property
    def token_count(self) -> int:
        return self.fragment.token_count


@attrs.frozen(slots=True)
class PackResult:
    """What fit the budget, what changed depth on the way and what did not fit.

    ``fallbacks``: uko_node -> (resolved depth, packed depth) for each node the packer showed
    at another depth than the resolver chose. ``notes``: the packer's word on a node, for a
    packed one why it has its depth, for an omitted one why it was left out.
    ``stopped_by``: what ended the selection (``budget``, ``fragment cap`` or ``candidates``,
    when they ran out first).
    """

    packed: tuple[ScoredFragment, ...]
    omitted: tuple[ScoredFragment, ...] = ()
    fallbacks: Mapping[str, tuple[int, int]] = attrs.field(factory=dict)  # node -> (from, to)
    dropped_by_overage_guard: int = 0
    notes: Mapping[str, str] = attrs.field(factory=dict)
    stopped_by: str = ""

    @property
    def total_tokens(self) -> int:
        return sum(s.fragment.token_count for s in self.packed)


@attrs.frozen(slots=True)
class AssembledContext:
    """An assembled context: ordered fragments and the renderings kept aside for each node."""

    fragments: tuple[ContextFragment, ...]
    alternatives: Mapping[str, tuple[ContextFragment, ...]] = attrs.field(factory=dict)

    @property
    def total_tokens(self) -> int:
        return sum(f.token_count for f in self.fragments)


# ---- protocols --------------------------------------------------------------------------------


@runtime_checkable
class StrategySelector(Protocol):
    """Phase 1: which strategies run for this request, with what confidence."""

    def select(
        self,
        strategies: Sequence[AnyStrategy],
        request: ContextRequest,
        backends: BackendSet,
    ) -> list[Candidate]:
        """Candidates ordered by confidence desc, then name."""
        ...


@runtime_checkable
class BudgetAllocator(Protocol):
    """Phase 1: how many tokens each selected strategy may fill."""

    def allocate(
        self, candidates: Sequence[Candidate], total_budget: int, request: ContextRequest
    ) -> list[Allocation]:
        """Allocations whose tokens sum to at most ``total_budget``."""
        ...


@runtime_checkable
class StrategyExecutor(Protocol):
    """Phase 1: runs the strategies of the allocations."""

    def execute(
        self,
        allocations: Sequence[Allocation],
        request: ContextRequest,
        backends: BackendSet,
        plan_context: PlanContext,
    ) -> ExecutionReport:
        """One ``ContextStrategyResult`` per allocation (failed runs carry errors)."""
        ...


@runtime_checkable
class CircuitAware(Protocol):
    """An executor with circuit breakers: the coordinator leaves out blocked strategies
    before allocation, so their tokens go to the strategies that will run."""

    def is_blocked(self, name: str) -> bool:
        """True when a call to strategy ``name`` would not go through now."""
        ...


@runtime_checkable
class FragmentDeduplicator(Protocol):
    """Phase 2: removes fragments that repeat a node's content."""

    def deduplicate(self, fragments: Sequence[ContextFragment]) -> list[ContextFragment]:
        """The fragments with duplicates removed, in a deterministic order."""
        ...


@runtime_checkable
class DetailDepthResolver(Protocol):
    """Phase 2: one rendering per node; the others kept aside for fallback."""

    def resolve(
        self, fragments: Sequence[ContextFragment], budget: ContextBudget
    ) -> DepthResolution:
        """The chosen rendering of each node and the alternatives."""
        ...


@runtime_checkable
class FragmentScorer(Protocol):
    """Phase 2: the composite score that orders packing."""

    def score(
        self,
        fragments: Sequence[ContextFragment],
        plan_context: PlanContext,
        *,
        sources: Mapping[str, Sequence[str]] | None = None,
        ranks: Mapping[str, Mapping[str, int]] | None = None,
        quality: Mapping[str, float] | None = None,
    ) -> list[ScoredFragment]:
        """Scored fragments, best first.

        ``sources``: uko_node -> strategies that returned it; ``ranks``: strategy ->
        {uko_node: rank in that strategy's own order}; ``quality``: strategy -> quality score.
        """
        ...


@runtime_checkable
class BudgetPacker(Protocol):
    """Phase 2: fills the budget, falling back to shallower renderings."""

    def pack(
        self,
        scored_fragments: Sequence[ScoredFragment],
        budget: int,
        detail_level_maps: Mapping[str, Sequence[ContextFragment]],
    ) -> PackResult:
        """What fits within ``budget`` tokens. Never over budget."""
        ...


#: A packing key: ``(-score, -detail_depth, token_count, uko_node, position)``, where
#: ``position`` is the index of the key's ScoredFragment in the list it was computed for.
#: Sorted ascending, the keys give the packing order (score desc, depth desc, tokens asc,
#: uko_node asc, then input order).
PackKey = tuple[float, int, int, str, int]


@runtime_checkable
class KeyedScorer(Protocol):
    """Optional extension of ``FragmentScorer``: scores and sorted packing keys in one pass.

    ``FusionEngine`` calls ``score_keyed`` instead of ``score`` when its packer is a
    ``KeyedPacker``, and hands the keys to ``pack_keyed``, so the scored fragments are never
    re-sorted or re-read. A scorer that implements it promises the same result as ``score``:
    ``[scored[k[4]] for k in keys]`` is what ``score`` returns. A subclass that overrides
    ``score`` must therefore override ``score_keyed`` too. The engine looks ``score_keyed`` up
    on the object itself, not through ``__getattr__``: a proxy that forwards attributes to a
    wrapped component is called through ``score``.
    """

    def score_keyed(
        self,
        fragments: Sequence[ContextFragment],
        plan_context: PlanContext,
        *,
        nodes: Sequence[str] | None = None,
        sources: Mapping[str, Sequence[str]] | None = None,
        ranks: Mapping[str, Mapping[str, int]] | None = None,
        quality: Mapping[str, float] | None = None,
    ) -> tuple[list[ScoredFragment], list[PackKey]]:
        """The scored fragments in input order and their packing keys, sorted.

        ``nodes``: the fragments' uko_node values when the caller already has them; the
        other arguments are those of ``FragmentScorer.score``.
        """
        ...


@runtime_checkable
class KeyedPacker(Protocol):
    """Optional extension of ``BudgetPacker``: packs in the order of precomputed keys.

    Used by ``FusionEngine`` together with a ``KeyedScorer``. A packer that implements it
    promises the same result as ``pack`` given the scored fragments in key order. A subclass
    that overrides ``pack`` must therefore override ``pack_keyed`` too. The engine looks
    ``pack_keyed`` up on the object itself, not through ``__getattr__``: a proxy that forwards
    attributes to a wrapped component is called through ``pack``.
    """

    def pack_keyed(
        self,
        items: Sequence[ScoredFragment],
        keys: Sequence[PackKey],
        budget: int,
        detail_level_maps: Mapping[str, Sequence[ContextFragment]],
    ) -> PackResult:
        """What fits within ``budget`` tokens, visiting ``items`` in the order of ``keys``
        (sorted; ``k[4]`` is the index of the key's ScoredFragment in ``items``)."""
        ...


@runtime_checkable
class FragmentOrderer(Protocol):
    """Phase 3: the reading order of the packed fragments."""

    def order(
        self, fragments: Sequence[ScoredFragment], request: ContextRequest
    ) -> list[ScoredFragment]:
        """The same fragments, in reading order."""
        ...


@runtime_checkable
class PreambleGenerator(Protocol):
    """Phase 3: a short structure summary put before the fragments."""

    def generate(
        self,
        fragments: Sequence[ContextFragment],
        strategies_used: Sequence[str],
        budget_used: float,
        max_tokens: int,
        omitted: Sequence[ContextFragment] = (),
    ) -> str:
        """The preamble text (may be empty)."""
        ...


@runtime_checkable
class SkeletonCompressor(Protocol):
    """Phase 3: keeps focus nodes deep and compresses the rest to a skeleton."""

    def compress(
        self,
        parent_context: AssembledContext,
        child_focus: Sequence[str],
        skeleton_budget: int,
    ) -> AssembledContext:
        """A context whose non-focus fragments fit ``skeleton_budget`` tokens."""
        ...
