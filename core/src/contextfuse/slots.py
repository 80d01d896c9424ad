"""The ten component slots of the pipeline: the one table everything else derives from.

The pipeline builds its components from it, the ten component hookspecs and their docstrings
are generated from it, the core's default implementations (``contextfuse.defaults``) are built
from it, ``contextfuse plugins`` reads it, and ``docs/hooks.md`` is generated from it
(``python -m contextfuse.hookdoc``). It imports nothing heavy, so the command line can read it
at start-up.
"""

from __future__ import annotations

import importlib
from typing import Any, Literal

import attrs

__all__ = ["PHASES", "SLOTS", "Slot", "slot"]

#: Configuration section of each phase, in pipeline order.
PHASES: tuple[str, ...] = ("coordinator", "fusion", "finalize")

Section = Literal["coordinator", "fusion", "finalize"]


@attrs.frozen
class Slot:
    """One replaceable pipeline component.

    :param name: the slot name; also the ``ACMSPipeline`` keyword and the ``[components]`` key.
    :param phase: 1 (strategy orchestration), 2 (fragment fusion) or 3 (finalization).
    :param section: the configuration section handed to the component's hook as ``config``.
    :param protocol: the protocol's name in ``contextfuse.components.protocols``.
    :param method: the protocol method the pipeline calls.
    :param default: the core default, as ``module:Class``: the only place that names it.
    :param summary: what the component does, in a few words (its hook's docstring says it).
    :param default_arguments: how the default is built from the configuration section,
        validated by the section's model (``contextfuse.config.SECTIONS``): ``"section"``
        passes the whole model, ``"param=field"`` (or ``"field"``) one field by keyword; none:
        the class takes no argument.
    """

    name: str
    phase: int
    section: Section
    protocol: str
    method: str
    default: str
    summary: str
    default_arguments: tuple[str, ...] = ()

    @property
    def hook(self) -> str:
        """The name of the ``firstresult`` hook that provides this component."""
        return f"contextfuse_{self.name}"

    @property
    def default_name(self) -> str:
        """The default's class name."""
        return self.default.rpartition(":")[2]

    def build(self, section: Any) -> Any:
        """The core default, built from its section's validated model (``default_arguments``)."""
        module, _, name = self.default.partition(":")
        component_class = getattr(importlib.import_module(module), name)
        if not self.default_arguments:
            return component_class()
        if self.default_arguments == ("section",):
            return component_class(section)
        keywords = {}
        for argument in self.default_arguments:
            parameter, _, field = argument.partition("=")
            keywords[parameter] = getattr(section, field or parameter)
        return component_class(**keywords)


_COORD = "contextfuse.components.coordination"
_FUSION = "contextfuse.components.fusion"
_FINAL = "contextfuse.components.finalize"

#: The slots, in pipeline order.
SLOTS: tuple[Slot, ...] = (
    Slot(
        "strategy_selector",
        1,
        "coordinator",
        "StrategySelector",
        "select",
        f"{_COORD}:ConfidenceWeightedSelector",
        "which strategies run for a request, with what confidence",
        ("section",),
    ),
    Slot(
        "budget_allocator",
        1,
        "coordinator",
        "BudgetAllocator",
        "allocate",
        f"{_COORD}:ProportionalBudgetAllocator",
        "how the available tokens are shared among strategies",
        ("section",),
    ),
    Slot(
        "strategy_executor",
        1,
        "coordinator",
        "StrategyExecutor",
        "execute",
        f"{_COORD}:ParallelStrategyExecutor",
        "runs the selected strategies within their allocations",
        ("section",),
    ),
    Slot(
        "fragment_deduplicator",
        2,
        "fusion",
        "FragmentDeduplicator",
        "deduplicate",
        f"{_FUSION}:ContentHashDedup",
        "removes repeated content",
    ),
    Slot(
        "detail_depth_resolver",
        2,
        "fusion",
        "DetailDepthResolver",
        "resolve",
        f"{_FUSION}:PolicyDepthResolver",
        "each candidate's depth, the other renderings kept aside",
        ("policy=packing",),
    ),
    Slot(
        "fragment_scorer",
        2,
        "fusion",
        "FragmentScorer",
        "score",
        f"{_FUSION}:WeightedCompositeScorer",
        "the composite score that orders packing",
        ("weights=scorer_weights",),
    ),
    Slot(
        "budget_packer",
        2,
        "fusion",
        "BudgetPacker",
        "pack",
        f"{_FUSION}:PolicyPacker",
        "spends the budget by the packing policy, with depth fallback",
        ("depth_fallback_steps", "min_fragment_tokens", "policy=packing"),
    ),
    Slot(
        "fragment_orderer",
        3,
        "finalize",
        "FragmentOrderer",
        "order",
        f"{_FINAL}:ConfigurableOrderer",
        "the reading order of the packed fragments",
        ("mode=order",),
    ),
    Slot(
        "preamble_generator",
        3,
        "finalize",
        "PreambleGenerator",
        "generate",
        f"{_FINAL}:StructurePreambleGenerator",
        "the structure summary before the fragments",
    ),
    Slot(
        "skeleton_compressor",
        3,
        "finalize",
        "SkeletonCompressor",
        "compress",
        f"{_FINAL}:DepthSkeletonCompressor",
        "focus nodes deep, the rest as a skeleton",
    ),
)

_BY_NAME = {s.name: s for s in SLOTS}


def slot(name: str) -> Slot:
    """The slot called ``name``; raise ``KeyError`` naming the slots."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no component slot {name!r}; slots are {list(_BY_NAME)}") from None
