"""The examples in README.md and docs/ run and print what they promise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={"CONTEXTFUSE_PLUGIN_AUTOLOAD": "0", "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_spec_example_usage_gives_its_numbers():
    example = python_blocks(ROOT / "README.md")[0]
    out = run(example)
    assert "Fragments selected: 3" in out
    assert "Total tokens: 350" in out
    assert "Within budget: True" in out
    assert "Strategies: ('relevance',)" in out


def test_the_strategy_in_under_thirty_lines_is_under_thirty_lines_and_conforms():
    strategy = python_blocks(ROOT / "docs" / "writing-plugins.md")[0]
    assert len(strategy.strip().splitlines()) < 30
    out = run(
        strategy
        + (
            "\nfrom contextfuse.testing import assert_strategy_conforms\n"
            "(found,) = contextfuse_strategies()\n"
            "print(assert_strategy_conforms(found).name)\n"
        )
    )
    assert out.strip() == "definitions-first"


def test_the_component_replacement_example_replaces_the_scorer():
    _, scorer, _ = python_blocks(ROOT / "docs" / "writing-plugins.md")
    out = run(
        scorer
        + (
            "\nfrom contextfuse import *\n"
            "pm = make_plugin_manager(autoload=False)\n"
            "import sys; pm.register_plugin(sys.modules[__name__], 'cheap')\n"
            "print(type(ACMSPipeline(plugin_manager=pm).component('fragment_scorer')).__name__)\n"
        )
    )
    assert out.strip() == "CheapestFirstScorer"


def test_the_repository_example_assembles_within_budget(tmp_path):
    (tmp_path / "packer.py").write_text(
        "def pack(fragments, budget):\n    '''Skip fragments that do not fit.'''\n"
        "    return [f for f in fragments if f <= budget]\n"
    )
    example = python_blocks(ROOT / "README.md")[1] + (
        "\nprint(payload.is_within_budget, len(payload.fragments) > 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("True True")


def test_the_plan_store_example_gives_the_chain_nearest_first(tmp_path):
    (example,) = python_blocks(ROOT / "docs" / "concepts.md")
    done = subprocess.run(
        [sys.executable, "-c", example],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"CONTEXTFUSE_PLUGIN_AUTOLOAD": "0", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['Storage overhaul', 'Release 3.0']",
        "['accepted', 'superseded']",
    ]
