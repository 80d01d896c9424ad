"""The embedded knowledge base: a repository indexed into one SQLite file.

``index(path)`` builds or refreshes the index (files and symbols as UKO nodes with
renderings at depths 9, 4, 2 and 0; full-text search; the code graph; the git history;
decisions from ADR files) and ``open_backends(path)`` serves it to strategies as a
``BackendSet``; ``open_plan_store(path)`` reads and writes plans and decisions.
"""

from __future__ import annotations

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
