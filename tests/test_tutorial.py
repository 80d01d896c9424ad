"""docs/tutorial.md, followed word for word, and the plugin template, both really installed."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
TEMPLATE = ROOT / "templates" / "strategy-plugin"
CLI = ["-m", "contextfuse.cli.main"]


def tutorial_files() -> dict[str, str]:
    """``path -> text`` of each file the tutorial shows (a `path`: line, then its block)."""
    text = TUTORIAL.read_text(encoding="utf-8")
    return dict(re.findall(r"^`([^`\n]+)`:\n\n```\w+\n(.*?)```", text, flags=re.S | re.M))


def tutorial_commands() -> list[str]:
    text = TUTORIAL.read_text(encoding="utf-8")
    [block] = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return block.strip().splitlines()


@pytest.fixture(scope="module")
def tutorial_project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tutorial")
    for rel, text in tutorial_files().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "contextfuse-symbol-spotlight"


@pytest.fixture(scope="module")
def tutorial_site(tmp_path_factory, pip_install_target, tutorial_project) -> Path:
    site = tmp_path_factory.mktemp("tutorial-site")
    pip_install_target(site, tutorial_project)
    return site


def test_the_tutorial_shows_the_package_the_distribution_and_a_test():
    assert set(tutorial_files()) == {
        "contextfuse-symbol-spotlight/src/contextfuse_symbol_spotlight/__init__.py",
        "contextfuse-symbol-spotlight/pyproject.toml",
        "contextfuse-symbol-spotlight/tests/test_symbol_spotlight.py",
    }


def test_the_tutorial_installs_then_lists_the_strategy():
    commands = tutorial_commands()
    assert commands[1] == "pip install -e ." and commands[-1] == "contextfuse strategies list"


def test_the_tutorials_tests_pass_with_the_installed_plugin(
    run_with_path, tutorial_site, tutorial_project
):
    done = run_with_path(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", str(tutorial_project / "tests")],
        tutorial_site,
        cwd=tutorial_project,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_installed_tutorial_strategy_is_listed(run_with_path, tutorial_site, tmp_path):
    done = run_with_path(
        [*CLI, "strategies", "list", "--format", "json"], tutorial_site, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["strategies"]}
    assert rows["symbol-spotlight"]["quality_score"] == 0.4


def test_the_plugin_template_installs_and_its_tests_pass(
    run_with_path, pip_install_target, tmp_path
):
    project = tmp_path / "my-strategy"
    shutil.copytree(TEMPLATE, project)
    site = tmp_path / "site"
    pip_install_target(site, project)
    done = run_with_path(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", str(project / "tests")],
        site,
        cwd=project,
    )
    assert done.returncode == 0, done.stdout + done.stderr
