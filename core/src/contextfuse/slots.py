"""The ten component slots of the pipeline: the one table everything else derives from.

The pipeline builds its components from it, the hookspec checks and ``contextfuse plugins``
read it, and ``docs/hooks.md`` is generated from it (``python -m contextfuse.hookdoc``). It
imports nothing heavy, so the command line can read it at start-up.
"""

from __future__ import annotations

from typing import Literal

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
    :param default: the core default, as ``module:Class``.
    """

    name: str
    phase: int
    section: Section
    protocol: str
    method: str
    default: str

    @property
    def hook(self) -> str:
        """The name of the ``firstresult`` hook that provides this component."""
        return f"contextfuse_{self.name}"

    @property
    def default_name(self) -> str:
        """The default's class name."""
        return self.default.rpartition(":")[2]


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
    ),
    Slot(
        "budget_allocator",
        1,
        "coordinator",
        "BudgetAllocator",
        "allocate",
        f"{_COORD}:ProportionalBudgetAllocator",
    ),
    Slot(
        "strategy_executor",
        1,
        "coordinator",
        "StrategyExecutor",
        "execute",
        f"{_COORD}:ParallelStrategyExecutor",
    ),
    Slot(
        "fragment_deduplicator",
        2,
        "fusion",
        "FragmentDeduplicator",
        "deduplicate",
        f"{_FUSION}:ContentHashDedup",
    ),
    Slot(
        "detail_depth_resolver",
        2,
        "fusion",
        "DetailDepthResolver",
        "resolve",
        f"{_FUSION}:PolicyDepthResolver",
    ),
    Slot(
        "fragment_scorer",
        2,
        "fusion",
        "FragmentScorer",
        "score",
        f"{_FUSION}:WeightedCompositeScorer",
    ),
    Slot(
        "budget_packer",
        2,
        "fusion",
        "BudgetPacker",
        "pack",
        f"{_FUSION}:PolicyPacker",
    ),
    Slot(
        "fragment_orderer",
        3,
        "finalize",
        "FragmentOrderer",
        "order",
        f"{_FINAL}:ConfigurableOrderer",
    ),
    Slot(
        "preamble_generator",
        3,
        "finalize",
        "PreambleGenerator",
        "generate",
        f"{_FINAL}:StructurePreambleGenerator",
    ),
    Slot(
        "skeleton_compressor",
        3,
        "finalize",
        "SkeletonCompressor",
        "compress",
        f"{_FINAL}:DepthSkeletonCompressor",
    ),
)

_BY_NAME = {s.name: s for s in SLOTS}


def slot(name: str) -> Slot:
    """The slot called ``name``; raise ``KeyError`` naming the slots."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no component slot {name!r}; slots are {list(_BY_NAME)}") from None
