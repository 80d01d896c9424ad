"""The version is written once, in the core, and every distribution reads it from there."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[3]
CORE_INIT = ROOT / "core" / "src" / "contextfuse" / "__init__.py"
PROJECTS = [ROOT / "pyproject.toml", ROOT / "core" / "pyproject.toml"]
PROJECTS += sorted(ROOT.glob("plugins/*/pyproject.toml"))


@pytest.mark.parametrize("pyproject", PROJECTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_distribution_reads_its_version_from_the_core(pyproject):
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    assert "version" in data["project"]["dynamic"]
    source = (pyproject.parent / data["tool"]["hatch"]["version"]["path"]).resolve()
    assert source == CORE_INIT
