"""One query limit and one budget range, worded the same, on the CLI, HTTP and MCP."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from contextfuse.limits import MAX_BUDGET, MAX_QUERY_CHARS, MIN_BUDGET
from contextfuse.mcp_server import build_mcp_server
from contextfuse.server.projects import ProjectPool
from contextfuse.server.settings import ServerSettings

CLI = [sys.executable, "-m", "contextfuse.cli.main"]
OVER = [
    ({"query": "x" * (MAX_QUERY_CHARS + 1)}, "query", "the limit is 100,000"),
    ({"budget": MIN_BUDGET - 1}, "budget", "the budget must be 100 to 2,000,000 tokens"),
    ({"budget": MAX_BUDGET + 1}, "budget", "the budget must be 100 to 2,000,000 tokens"),
]


@pytest.fixture(scope="module")
def pool(repo: Path) -> Iterator[ProjectPool]:
    projects = ProjectPool({"demo": repo}, refresh_interval_s=3600)
    projects.warm()
    yield projects
    projects.close()


def call_mcp(pool: ProjectPool, arguments: dict[str, Any]) -> Any:
    server = build_mcp_server(pool, {})

    async def call() -> Any:
        return await server.call_tool("assemble_context", arguments)

    return anyio.run(call)


@pytest.mark.parametrize(("change", "field", "message"), OVER)
def test_the_cli_refuses_a_request_over_the_limits_in_one_line(
    repo: Path, change: dict[str, Any], field: str, message: str
) -> None:
    request = {"query": "add numbers", "budget": 8000, **change}
    done = subprocess.run(
        [*CLI, "assemble", "-", "--repo", str(repo), "--budget", str(request["budget"])],
        input=request["query"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CONTEXTFUSE_CONFIG": str(repo.parent / "none.toml")},
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {done.stderr.strip()[7:]}"]
    assert message in done.stderr


@pytest.mark.parametrize(("change", "field", "message"), OVER)
def test_http_refuses_a_request_over_the_limits_naming_the_field(
    service: str, change: dict[str, Any], field: str, message: str
) -> None:
    body = {"query": "add numbers", "project": "demo", **change}
    response = httpx.post(service + "/v1/assemble", json=body, timeout=60)
    assert response.status_code in (413, 422)
    if response.status_code == 422:
        assert response.json()["detail"][0]["field"] == field


@pytest.mark.parametrize(("change", "field", "message"), OVER)
def test_mcp_refuses_a_request_over_the_limits_with_the_same_words(
    pool: ProjectPool, change: dict[str, Any], field: str, message: str
) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    with pytest.raises(ToolError, match=message):
        call_mcp(pool, {"query": "add numbers", **change})


def test_a_query_at_the_limit_is_answered_on_every_surface(
    pool: ProjectPool, repo: Path, serve: Any
) -> None:
    query = "add " * (MAX_QUERY_CHARS // 4)
    assert len(query) == MAX_QUERY_CHARS
    with serve(ServerSettings(projects={"demo": repo})) as url:  # the default body limit
        response = httpx.post(
            url + "/v1/assemble", json={"query": query, "project": "demo"}, timeout=120
        )
    assert response.status_code == 200
    assert "calc.py" in str(call_mcp(pool, {"query": query}))


def test_an_empty_answer_says_why(pool: ProjectPool) -> None:
    text = str(call_mcp(pool, {"query": "zzyzx quixotic nonexistent", "budget": MIN_BUDGET}))
    assert "no fragment was selected" in text or "calc.py" in text


def test_a_lone_surrogate_in_a_query_is_answered_not_a_500(service: str) -> None:
    body = '{"query": "add \\ud800 numbers", "project": "demo"}'
    response = httpx.post(
        service + "/v1/assemble",
        content=body.encode(),
        headers={"content-type": "application/json"},
        timeout=60,
    )
    assert response.status_code == 200
