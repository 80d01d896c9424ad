"""Secrets planted in files and in history reach no payload (CLI, HTTP, MCP) and no index byte."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from contextfuse.mcp_server import build_mcp_server
from contextfuse.server.projects import ProjectPool
from contextfuse.server.settings import ServerSettings

pytestmark = pytest.mark.slow

_FIXTURE = Path(__file__).parents[1] / "fixtures" / "planted_secrets.py"
_spec = importlib.util.spec_from_file_location("planted_secrets", _FIXTURE)
assert _spec is not None and _spec.loader is not None
planted = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(planted)

MESSAGE_TOKEN = "ghp_Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"
VALUES = [*planted.planted_values(), MESSAGE_TOKEN]
QUERIES = [
    "deploy script export aws secret access key api token psql",
    "notify slack webhook post",
    "database connection psycopg2 connect password",
    "docker compose postgres password environment",
    "kubernetes deployment redis password env",
    "settings aws access key database url",
    "github ci token stripe billing slack bot",
    "auth jwt token private key notes",
    "old config api key stripe secret production",
    "rotate the leaked key connection strings appsettings",
]


def git(repo: Path, *args: str) -> None:
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", *ident, *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture(scope="module")
def secret_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("planted") / "planted"
    repo.mkdir()
    (repo / "README.md").write_text("# planted\n\nDeployment scripts and settings.\n")
    for rel, content in planted.PLANTED_FILES.items():
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"Add deployment files\n\nTemporary token {MESSAGE_TOKEN}")
    for rel in planted.HISTORY_ONLY:
        (repo / rel).unlink()
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Remove old configuration")
    return repo


def leaks(text: str) -> list[str]:
    lowered = text.lower()
    return [v for v in VALUES if v in text or v.lower() in lowered]


def index_bytes(repo: Path) -> bytes:
    conn = sqlite3.connect(repo / ".contextfuse" / "index.db")
    conn.execute("PRAGMA wal_checkpoint(FULL)")
    conn.close()
    return b"".join(p.read_bytes() for p in (repo / ".contextfuse").glob("index.db*"))


def test_at_least_fifteen_values_of_every_kind_are_planted() -> None:
    assert len(VALUES) >= 15


def test_no_planted_secret_is_in_a_cli_payload_or_the_index_file(secret_repo: Path) -> None:
    env = {**os.environ, "CONTEXTFUSE_CONFIG": str(secret_repo.parent / "none.toml")}
    for query in QUERIES:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "contextfuse.cli.main",
                "assemble",
                query,
                "--repo",
                str(secret_repo),
                "--budget",
                "20000",
                "--format",
                "json",
                "--explain",
                "-q",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=True,
        )
        assert json.loads(done.stdout)["fragments"], query
        assert leaks(done.stdout) == [], query
    data = index_bytes(secret_repo).decode("latin-1")
    assert leaks(data) == []


def test_no_planted_secret_is_in_an_http_or_mcp_payload(secret_repo: Path, serve: Any) -> None:
    with serve(ServerSettings(projects={"planted": secret_repo})) as url:
        for query in QUERIES:
            for strategies in (None, ["temporal-archaeology"]):
                body: dict[str, Any] = {"query": query, "project": "planted", "budget": 20000}
                if strategies:
                    body["strategies"] = strategies
                response = httpx.post(url + "/v1/assemble", json=body, timeout=120)
                assert response.status_code == 200, response.text[:300]
                assert leaks(response.text) == [], query
    pool = ProjectPool({"planted": secret_repo}, refresh_interval_s=3600)
    pool.warm()
    try:
        server = build_mcp_server(pool, {})

        async def everything() -> str:
            out = []
            for query in QUERIES:
                out.append(
                    str(
                        await server.call_tool(
                            "assemble_context", {"query": query, "budget": 20000}
                        )
                    )
                )
            for resource in await server.list_resources():
                out.append(str(await server.read_resource(str(resource.uri))))
            return "\n".join(out)

        assert leaks(anyio.run(everything)) == []
    finally:
        pool.close()
