"""Phase 2, fragment fusion: the defaults and the ``FusionEngine`` facade (spec/acms-fusion.md).

``FusionEngine.fuse`` runs four injectable components and a safety net::

    ContentHashDedup -> PolicyDepthResolver -> WeightedCompositeScorer
        -> PolicyPacker -> BudgetOverageGuard

One module per component: ``dedup``, ``depth``, ``scorer``, ``policy_packer`` (over the
specification's greedy ``packer``), ``guard``; ``policy`` holds the packing policy the
resolver and the packer share, ``config`` and ``result`` the engine's configuration and
result, ``engine`` the facade. The specification's ``MaxDepthResolver`` and
``GreedyKnapsackPacker`` remain available, and the defaults behave as they do on fragments
that are not knowledge-base candidates (no ``role``).

Every step is deterministic: the same fragments (and ranks) give the same output in the
same order. The hot path is built for 100k fragments: fragments are never copied; each is
read once per phase, in one pass, and gets one record (its ScoredFragment); the content
SHA-256 is computed only for fragments that could be duplicates (same node, same content
length); with the default deduplicator and resolver the engine groups once for both, and a
scorer and packer implementing ``KeyedScorer`` / ``KeyedPacker`` (the defaults do) share the
scorer's precomputed packing keys (``bench/bench_fusion.py`` measures it).
"""

from __future__ import annotations

from contextfuse.components.fusion.config import FusionConfig
from contextfuse.components.fusion.dedup import ContentHashDedup
from contextfuse.components.fusion.depth import (
    MaxDepthResolver,
    PolicyDepthResolver,
    dedup_and_resolve,
)
from contextfuse.components.fusion.engine import FusionEngine
from contextfuse.components.fusion.guard import BudgetOverageGuard
from contextfuse.components.fusion.packer import (
    GreedyKnapsackPacker,
    check_depth_steps,
    pack_order_key,
)
from contextfuse.components.fusion.policy import PackingPolicy
from contextfuse.components.fusion.policy_packer import PolicyPacker
from contextfuse.components.fusion.result import FusionResult
from contextfuse.components.fusion.scorer import ScorerWeights, WeightedCompositeScorer

__all__ = [
    "BudgetOverageGuard",
    "ContentHashDedup",
    "FusionConfig",
    "FusionEngine",
    "FusionResult",
    "GreedyKnapsackPacker",
    "MaxDepthResolver",
    "PackingPolicy",
    "PolicyDepthResolver",
    "PolicyPacker",
    "ScorerWeights",
    "WeightedCompositeScorer",
    "check_depth_steps",
    "dedup_and_resolve",
    "pack_order_key",
]
