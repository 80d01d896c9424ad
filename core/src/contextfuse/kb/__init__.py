"""The embedded knowledge base: a repository indexed into one SQLite file.

``index(path)`` builds or refreshes the index (files and symbols as UKO nodes with
renderings at depths 9, 4, 2 and 0; full-text search; the code graph; the git history;
decisions from ADR files) and ``open_backends(path)`` serves it to strategies as a
``BackendSet``; ``open_plan_store(path)`` reads and writes plans and decisions.

The names below are imported on first use: a command that only reads the index (every
``contextfuse assemble`` whose index is current) never imports the indexer, its parsers
and its worker pools.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextfuse.kb.api import index_exists, index_path, open_plan_store
    from contextfuse.kb.indexer import IndexSession, IndexStats
    from contextfuse.kb.repository import index, open_backends

__all__ = [
    "IndexSession",
    "IndexStats",
    "index",
    "index_exists",
    "index_path",
    "open_backends",
    "open_plan_store",
]

_HOMES = {
    "IndexSession": "contextfuse.kb.indexer",
    "IndexStats": "contextfuse.kb.indexer",
    "index": "contextfuse.kb.repository",
    "index_exists": "contextfuse.kb.api",
    "index_path": "contextfuse.kb.api",
    "open_backends": "contextfuse.kb.repository",
    "open_plan_store": "contextfuse.kb.api",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'contextfuse.kb' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
