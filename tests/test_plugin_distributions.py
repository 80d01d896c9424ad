"""Real plugin distributions, installed with pip, found through the `contextfuse` entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CLI = ["-m", "contextfuse.cli.main"]


@pytest.fixture(scope="module")
def site(tmp_path_factory, pip_install_target, fixtures_dir) -> Path:
    target = tmp_path_factory.mktemp("site")
    plugins = fixtures_dir / "plugins"
    pip_install_target(
        target,
        plugins / "cf-good-plugin",
        plugins / "cf-broken-plugin",
        plugins / "cf-scorer-plugin",
    )
    return target


def plugins_report(run_with_path, site):
    done = run_with_path([*CLI, "plugins", "--format", "json"], site)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_installed_plugin_is_found_through_its_entry_point(run_with_path, site):
    report = plugins_report(run_with_path, site)
    good = next(p for p in report["plugins"] if p["name"] == "good")
    assert good["distribution"] == "cf-good-plugin"
    assert good["version"] == "1.2.3"
    assert good["hooks"] == ["contextfuse_strategies"]


def test_a_broken_plugin_is_reported_by_name_while_the_others_load(run_with_path, site):
    report = plugins_report(run_with_path, site)
    [failure] = report["failures"]
    assert failure["name"] == "broken"
    assert failure["distribution"] == "cf-broken-plugin"
    assert failure["entry_point"] == "broken = cf_broken_plugin"
    assert "a_module_that_does_not_exist" in failure["cause"]
    assert {"good", "reverse-scorer"} <= {p["name"] for p in report["plugins"]}


def test_the_installed_strategy_is_usable_in_the_pipeline(run_with_path, site):
    code = (
        "from contextfuse import *\n"
        "fs=[ContextFragment(uko_node=f'n{i}',content='x',token_count=t,relevance_score=r,"
        "provenance=FragmentProvenance(resource_uri=f'n{i}')) for i,(t,r) in "
        "enumerate([(30,0.9),(10,0.1),(20,0.5)])]\n"
        "p=ACMSPipeline().assemble('p',fs,ContextBudget(max_tokens=100,reserved_tokens=0),"
        "strategy='shortest-first')\n"
        "print([f.uko_node for f in p.fragments])\n"
    )
    done = run_with_path(["-c", code], site)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['n1', 'n2', 'n0']"


def test_a_third_party_component_replaces_the_default(run_with_path, site):
    report = plugins_report(run_with_path, site)
    assert report["components"]["fragment_scorer"] == "reverse-scorer"
    assert report["components"]["budget_packer"] == "contextfuse.defaults"


def test_the_replaced_component_changes_what_is_packed(run_with_path, site):
    code = (
        "from contextfuse import *\n"
        "fs=[ContextFragment(uko_node=f'n{i}',content=str(i),token_count=40,relevance_score=r,"
        "provenance=FragmentProvenance(resource_uri=f'n{i}')) for i,r in "
        "enumerate([0.9,0.1,0.5])]\n"
        "p=ACMSPipeline().assemble('p',fs,ContextBudget(max_tokens=80,reserved_tokens=0))\n"
        "print([f.uko_node for f in p.fragments])\n"
    )
    done = run_with_path(["-c", code], site)
    assert done.returncode == 0, done.stderr
    # The relevance strategy offers n0 then n2 (what fits 80 tokens); the plugin's scorer
    # prefers the least relevant of them.
    assert done.stdout.strip() == "['n2', 'n0']"
