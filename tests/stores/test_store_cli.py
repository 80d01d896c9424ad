"""``contextfuse index --store URL`` and ``assemble --store URL``, end to end on PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "contextfuse.cli.main"]
SECRET = "Sup3r-s3cret-pw"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, check=False)


def test_index_and_assemble_run_on_a_postgresql_store(postgres_url: str, shop: Path) -> None:
    indexed = run("index", "--store", postgres_url, "--format", "json", str(shop))
    assembled = run(
        "assemble", "slugify the name", "--store", postgres_url, "--repo", str(shop),
        "--no-refresh", "--format", "json", "--budget", "2000",
    )  # fmt: skip
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["files"] == 5
    assert assembled.returncode == 0, assembled.stderr
    uris = [f["uko_node"] for f in json.loads(assembled.stdout)["fragments"]]
    assert any(u.startswith(f"project://{shop.name}/shop/util.py") for u in uris), (
        uris,
        assembled.stderr,
    )
    assert not (shop / ".contextfuse").exists()  # nothing was written next to the code


def test_the_cli_never_prints_the_password(postgres_url: str, shop: Path) -> None:
    url = postgres_url.replace("postgres@", f"postgres:{SECRET}@")
    indexed = run("index", "--store", url, str(shop))
    refused = run("index", "--store", f"postgresql://ada:{SECRET}@127.0.0.1:9/x", str(shop))
    assert indexed.returncode == 0, indexed.stderr
    assert refused.returncode != 0
    assert "cannot connect" in refused.stderr
    for done in (indexed, refused):
        assert SECRET not in done.stdout + done.stderr


def test_an_unknown_store_scheme_is_a_clear_error(shop: Path) -> None:
    done = run("index", "--store", "mysql://u:pw@h/db", str(shop))
    assert done.returncode != 0
    assert "no backend provider 'mysql'" in done.stderr
    assert "pw@" not in done.stderr


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_index_stats_show_the_storage_tiers(
    backend: str, shop: Path, request: pytest.FixtureRequest
) -> None:
    store = ["--store", request.getfixturevalue("postgres_url")] if backend != "sqlite" else []
    done = run("index", *store, "--stats", "--hot-days", "2", str(shop))
    assert done.returncode == 0, done.stderr
    assert "tiers     hot 0  warm 5  cold 0 files, 0 evicted" in done.stdout
    assert "cold      0 files compacted" in done.stdout
    assert "policy    hot until idle 2 d, warm until 30 d, evicted after 180 d" in done.stdout


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_tier_policy_comes_from_the_config_file_and_options_win(
    backend: str, shop: Path, request: pytest.FixtureRequest
) -> None:
    store = ["--store", request.getfixturevalue("postgres_url")] if backend != "sqlite" else []
    (shop / ".contextfuse").mkdir()
    (shop / ".contextfuse/config.toml").write_text("[tiers]\nhot_days = 2\nwarm_days = 9\n")
    configured = run("index", *store, "--stats", str(shop))
    overridden = run("index", *store, "--stats", "--warm-days", "12", str(shop))
    assert configured.returncode == 0, configured.stderr
    assert "policy    hot until idle 2 d, warm until 9 d, evicted after 180 d" in configured.stdout
    assert "policy    hot until idle 2 d, warm until 12 d, evicted after 180 d" in (
        overridden.stdout
    )


def test_a_bad_tiers_section_is_a_clear_error(shop: Path) -> None:
    (shop / ".contextfuse").mkdir()
    (shop / ".contextfuse/config.toml").write_text("[tiers]\nhot_dayz = 2\n")
    done = run("index", str(shop))
    assert done.returncode == 2
    assert "hot_dayz" in done.stderr and "hot_days" in done.stderr


def test_a_tier_policy_whose_days_shrink_is_a_clear_error(shop: Path) -> None:
    done = run("index", "--warm-days", "1", "--hot-days", "3", str(shop))
    assert done.returncode == 2
    assert "tier days must grow" in done.stderr


def test_assemble_shows_a_plan_and_its_decisions_from_a_postgresql_store(
    postgres_url: str, shop: Path
) -> None:
    from contextfuse_postgres import open_postgres_backends

    indexed = run("index", "--store", postgres_url, str(shop))
    assert indexed.returncode == 0, indexed.stderr
    with open_postgres_backends(postgres_url, shop.name) as kb:
        parent = kb.plans.add_plan("Grow the shop")
        plan = kb.plans.add_plan("Friendlier URLs", "Slugs for every item.", parent=parent.id)
        decision = kb.plans.decide(plan.id, "Slugify item names with dashes")
    assembled = run(
        "assemble", "slugify the item names", "--store", postgres_url, "--repo", str(shop),
        "--plan-id", plan.id, "--strategy", "plan-decision-context", "--no-refresh",
        "--format", "json", "--budget", "2000",
    )  # fmt: skip
    assert assembled.returncode == 0, assembled.stderr
    fragments = json.loads(assembled.stdout)["fragments"]
    assert [(f["uko_node"], f["metadata"]["kind"]) for f in fragments] == [
        (plan.uri, "plan"),
        (decision.uri, "decision"),
        (parent.uri, "plan"),
    ]
    assert "Slugs for every item." in fragments[0]["content"]
