"""The core's default components and ranking strategies, registered as a plugin.

Every implementation is ``trylast`` so that an installed plugin's implementation of the same
component hook answers first. Each hook receives the relevant configuration section.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextfuse.hookspecs import hookimpl


@hookimpl(trylast=True)
def contextfuse_strategy_selector(config: dict[str, Any]) -> Any:
    from contextfuse.components.coordination import ConfidenceWeightedSelector, CoordinatorConfig

    return ConfidenceWeightedSelector(CoordinatorConfig(**config))


@hookimpl(trylast=True)
def contextfuse_budget_allocator(config: dict[str, Any]) -> Any:
    from contextfuse.components.coordination import CoordinatorConfig, ProportionalBudgetAllocator

    return ProportionalBudgetAllocator(CoordinatorConfig(**config))


@hookimpl(trylast=True)
def contextfuse_strategy_executor(config: dict[str, Any]) -> Any:
    from contextfuse.components.coordination import CoordinatorConfig, ParallelStrategyExecutor

    return ParallelStrategyExecutor(CoordinatorConfig(**config))


@hookimpl(trylast=True)
def contextfuse_fragment_deduplicator(config: dict[str, Any]) -> Any:
    from contextfuse.components.fusion import ContentHashDedup

    return ContentHashDedup()


@hookimpl(trylast=True)
def contextfuse_detail_depth_resolver(config: dict[str, Any]) -> Any:
    from contextfuse.components.fusion import FusionConfig, PolicyDepthResolver

    return PolicyDepthResolver(FusionConfig(**config).packing)


@hookimpl(trylast=True)
def contextfuse_fragment_scorer(config: dict[str, Any]) -> Any:
    from contextfuse.components.fusion import FusionConfig, WeightedCompositeScorer

    return WeightedCompositeScorer(FusionConfig(**config).scorer_weights)


@hookimpl(trylast=True)
def contextfuse_budget_packer(config: dict[str, Any]) -> Any:
    from contextfuse.components.fusion import FusionConfig, PolicyPacker

    fusion = FusionConfig(**config)
    return PolicyPacker(
        depth_fallback_steps=fusion.depth_fallback_steps,
        min_fragment_tokens=fusion.min_fragment_tokens,
        policy=fusion.packing,
    )


@hookimpl(trylast=True)
def contextfuse_fragment_orderer(config: dict[str, Any]) -> Any:
    from contextfuse.components.finalize import ConfigurableOrderer

    return ConfigurableOrderer(mode=str(config.get("order", "score")))


@hookimpl(trylast=True)
def contextfuse_preamble_generator(config: dict[str, Any]) -> Any:
    from contextfuse.components.finalize import StructurePreambleGenerator

    return StructurePreambleGenerator()


@hookimpl(trylast=True)
def contextfuse_skeleton_compressor(config: dict[str, Any]) -> Any:
    from contextfuse.components.finalize import DepthSkeletonCompressor

    return DepthSkeletonCompressor()


@hookimpl(trylast=True)
def contextfuse_strategies() -> Sequence[Any]:
    from contextfuse.ranking import RecencyStrategy, RelevanceStrategy, TieredStrategy

    return [RelevanceStrategy(), RecencyStrategy(), TieredStrategy()]


@hookimpl(trylast=True)
def contextfuse_backend_providers() -> Sequence[Any]:
    from contextfuse.stores import SQLiteStoreProvider

    return [SQLiteStoreProvider()]


@hookimpl(trylast=True)
def contextfuse_tokenizers() -> Sequence[Any]:
    from contextfuse.tokenizer import TiktokenTokenizer

    return [TiktokenTokenizer("cl100k_base"), TiktokenTokenizer("o200k_base")]
