"""A project served as ``NAME=PATH`` is called NAME in every URI the service returns, over
HTTP and MCP, whatever its folder is called; the index keeps the name, a new name renames
it, and a payload hashes as one from an index built under that name from the start."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from contextfuse.assembler import ContextAssembler
from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb import index
from contextfuse.server.settings import ServerSettings

pytestmark = pytest.mark.slow

FOLDER = "checkout-folder"
QUERY = "add two numbers and print the sum"


def uris_in(data: Any) -> list[str]:
    """Every string of ``data`` (nested) that holds a ``project://`` URI."""
    text = json.dumps(data)
    found: list[str] = []
    start = text.find("project://")
    while start >= 0:
        end = start + len("project://")
        while end < len(text) and text[end] not in '"/ \\':
            end += 1
        found.append(text[start:end])
        start = text.find("project://", end)
    return found


def stored_projects(repo: Path) -> tuple[set[str], str]:
    """The project names of the index's node URIs, and the name its metadata holds."""
    conn = sqlite3.connect(repo / ".contextfuse" / "index.db")
    try:
        uris = conn.execute("SELECT uri FROM nodes").fetchall()
        meta = conn.execute("SELECT value FROM meta WHERE key = 'project'").fetchone()[0]
    finally:
        conn.close()
    return {uri.split("/")[2] for (uri,) in uris}, meta


def test_every_uri_of_an_http_answer_names_the_served_project(
    tmp_path: Path, new_repo: Callable[[Path], Path], serve: Callable[..., Any]
) -> None:
    repo = new_repo(tmp_path / FOLDER)
    with serve(ServerSettings(projects={"web": repo})) as url:
        body = {"project": "web", "query": QUERY, "budget": 3000, "explain": True}
        payload = httpx.post(f"{url}/v1/assemble", json=body, timeout=120).json()
    assert payload["fragments"]
    assert payload["explanation"]["fragments"]
    for fragment in payload["fragments"]:
        assert fragment["uko_node"].startswith("project://web/")
        assert fragment["provenance"]["resource_uri"].startswith("project://web/")
    assert set(uris_in(payload)) == {"project://web"}  # payload, provenance map, explain
    assert "project://web" in payload["preamble"]


def test_serving_under_another_name_renames_the_index_cleanly(
    tmp_path: Path, new_repo: Callable[[Path], Path], serve: Callable[..., Any]
) -> None:
    repo = new_repo(tmp_path / FOLDER)
    for name in ("web", "api"):
        with serve(ServerSettings(projects={name: repo})) as url:
            body = {"project": name, "query": QUERY, "budget": 3000, "explain": True}
            payload = httpx.post(f"{url}/v1/assemble", json=body, timeout=120).json()
        assert set(uris_in(payload)) == {f"project://{name}"}
        assert stored_projects(repo) == ({name}, name)
    index(repo)  # a run that names no project keeps the index's name
    assert stored_projects(repo) == ({"api"}, "api")


def test_a_renamed_index_gives_the_hash_of_one_built_under_that_name(tmp_path: Path) -> None:
    first = tmp_path / FOLDER
    first.mkdir()
    (first / "calc.py").write_text('def add(a, b):\n    """Add two numbers."""\n    return a + b\n')
    (first / "main.py").write_text("from calc import add\n\nprint(add(1, 2))\n")
    second = tmp_path / "another-folder"
    shutil.copytree(first, second)
    index(first)  # named after its folder first
    hashes = []
    for repo in (first, second):
        with ContextAssembler(repo, project="web") as assembler:
            assembler.refresh()
            hashes.append(assembler.assemble(QUERY, 2000).context_hash)
    assert hashes[0] == hashes[1]


def test_a_name_that_cannot_stand_in_a_uri_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("X = 1\n")
    with pytest.raises(KnowledgeBaseError, match="cannot name a project"):
        index(tmp_path, project="a/b")


def test_mcp_resources_and_answers_name_the_served_project(
    tmp_path: Path, new_repo: Callable[[Path], Path]
) -> None:
    repo = new_repo(tmp_path / FOLDER)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "contextfuse.cli.main", "mcp", "--project", f"web={repo}"],
    )

    async def main() -> Any:
        with open(tmp_path / "mcp-stderr.log", "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = await session.list_resources()
                answer = await session.call_tool(
                    "assemble_context", {"query": QUERY, "budget": 3000}
                )
                return listed, answer

    listed, answer = anyio.run(main)
    assert {str(r.uri).split("/")[2] for r in listed.resources} == {"web"}
    text = "".join(block.text for block in answer.content if block.type == "text")
    assert "def add(a, b):" in text
    assert "project://web" in text and f"project://{FOLDER}" not in text
