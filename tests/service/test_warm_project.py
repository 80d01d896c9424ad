"""A served project's file reads: what they return and what they record."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from contextfuse.kb.tiers import tier_store_of
from contextfuse.server.projects import WarmProject


def test_a_file_read_promotes_the_file_to_the_hot_tier(
    tmp_path: Path, new_repo: Callable[[Path], Path]
) -> None:
    project = WarmProject("demo", new_repo(tmp_path / "demo"), refresh_interval_s=3600)
    try:
        project.refresh()
        assert "def add(a, b):" in project.read_file("calc.py")
        tiers = tier_store_of(project.assembler.backends)
        assert tiers is not None
        found = tiers.tiers_of(["calc.py", "main.py"])
        assert {path: tier for path, (tier, _) in found.items()} == {
            "calc.py": "hot",
            "main.py": "warm",
        }
    finally:
        project.close()
