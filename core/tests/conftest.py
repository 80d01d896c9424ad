"""Shared fixtures of the core's tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from contextfuse import ContextFragment, FragmentProvenance
from contextfuse.plugin_manager import ContextfusePluginManager, make_plugin_manager


@pytest.fixture
def pm() -> ContextfusePluginManager:
    """A fresh plugin manager with the core defaults and no installed plugins."""
    return make_plugin_manager(autoload=False)


@pytest.fixture
def make_fragment() -> Callable[..., ContextFragment]:
    """Build a fragment with sensible defaults; keyword arguments override fields."""

    def build(uko_node: str = "project://p/a.py", **fields: Any) -> ContextFragment:
        fields.setdefault("content", f"content of {uko_node}")
        fields.setdefault("token_count", 10)
        fields.setdefault("provenance", FragmentProvenance(resource_uri=uko_node))
        return ContextFragment(uko_node=uko_node, **fields)

    return build
