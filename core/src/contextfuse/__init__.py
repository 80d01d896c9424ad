"""contextfuse: context assembly for LLM agents.

This module is what a user calls: ``assemble_context``, ``ContextAssembler``, ``index``,
``ACMSPipeline``, the data models, the seeds' coordinator and fusion classes, and the errors.
What a plugin author needs is in ``contextfuse.plugin``.

The public names are declared once, in the ``TYPE_CHECKING`` block below
(``contextfuse.lazy_exports``), and imported on first use (PEP 562) so that ``import
contextfuse`` and the command line start fast; ``from contextfuse import ContextFragment`` works
as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from contextfuse.assembler import ContextAssembler as ContextAssembler
    from contextfuse.assembler import assemble_context as assemble_context
    from contextfuse.backends import BackendSet as BackendSet
    from contextfuse.backends import FragmentBackend as FragmentBackend
    from contextfuse.backends import GraphBackend as GraphBackend
    from contextfuse.backends import NodeStore as NodeStore
    from contextfuse.backends import PlanStore as PlanStore
    from contextfuse.backends import TemporalBackend as TemporalBackend
    from contextfuse.backends import TextBackend as TextBackend
    from contextfuse.backends import VectorBackend as VectorBackend
    from contextfuse.components.coordination import CoordinationResult as CoordinationResult
    from contextfuse.components.coordination import CoordinatorConfig as CoordinatorConfig
    from contextfuse.components.coordination import StrategyCoordinator as StrategyCoordinator
    from contextfuse.components.fusion import FusionConfig as FusionConfig
    from contextfuse.components.fusion import FusionEngine as FusionEngine
    from contextfuse.components.fusion import FusionResult as FusionResult
    from contextfuse.components.fusion import ScorerWeights as ScorerWeights
    from contextfuse.errors import ComponentContractError as ComponentContractError
    from contextfuse.errors import ConfigError as ConfigError
    from contextfuse.errors import ContextfuseError as ContextfuseError
    from contextfuse.errors import KnowledgeBaseError as KnowledgeBaseError
    from contextfuse.errors import MissingStrategyError as MissingStrategyError
    from contextfuse.errors import PluginConflictError as PluginConflictError
    from contextfuse.errors import PluginLoadError as PluginLoadError
    from contextfuse.errors import StrategyRegistrationError as StrategyRegistrationError
    from contextfuse.errors import UnknownStrategyError as UnknownStrategyError
    from contextfuse.hookspecs import hookimpl as hookimpl
    from contextfuse.kb import IndexSession as IndexSession
    from contextfuse.kb import IndexStats as IndexStats
    from contextfuse.kb import index as index
    from contextfuse.kb import open_backends as open_backends
    from contextfuse.kb import open_plan_store as open_plan_store
    from contextfuse.models import ContextBudget as ContextBudget
    from contextfuse.models import ContextFragment as ContextFragment
    from contextfuse.models import ContextPayload as ContextPayload
    from contextfuse.models import ContextRequest as ContextRequest
    from contextfuse.models import ContextStrategyResult as ContextStrategyResult
    from contextfuse.models import Decision as Decision
    from contextfuse.models import DetailDepth as DetailDepth
    from contextfuse.models import FragmentProvenance as FragmentProvenance
    from contextfuse.models import Plan as Plan
    from contextfuse.models import PlanContext as PlanContext
    from contextfuse.models import StrategyCapabilities as StrategyCapabilities
    from contextfuse.pipeline import ACMSPipeline as ACMSPipeline
    from contextfuse.pipeline import PipelineConfig as PipelineConfig
    from contextfuse.plugin_manager import make_plugin_manager as make_plugin_manager
    from contextfuse.ranking import RecencyStrategy as RecencyStrategy
    from contextfuse.ranking import RelevanceStrategy as RelevanceStrategy
    from contextfuse.ranking import TieredStrategy as TieredStrategy
    from contextfuse.strategy import ContextStrategy as ContextStrategy
    from contextfuse.strategy import as_strategy as as_strategy
    from contextfuse.tokenizer import TiktokenTokenizer as TiktokenTokenizer
    from contextfuse.tokenizer import Tokenizer as Tokenizer
    from contextfuse.tokenizer import default_tokenizer as default_tokenizer
else:
    from contextfuse.lazy_exports import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, extra=("__version__",))
