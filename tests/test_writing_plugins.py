"""docs/writing-plugins.md's strategy, copied word for word, installed with pip and asked about a
real repository through the command line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "writing-plugins.md"
CLI = ["-m", "contextfuse.cli.main"]


def page_files() -> dict[str, str]:
    """``path -> text`` of each file the page shows (a `path`: line, then its block)."""
    text = PAGE.read_text(encoding="utf-8")
    return dict(re.findall(r"^`([^`\n]+)`:\n\n```\w+\n(.*?)```", text, flags=re.S | re.M))


@pytest.fixture(scope="module")
def site(tmp_path_factory, pip_install_target) -> Path:
    root = tmp_path_factory.mktemp("written")
    for rel, text in page_files().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    target = tmp_path_factory.mktemp("written-site")
    pip_install_target(target, root / "contextfuse-definitions-first")
    return target


@pytest.fixture(scope="module")
def real_repository(tmp_path_factory) -> Path:
    """The knowledge-base package of this repository, as a git repository of its own."""
    repo = tmp_path_factory.mktemp("kb-repo") / "kb"
    shutil.copytree(ROOT / "core" / "src" / "contextfuse" / "kb", repo)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "import"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )
    return repo


def test_the_page_shows_a_package_and_its_distribution():
    assert set(page_files()) == {
        "contextfuse-definitions-first/contextfuse_definitions_first/__init__.py",
        "contextfuse-definitions-first/pyproject.toml",
    }


def test_the_installed_strategy_answers_on_a_real_repository(run_with_path, site, real_repository):
    done = run_with_path(
        [
            *CLI,
            "assemble",
            "how are renderings read from the index",
            "--repo",
            str(real_repository),
            "--strategy",
            "definitions-first",
            "--budget",
            "3000",
            "--format",
            "json",
        ],
        site,
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["strategies_used"] == ["definitions-first"]
    fragments = payload["fragments"]
    assert all(f["provenance"]["resource_uri"].startswith("project://kb/") for f in fragments)
    assert any(f["detail_depth"] == 9 and "def " in f["content"] for f in fragments)
    assert payload["total_tokens"] <= 3000
