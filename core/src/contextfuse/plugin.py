"""What a plugin author needs, in one place (the second tier of the public API).

```python
from contextfuse.plugin import ContextStrategy, StrategyCapabilities, hookimpl
```

* the hook marker ``hookimpl`` (the hooks are listed in ``docs/hooks.md``);
* strategies: the ``RankingStrategy`` protocol and its candidates (``Ranked``),
  ``NodeScoringStrategy`` (score knowledge-base nodes; the pipeline renders, resolves depths
  and packs), the toolkit of signals (reciprocal rank fusion, the prior of tests and prose),
  the specification's ``ContextStrategy`` (fragments within a budget),
  ``StrategyCapabilities`` and the ``PackingPolicy`` every ranking is packed by;
* the ten component protocols, the records that flow between them and the slot table, and the
  optional ``KeyedScorer`` / ``KeyedPacker`` extensions (a scorer and packer sharing sorted
  ``PackKey`` packing keys, the fusion engine's fast path);
* the knowledge-base protocols a strategy queries, ``BackendProvider`` for a store, and
  ``IndexContributor`` for work done while an index is built.

Users call ``contextfuse``; ``contextfuse.plugin`` is for extending it. Names are imported on
first use, so importing this module is cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

__all__ = [
    "SLOTS",
    "SYMBOL_KINDS",
    "Allocation",
    "AssembledContext",
    "BackendProvider",
    "BackendSet",
    "BudgetAllocator",
    "BudgetPacker",
    "Candidate",
    "CircuitAware",
    "Commit",
    "ContextBudget",
    "ContextFragment",
    "ContextRequest",
    "ContextStrategy",
    "Decision",
    "DepthResolution",
    "DetailDepth",
    "DetailDepthResolver",
    "Edge",
    "ExecutionReport",
    "FragmentBackend",
    "FragmentDeduplicator",
    "FragmentOrderer",
    "FragmentProvenance",
    "FragmentScorer",
    "GraphBackend",
    "IndexContributor",
    "IndexSession",
    "KeyedPacker",
    "KeyedScorer",
    "Node",
    "NodeScoringStrategy",
    "NodeStore",
    "PackKey",
    "PackResult",
    "PackingPolicy",
    "Plan",
    "PlanContext",
    "PlanStore",
    "PreambleGenerator",
    "Ranked",
    "RankingStrategy",
    "Rendering",
    "RequestIntent",
    "ScoredFragment",
    "SearchHit",
    "SkeletonCompressor",
    "Slot",
    "StrategyCapabilities",
    "StrategyExecutor",
    "StrategySelector",
    "TemporalBackend",
    "TextBackend",
    "Tokenizer",
    "VectorBackend",
    "decision_tier",
    "default_tokenizer",
    "hookimpl",
    "is_test_path",
    "node_prior",
    "ranking_of",
    "reciprocal_rank_fusion",
    "weigh_by_prior",
]

_EXPORTS: dict[str, str] = {
    "hookimpl": "contextfuse.hookspecs",
    "ContextStrategy": "contextfuse.strategy",
    "NodeScoringStrategy": "contextfuse.node_scoring",
    "ranking_of": "contextfuse.node_scoring",
    "Ranked": "contextfuse.ranked",
    "RankingStrategy": "contextfuse.strategy",
    "PackingPolicy": "contextfuse.components.fusion.policy",
    "default_tokenizer": "contextfuse.tokenizer",
    "decision_tier": "contextfuse.kb.plans",
    **dict.fromkeys(
        (
            "RequestIntent",
            "is_test_path",
            "node_prior",
            "reciprocal_rank_fusion",
            "weigh_by_prior",
        ),
        "contextfuse.signals",
    ),
    "SLOTS": "contextfuse.slots",
    "Slot": "contextfuse.slots",
    "Tokenizer": "contextfuse.tokenizer",
    "BackendProvider": "contextfuse.stores",
    "IndexSession": "contextfuse.kb",
    **dict.fromkeys(
        (
            "StrategyCapabilities",
            "ContextBudget",
            "ContextFragment",
            "ContextRequest",
            "Decision",
            "DetailDepth",
            "FragmentProvenance",
            "Plan",
            "PlanContext",
        ),
        "contextfuse.models",
    ),
    **dict.fromkeys(
        (
            "BackendSet",
            "Commit",
            "Edge",
            "FragmentBackend",
            "GraphBackend",
            "Node",
            "NodeStore",
            "PlanStore",
            "Rendering",
            "SYMBOL_KINDS",
            "SearchHit",
            "TemporalBackend",
            "TextBackend",
            "VectorBackend",
        ),
        "contextfuse.backends",
    ),
    **dict.fromkeys(
        (
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
        ),
        "contextfuse.components.protocols",
    ),
}


@runtime_checkable
class IndexContributor(Protocol):
    """Work done while an index is built (hook ``contextfuse_index_contributors``).

    ``contribute`` runs after the nodes are written, inside the index's transaction: compute
    embeddings or extra graph edges for ``session.changed_uris`` and drop what belonged to
    ``session.removed_uris``. One that raises is reported by name; the index stays usable.
    """

    @property
    def name(self) -> str:
        """Reported in the index statistics."""
        ...

    def contribute(self, session: IndexSession) -> object:
        """Do the work; the return value is reported (e.g. a count)."""
        ...


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'contextfuse.plugin' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from contextfuse.backends import (
        SYMBOL_KINDS,
        BackendSet,
        Commit,
        Edge,
        FragmentBackend,
        GraphBackend,
        Node,
        NodeStore,
        PlanStore,
        Rendering,
        SearchHit,
        TemporalBackend,
        TextBackend,
        VectorBackend,
    )
    from contextfuse.components.fusion.policy import PackingPolicy
    from contextfuse.components.protocols import (
        Allocation,
        AssembledContext,
        BudgetAllocator,
        BudgetPacker,
        Candidate,
        CircuitAware,
        DepthResolution,
        DetailDepthResolver,
        ExecutionReport,
        FragmentDeduplicator,
        FragmentOrderer,
        FragmentScorer,
        KeyedPacker,
        KeyedScorer,
        PackKey,
        PackResult,
        PreambleGenerator,
        ScoredFragment,
        SkeletonCompressor,
        StrategyExecutor,
        StrategySelector,
    )
    from contextfuse.hookspecs import hookimpl
    from contextfuse.kb import IndexSession
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
    )
    from contextfuse.node_scoring import NodeScoringStrategy, ranking_of
    from contextfuse.ranked import Ranked
    from contextfuse.signals import (
        RequestIntent,
        is_test_path,
        node_prior,
        reciprocal_rank_fusion,
        weigh_by_prior,
    )
    from contextfuse.slots import SLOTS, Slot
    from contextfuse.stores import BackendProvider
    from contextfuse.strategy import ContextStrategy, RankingStrategy
    from contextfuse.tokenizer import Tokenizer, default_tokenizer
