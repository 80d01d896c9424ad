"""Fixtures for testing contextfuse plugins (a pytest plugin, entry point ``pytest11``).

Installed with ``contextfuse-core``, so a plugin's tests can use them without a conftest:

* ``contextfuse_pm``: a fresh plugin manager with the core defaults and no installed plugins;
* ``contextfuse_fragment``: builds a ``ContextFragment`` with sensible defaults;
* ``contextfuse_strategy``: builds a minimal strategy (name, capabilities, confidence, result);
* ``contextfuse_repo``: an indexed git repository built from a dict of files and commits,
  returned as its open ``BackendSet`` (closed after the test);
* ``contextfuse_conformance``: the strategy conformance check;
* ``contextfuse_assemble``: what a user gets from a strategy: the default pipeline's payload
  (``assemble(strategy, backends, query, budget=2000)``).

Nothing of contextfuse is imported until a fixture is used, so pytest starts as fast as before.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from contextfuse.backends import BackendSet
    from contextfuse.models import ContextFragment
    from contextfuse.plugin_manager import ContextfusePluginManager

__all__ = [
    "contextfuse_assemble",
    "contextfuse_conformance",
    "contextfuse_fragment",
    "contextfuse_pm",
    "contextfuse_repo",
    "contextfuse_strategy",
]

Files = Mapping[str, str]


@pytest.fixture
def contextfuse_pm() -> ContextfusePluginManager:
    """A fresh plugin manager: the core defaults, no installed plugins."""
    from contextfuse.plugin_manager import make_plugin_manager

    return make_plugin_manager(autoload=False)


@pytest.fixture
def contextfuse_fragment() -> Callable[..., ContextFragment]:
    """``build(uko_node, **fields)``: a fragment with defaults for the fields not given."""
    from contextfuse.models import ContextFragment, FragmentProvenance

    def build(uko_node: str = "project://p/a.py", **fields: Any) -> ContextFragment:
        fields.setdefault("content", f"content of {uko_node}")
        fields.setdefault("token_count", 10)
        fields.setdefault("provenance", FragmentProvenance(resource_uri=uko_node))
        return ContextFragment(uko_node=uko_node, **fields)

    return build


class _Strategy:
    def __init__(
        self, name: str, confidence: float, fragments: Sequence[Any], capabilities: Any
    ) -> None:
        self.name = name
        self.confidence = confidence
        self.fragments = list(fragments)
        self.capabilities = capabilities

    def can_handle(self, request: Any, backends: Any) -> float:
        return self.confidence

    def assemble(self, request: Any, backends: Any, budget: Any, plan_context: Any) -> list[Any]:
        return list(self.fragments)

    def explain(self) -> str:
        return f"test strategy {self.name}"


@pytest.fixture
def contextfuse_strategy() -> Callable[..., Any]:
    """``build(name, confidence=0.5, fragments=(), **capabilities)``: a minimal strategy."""
    from contextfuse.models import StrategyCapabilities

    def build(
        name: str = "test-strategy",
        confidence: float = 0.5,
        fragments: Sequence[Any] = (),
        **capabilities: Any,
    ) -> Any:
        capabilities.setdefault("resource_types", ("*",))
        if not any(k.startswith("uses_") for k in capabilities):
            capabilities["uses_fragments"] = True
        return _Strategy(name, confidence, fragments, StrategyCapabilities(**capabilities))

    return build


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _write(root: Path, files: Files) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def contextfuse_repo(tmp_path: Path) -> Iterator[Callable[..., BackendSet]]:
    """``build(files, commits=())``: an indexed git repository, as its open backends.

    ``files`` is the first commit (path -> text); each of ``commits`` is
    ``(message, {path: text})`` committed in turn. The backends are closed after the test.
    """
    opened: list[BackendSet] = []

    def build(files: Files, commits: Sequence[tuple[str, Files]] = ()) -> BackendSet:
        from contextfuse.kb import index, open_backends

        root = tmp_path / f"repo{len(opened)}"
        root.mkdir()
        _git(root, "init", "-q")
        for message, changed in [("initial", files), *commits]:
            _write(root, changed)
            _git(root, "add", "-A")
            _git(root, "commit", "-q", "-m", message)
        index(root, contributors=[])
        backends = open_backends(root)
        opened.append(backends)
        return backends

    yield build
    for backends in opened:
        backends.close()


@pytest.fixture
def contextfuse_conformance() -> Callable[..., Any]:
    """``check(strategy, backends=None)``: fail unless the strategy conforms (returns it)."""
    from contextfuse.testing import assert_strategy_conforms

    return assert_strategy_conforms


@pytest.fixture
def contextfuse_assemble() -> Callable[..., Any]:
    """``assemble(strategy, backends, query, budget=2000)``: the default pipeline's payload."""
    from contextfuse.testing import assemble_with

    return assemble_with
