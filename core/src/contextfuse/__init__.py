"""contextfuse: context assembly for LLM agents.

This module is what a user calls: ``assemble_context``, ``ContextAssembler``, ``index``,
``ACMSPipeline``, the data models, the seeds' coordinator and fusion classes, and the errors.
What a plugin author needs is in ``contextfuse.plugin``.

Public names are imported lazily (PEP 562) so that ``import contextfuse`` and the command
line start fast; ``from contextfuse import ContextFragment`` works as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # data model
    "ContextBudget": "contextfuse.models",
    "ContextFragment": "contextfuse.models",
    "ContextPayload": "contextfuse.models",
    "ContextRequest": "contextfuse.models",
    "ContextStrategyResult": "contextfuse.models",
    "DetailDepth": "contextfuse.models",
    "FragmentProvenance": "contextfuse.models",
    "Decision": "contextfuse.models",
    "Plan": "contextfuse.models",
    "PlanContext": "contextfuse.models",
    "StrategyCapabilities": "contextfuse.models",
    # backends
    "BackendSet": "contextfuse.backends",
    "FragmentBackend": "contextfuse.backends",
    "GraphBackend": "contextfuse.backends",
    "NodeStore": "contextfuse.backends",
    "PlanStore": "contextfuse.backends",
    "TemporalBackend": "contextfuse.backends",
    "TextBackend": "contextfuse.backends",
    "VectorBackend": "contextfuse.backends",
    # strategies and plugins
    "ContextStrategy": "contextfuse.strategy",
    "as_strategy": "contextfuse.strategy",
    "RelevanceStrategy": "contextfuse.ranking",
    "RecencyStrategy": "contextfuse.ranking",
    "TieredStrategy": "contextfuse.ranking",
    "hookimpl": "contextfuse.hookspecs",
    "make_plugin_manager": "contextfuse.plugin_manager",
    "Tokenizer": "contextfuse.tokenizer",
    "TiktokenTokenizer": "contextfuse.tokenizer",
    "default_tokenizer": "contextfuse.tokenizer",
    # pipeline and assembly over a repository
    "ACMSPipeline": "contextfuse.pipeline",
    "PipelineConfig": "contextfuse.pipeline",
    # the seeds' phase 1 and phase 2 facades and their configuration
    "StrategyCoordinator": "contextfuse.components.coordination",
    "CoordinatorConfig": "contextfuse.components.coordination",
    "CoordinationResult": "contextfuse.components.coordination",
    "FusionEngine": "contextfuse.components.fusion",
    "FusionConfig": "contextfuse.components.fusion",
    "FusionResult": "contextfuse.components.fusion",
    "ScorerWeights": "contextfuse.components.fusion",
    "ContextAssembler": "contextfuse.assembler",
    "assemble_context": "contextfuse.assembler",
    # knowledge base
    "index": "contextfuse.kb",
    "open_backends": "contextfuse.kb",
    "open_plan_store": "contextfuse.kb",
    "IndexStats": "contextfuse.kb",
    "IndexSession": "contextfuse.kb",
    # errors
    "ContextfuseError": "contextfuse.errors",
    "PluginLoadError": "contextfuse.errors",
    "PluginConflictError": "contextfuse.errors",
    "UnknownStrategyError": "contextfuse.errors",
    "StrategyRegistrationError": "contextfuse.errors",
    "ComponentContractError": "contextfuse.errors",
    "ConfigError": "contextfuse.errors",
    "KnowledgeBaseError": "contextfuse.errors",
    "MissingStrategyError": "contextfuse.errors",
}

# Spelled out (not computed) so that type checkers see what is exported.
__all__ = [
    "ACMSPipeline",
    "BackendSet",
    "ComponentContractError",
    "ConfigError",
    "ContextAssembler",
    "ContextBudget",
    "ContextFragment",
    "ContextPayload",
    "ContextRequest",
    "ContextStrategy",
    "ContextStrategyResult",
    "ContextfuseError",
    "CoordinationResult",
    "CoordinatorConfig",
    "DetailDepth",
    "FragmentBackend",
    "FragmentProvenance",
    "FusionConfig",
    "FusionEngine",
    "FusionResult",
    "GraphBackend",
    "IndexSession",
    "IndexStats",
    "KnowledgeBaseError",
    "MissingStrategyError",
    "NodeStore",
    "PipelineConfig",
    "PlanContext",
    "PlanStore",
    "PluginConflictError",
    "PluginLoadError",
    "RecencyStrategy",
    "RelevanceStrategy",
    "ScorerWeights",
    "StrategyCapabilities",
    "StrategyCoordinator",
    "StrategyRegistrationError",
    "TemporalBackend",
    "TextBackend",
    "TieredStrategy",
    "TiktokenTokenizer",
    "Tokenizer",
    "UnknownStrategyError",
    "VectorBackend",
    "__version__",
    "as_strategy",
    "assemble_context",
    "default_tokenizer",
    "hookimpl",
    "index",
    "make_plugin_manager",
    "open_backends",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'contextfuse' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from contextfuse.assembler import ContextAssembler, assemble_context
    from contextfuse.backends import (
        BackendSet,
        FragmentBackend,
        GraphBackend,
        NodeStore,
        PlanStore,
        TemporalBackend,
        TextBackend,
        VectorBackend,
    )
    from contextfuse.components.coordination import (
        CoordinationResult,
        CoordinatorConfig,
        StrategyCoordinator,
    )
    from contextfuse.components.fusion import (
        FusionConfig,
        FusionEngine,
        FusionResult,
        ScorerWeights,
    )
    from contextfuse.errors import (
        ComponentContractError,
        ConfigError,
        ContextfuseError,
        KnowledgeBaseError,
        MissingStrategyError,
        PluginConflictError,
        PluginLoadError,
        StrategyRegistrationError,
        UnknownStrategyError,
    )
    from contextfuse.hookspecs import hookimpl
    from contextfuse.kb import IndexSession, IndexStats, index, open_backends, open_plan_store
    from contextfuse.models import (
        ContextBudget,
        ContextFragment,
        ContextPayload,
        ContextRequest,
        ContextStrategyResult,
        Decision,
        DetailDepth,
        FragmentProvenance,
        Plan,
        PlanContext,
        StrategyCapabilities,
    )
    from contextfuse.pipeline import ACMSPipeline, PipelineConfig
    from contextfuse.plugin_manager import make_plugin_manager
    from contextfuse.ranking import RecencyStrategy, RelevanceStrategy, TieredStrategy
    from contextfuse.strategy import ContextStrategy, as_strategy
    from contextfuse.tokenizer import TiktokenTokenizer, Tokenizer, default_tokenizer
