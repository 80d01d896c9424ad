"""``contextfuse mcp`` driven by a real MCP client session over stdio."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = pytest.mark.slow


def session_run(repo: Path, script: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    """Start ``contextfuse mcp`` serving ``repo`` as ``demo`` and run ``script`` against it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "contextfuse.cli.main", "mcp", "--project", f"demo={repo}"],
    )

    async def main() -> Any:
        with open(Path(repo).parent / "mcp-stderr.log", "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await script(session)

    return anyio.run(main)


def text_of(result: Any) -> str:
    assert not result.is_error, result.content
    return "".join(block.text for block in result.content if block.type == "text")


def test_the_server_offers_the_three_tools(repo: Path) -> None:
    async def script(session: ClientSession) -> Any:
        return await session.list_tools()

    tools = {tool.name for tool in session_run(repo, script).tools}
    assert tools == {"assemble_context", "list_strategies", "compact_transcript"}


def test_tools_assemble_list_strategies_and_compact(repo: Path) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n in range(8):
        messages.append({"role": "assistant", "content": f"note {n} " + "text " * 200})

    async def script(session: ClientSession) -> Any:
        assembled = await session.call_tool("assemble_context", {"query": "add two numbers"})
        strategies = await session.call_tool("list_strategies", {})
        compacted = await session.call_tool(
            "compact_transcript",
            {"messages": messages, "decision_policy_ir": {"providers": ["offline"]}},
        )
        return assembled, strategies, compacted

    assembled, strategies, compacted = session_run(repo, script)
    assert "def add(a, b):" in text_of(assembled)
    assert "simple-keyword" in text_of(strategies)
    report = json.loads(text_of(compacted))["compaction"]
    assert report["flow"] == "selective-compaction"
    assert report["output_bytes"] < report["original_bytes"]


def test_a_bad_tool_argument_is_a_tool_error_naming_it(repo: Path) -> None:
    async def script(session: ClientSession) -> Any:
        return await session.call_tool("assemble_context", {"query": "x", "project": "etc"})

    result = session_run(repo, script)
    assert result.is_error
    assert "project 'etc' is not served; name one of: demo" in result.content[0].text


def test_an_unknown_strategy_is_a_tool_error_naming_the_known_ones(repo: Path) -> None:
    async def script(session: ClientSession) -> Any:
        return await session.call_tool("assemble_context", {"query": "x", "strategies": ["no"]})

    result = session_run(repo, script)
    assert result.is_error
    assert "unknown strategy 'no'" in result.content[0].text


def test_the_projects_indexed_files_are_resources(repo: Path) -> None:
    async def script(session: ClientSession) -> Any:
        listed = await session.list_resources()
        calc = next(r for r in listed.resources if str(r.uri).endswith("/calc.py"))
        return listed, await session.read_resource(str(calc.uri))

    listed, read = session_run(repo, script)
    assert {str(r.uri).rsplit("/", 1)[-1] for r in listed.resources} >= {"calc.py", "main.py"}
    assert "def add(a, b):" in read.contents[0].text


def test_resources_are_named_for_the_served_project_not_its_folder(
    tmp_path: Path, new_repo: Callable[[Path], Path]
) -> None:
    repo = new_repo(tmp_path / "folder-name")

    async def script(session: ClientSession) -> Any:
        listed = await session.list_resources()
        return listed, await session.read_resource("project://demo/calc.py")

    listed, read = session_run(repo, script)
    assert {str(r.uri) for r in listed.resources} >= {"project://demo/calc.py"}
    assert "def add(a, b):" in read.contents[0].text


def test_a_tracked_folder_replaced_by_a_link_out_of_the_repository_is_no_resource(
    tmp_path: Path, new_repo: Callable[[Path], Path]
) -> None:
    repo = new_repo(tmp_path / "evil")
    (repo / "conf").mkdir()
    (repo / "conf" / "passwd").write_text("tracked\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "conf"], cwd=repo, check=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root:OUTSIDE-MARK:0:0\n")
    shutil.rmtree(repo / "conf")
    (repo / "conf").symlink_to(outside, target_is_directory=True)

    async def script(session: ClientSession) -> Any:
        listed = await session.list_resources()
        try:
            read = await session.read_resource("project://demo/conf/passwd")
        except Exception as exc:  # the SDK raises McpError for an unknown resource
            return listed, str(exc)
        return listed, "".join(getattr(c, "text", "") for c in read.contents)

    listed, read = session_run(repo, script)
    assert not any("conf/" in str(r.uri) for r in listed.resources)
    assert "OUTSIDE-MARK" not in read
