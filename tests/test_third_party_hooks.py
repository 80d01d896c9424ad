"""Third-party plugins installed with pip: a component-hook wrapper, a backend provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CLI = ["-m", "contextfuse.cli.main"]

PIPELINE = (
    "from contextfuse import *\n"
    "fs=[ContextFragment(uko_node=f'n{i}',content=str(i),token_count=10,relevance_score=0.5,"
    "provenance=FragmentProvenance(resource_uri=f'n{i}')) for i in range(3)]\n"
    "p=ACMSPipeline().assemble('p',fs,ContextBudget(max_tokens=100,reserved_tokens=0))\n"
    "print(len(p.fragments))\n"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory, pip_install_target, fixtures_dir) -> Path:
    target = tmp_path_factory.mktemp("site")
    plugins = fixtures_dir / "plugins"
    pip_install_target(target, plugins / "cf-packer-wrapper", plugins / "cf-memory-store")
    return target


@pytest.fixture
def repo(tmp_path) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("alpha notes", encoding="utf-8")
    (tmp_path / "b.txt").write_text("beta", encoding="utf-8")
    return tmp_path


def test_an_installed_wrapper_wraps_the_default_component(run_with_path, site):
    done = run_with_path(["-c", PIPELINE], site)
    assert done.returncode == 0, done.stderr
    assert "packer-wrapper: packed 3 of 100 tokens" in done.stderr


def test_the_wrapped_component_still_does_its_job(run_with_path, site):
    done = run_with_path(["-c", PIPELINE], site)
    assert done.stdout.strip() == "3"


def test_an_installed_backend_provider_opens_the_store_it_names(run_with_path, site, repo):
    code = (
        "import contextfuse\n"
        f"print(len(contextfuse.open_backends({str(repo)!r}, store='memory').fragments))"
    )
    done = run_with_path(["-c", code], site)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"


def test_an_installed_plugin_adds_a_command(run_with_path, site, repo):
    done = run_with_path([*CLI, "memory-files", str(repo)], site)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2 files"


def test_contextfuse_plugins_lists_the_wrapper_of_a_slot(run_with_path, site):
    done = run_with_path([*CLI, "plugins", "--format", "json"], site)
    assert done.returncode == 0, done.stderr
    packer = next(s for s in json.loads(done.stdout)["slots"] if s["name"] == "budget_packer")
    assert packer["wrappers"] == ["packer-wrapper"]
    assert (packer["protocol"], packer["default"]) == ("BudgetPacker", "PolicyPacker")
