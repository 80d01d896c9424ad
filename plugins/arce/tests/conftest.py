"""Repositories of the arce tests: real files indexed for real (SQLite, tree-sitter)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from contextfuse import BackendSet
from contextfuse.kb import index, open_backends
from contextfuse.plugin_manager import make_plugin_manager


@pytest.fixture
def indexed(tmp_path: Path) -> Callable[[dict[str, str]], BackendSet]:
    """Writes ``{relative path: text}`` into a fresh repository, indexes it with no plugin
    loaded, and opens its backends."""

    def open_(files: dict[str, str]) -> BackendSet:
        for rel, text in files.items():
            path = tmp_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        index(tmp_path, pm=make_plugin_manager(autoload=False))
        return open_backends(tmp_path)

    return open_
