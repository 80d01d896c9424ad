"""Every hookspec has a caller in the core and a test that implements it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contextfuse import hookspecs
from contextfuse.plugin import SLOTS

ROOT = Path(__file__).resolve().parents[3]
CORE = ROOT / "core" / "src" / "contextfuse"
HOOKS = sorted(n for n in hookspecs.__all__ if n.startswith("contextfuse_"))
COMPONENT_HOOKS = {s.hook for s in SLOTS}
# Files that declare, document or implement the hooks rather than call them.
NOT_CALLERS = {"hookspecs.py", "hookdoc.py", "defaults.py"}


def _test_files() -> list[Path]:
    files = [*ROOT.glob("core/tests/**/test_*.py"), *ROOT.glob("tests/**/test_*.py")]
    files += ROOT.glob("plugins/*/tests/**/test_*.py")
    # The plugin distributions the integration tests install with pip.
    files += ROOT.glob("tests/fixtures/plugins/**/*.py")
    return [f for f in files if f != Path(__file__)]


def _core_sources() -> str:
    return "\n".join(
        p.read_text(encoding="utf-8") for p in CORE.rglob("*.py") if p.name not in NOT_CALLERS
    )


@pytest.mark.parametrize("name", sorted(set(HOOKS) - COMPONENT_HOOKS))
def test_each_collecting_hook_is_called_by_the_core(name):
    sources = _core_sources()
    called = re.search(rf"(collect|notify)\([^)]*\"{name}\"", sources)
    assert called, f"{name} is specified but nothing in the core calls it"


def test_the_component_hooks_are_exactly_the_slot_tables_hooks():
    firstresult = {n for n in HOOKS if getattr(hookspecs, n).contextfuse_spec.get("firstresult")}
    assert firstresult == COMPONENT_HOOKS


@pytest.mark.parametrize("name", sorted(set(HOOKS)))
def test_each_hook_has_a_behaviour_test_that_implements_it(name):
    pattern = re.compile(rf"def {name}\(")
    implementing = [f for f in _test_files() if pattern.search(f.read_text(encoding="utf-8"))]
    if name in COMPONENT_HOOKS:
        # Component hooks are built by one generic caller; a test of any of them, plus the
        # monitoring test that sees all ten called, covers the rest.
        implementing += [
            f for f in _test_files() if "add_hookcall_monitoring" in f.read_text(encoding="utf-8")
        ]
    assert implementing, f"no test implements {name}"
