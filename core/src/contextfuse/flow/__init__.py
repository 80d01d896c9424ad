"""A small typed flow engine: declarative flows of generic nodes run over model providers.

A flow (``FlowDefinition``, usually loaded from a JSON data file) is a sequence of typed
nodes: ``op`` (a named pure operation supplied by the caller), ``decide`` (a native decision
per record among fixed choices), ``select`` (keep records whose field has a value) and
``generate`` (one JSON generation call per batch). The runtime knows nothing of any
particular use: compaction is one preset among possible others.
"""

from contextfuse.flow.definition import FlowDefinition, NodeSpec, load_flow
from contextfuse.flow.provider import ModelCall, ModelProvider, ModelReply, ProviderError
from contextfuse.flow.runtime import FlowRun, FlowRuntime, ResolvedPolicy

__all__ = [
    "FlowDefinition",
    "FlowRun",
    "FlowRuntime",
    "ModelCall",
    "ModelProvider",
    "ModelReply",
    "NodeSpec",
    "ProviderError",
    "ResolvedPolicy",
    "load_flow",
]
