"""Where an index lives, in a module light enough for every command to import."""

from __future__ import annotations

__all__ = ["DEFAULT_INDEX_DIR"]

#: The index directory inside a repository (``<repo>/.contextfuse``).
DEFAULT_INDEX_DIR = ".contextfuse"
