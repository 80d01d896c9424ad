"""Transcript compaction (spec/fragment-compaction.md) as presets of the flow engine."""

from contextfuse.compaction.providers import PolicyError, collect_providers, resolve_policy
from contextfuse.compaction.request import CompactRequest, ModelPolicy
from contextfuse.compaction.service import compact, preset

__all__ = [
    "CompactRequest",
    "ModelPolicy",
    "PolicyError",
    "collect_providers",
    "compact",
    "preset",
    "resolve_policy",
]
