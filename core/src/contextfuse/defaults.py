"""The core's default components and ranking strategies, registered as a plugin.

Every implementation is ``trylast`` so that an installed plugin's implementation of the same
component hook answers first. The ten component hook implementations are derived from the
slot table (``contextfuse.slots.SLOTS``): each builds its slot's ``default`` from the slot's
configuration section (``build_default``), so the table is the one place naming them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contextfuse.hookspecs import hookimpl
from contextfuse.slots import SLOTS, Slot, slot

__all__ = ["build_default"]


def build_default(slot_name: str, config: Mapping[str, Any]) -> Any:
    """The core default of component ``slot_name``, built from its configuration section.

    ``config`` is validated by the section's model (``contextfuse.config.SECTIONS``) and
    handed to the default class as the slot's ``default_arguments`` say.
    """
    from contextfuse.config import SECTIONS

    entry = slot(slot_name)
    return entry.build(SECTIONS[entry.section]()(**config))


def _component_hookimpl(entry: Slot) -> Callable[[dict[str, Any]], Any]:
    def implementation(config: dict[str, Any]) -> Any:
        return build_default(entry.name, config)

    implementation.__name__ = implementation.__qualname__ = entry.hook
    implementation.__doc__ = f"The core default {entry.protocol}: {entry.default_name}."
    return hookimpl(trylast=True)(implementation)


for _entry in SLOTS:
    globals()[_entry.hook] = _component_hookimpl(_entry)


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
