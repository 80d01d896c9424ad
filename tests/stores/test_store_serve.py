"""``contextfuse serve --store URL``: a real server on 127.0.0.1 over a real PostgreSQL store."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from contextfuse.server.settings import load_server_settings

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "contextfuse.cli.main"]
SECRET = "Sup3r-s3cret-pw"


@contextmanager
def serving(*args: str) -> Iterator[tuple[str | None, list[str]]]:
    """``contextfuse serve --port 0 ARGS`` in a process: its URL (None if it stopped first)
    and, after the block, every line it wrote to standard error."""
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines: list[str] = []
    url = None
    deadline = time.monotonic() + 120
    while url is None and time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        lines.append(line)
        found = re.search(r"listening on (http://\S+)", line)
        url = found.group(1) if found else None
    try:
        yield url, lines
    finally:
        process.terminate()
        process.wait(timeout=30)
        lines.extend(process.stderr.readlines())
        process.stderr.close()


def test_serve_indexes_and_answers_from_a_postgresql_store(postgres_url: str, shop: Path) -> None:
    with serving("--store", postgres_url, "--project", f"shop={shop}") as (url, lines):
        assert url is not None, "".join(lines)
        answer = httpx.post(
            f"{url}/v1/assemble",
            json={"project": "shop", "query": "slugify the name", "budget": 2000},
            timeout=60,
        )
    assert answer.status_code == 200, answer.text
    uris = [f["uko_node"] for f in answer.json()["fragments"]]
    assert any(u.startswith("project://shop/shop/util.py") for u in uris), uris  # served name
    assert not (shop / ".contextfuse").exists()  # served from the database, not an index file


def test_serve_never_shows_the_store_password(postgres_url: str, shop: Path) -> None:
    with_password = postgres_url.replace("postgres@", f"postgres:{SECRET}@")
    with serving("--store", with_password, "--project", f"shop={shop}") as (url, lines):
        assert url is not None, "".join(lines)
        answers = [
            httpx.get(f"{url}/healthz", timeout=60),
            httpx.get(f"{url}/v1/strategies", timeout=60),
            httpx.post(f"{url}/v1/assemble", json={"project": "shop", "query": "cart"}, timeout=60),
        ]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert all(SECRET not in a.text for a in answers)
    assert SECRET not in "".join(lines)


def test_serve_with_an_unreachable_store_fails_without_the_password(shop: Path) -> None:
    refused = f"postgresql://ada:{SECRET}@127.0.0.1:9/kb"
    with serving("--store", refused, "--project", f"shop={shop}") as (url, lines):
        assert url is None
    shown = "".join(lines)
    assert "cannot connect" in shown and "postgresql://127.0.0.1:9/kb" in shown
    assert SECRET not in shown


def test_the_store_option_overrides_the_settings_file(tmp_path: Path, shop: Path) -> None:
    settings = tmp_path / "server.toml"
    settings.write_text(f'[server]\nstore = "sqlite"\n\n[projects]\nshop = "{shop}"\n')
    assert load_server_settings(settings).store == "sqlite"
    overridden = load_server_settings(settings, store="postgresql://db.example/kb")
    assert overridden.store == "postgresql://db.example/kb"
    assert "db.example" not in repr(overridden)
