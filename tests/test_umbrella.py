"""What `pip install contextfuse` (the umbrella distribution) brings."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def _umbrella_requirements() -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return list(tomllib.load(handle)["project"]["dependencies"])


def test_the_umbrella_brings_the_tree_sitter_languages() -> None:
    core = next(r for r in _umbrella_requirements() if r.startswith("contextfuse-core"))
    assert "treesitter" in core.split("[", 1)[1].split("]", 1)[0].split(",")


def test_the_umbrella_brings_every_strategy_distribution_of_this_repository() -> None:
    names = {re.match(r"[A-Za-z0-9_.-]+", r).group(0) for r in _umbrella_requirements()}
    strategies = [p.parents[2].name for p in ROOT.glob("plugins/*/src/*/strategy.py")]
    assert strategies
    for strategy in strategies:
        assert f"contextfuse-{strategy}" in names
