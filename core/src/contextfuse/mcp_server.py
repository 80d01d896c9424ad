"""The MCP server (``contextfuse mcp``): tools to assemble context, list strategies and
compact a transcript, and every indexed file of the served projects as a resource.

Built on the official ``mcp`` SDK; runs over stdio. Imported only by the ``mcp`` command.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.resources import FunctionResource
from pydantic import ValidationError

from contextfuse.compaction import CompactRequest, PolicyError, compact
from contextfuse.errors import ContextfuseError
from contextfuse.flow.provider import ModelProvider
from contextfuse.limits import clean_text, empty_payload_hint, request_problem
from contextfuse.server.projects import ProjectPool, WarmProject

__all__ = ["build_mcp_server"]

_INSTRUCTIONS = (
    "contextfuse assembles the context an agent should read from a repository within a token "
    "budget, and compacts long agent transcripts. Projects served: {projects}."
)


def build_mcp_server(pool: ProjectPool, providers: Mapping[str, ModelProvider]) -> MCPServer:
    """An MCP server over ``pool`` (already warm) with ``providers`` for compaction."""
    from contextfuse import __version__

    server: MCPServer = MCPServer(
        name="contextfuse",
        version=__version__,
        instructions=_INSTRUCTIONS.format(projects=", ".join(pool.names()) or "none"),
    )

    def project_of(name: str | None) -> WarmProject:
        names = pool.names()
        if name is None and len(names) == 1:
            name = names[0]
        project = pool.get(name) if name else None
        if project is None:
            raise ToolError(
                f"project {name!r} is not served; name one of: {', '.join(names) or '(none)'}"
            )
        return project

    @server.tool(
        name="assemble_context",
        description="The fragments of a served project most worth reading for a query, within "
        "a token budget, as markdown with each fragment's file and lines.",
    )
    def assemble_context(
        query: str,
        project: str | None = None,
        budget: int = 8000,
        reserved: int = 0,
        strategies: list[str] | None = None,
        plan_id: str | None = None,
    ) -> str:
        from contextfuse.cli.render import render_markdown

        query = clean_text(query)
        problem = request_problem(query, budget, reserved)
        if problem is not None:
            raise ToolError(problem[1])
        try:
            payload = project_of(project).assemble(
                query, budget, reserved=reserved, strategies=strategies, plan_id=plan_id
            )
        except ContextfuseError as exc:
            raise ToolError(str(exc)) from exc
        if not payload.fragments:
            return empty_payload_hint(budget) + "\n"
        return render_markdown(payload)

    @server.tool(
        name="list_strategies",
        description="Every retrieval strategy with its capabilities and whether it is "
        "available for the project's index.",
    )
    def list_strategies(project: str | None = None) -> dict[str, Any]:
        chosen = project_of(project)
        return {"project": chosen.name, "strategies": chosen.strategies()}

    @server.tool(
        name="compact_transcript",
        description="Compact an agent transcript (OpenAI chat messages). With "
        'decision_policy_ir (e.g. {"providers": ["offline"]}) old tool calls are kept, '
        "summarized or archived one by one; without it they become one summary.",
    )
    def compact_transcript(
        messages: list[dict[str, Any]],
        target_ratio: float = 0.1,
        pinned_indices: list[int] | None = None,
        decision_policy_ir: dict[str, Any] | None = None,
        policy_ir: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        fields: dict[str, Any] = {"messages": messages, "target_ratio": target_ratio}
        if pinned_indices is not None:
            fields["pinned_indices"] = pinned_indices
        if decision_policy_ir is not None:
            fields["decision_policy_ir"] = decision_policy_ir
        if policy_ir is not None:
            fields["policy_ir"] = policy_ir
        try:
            return compact(CompactRequest.model_validate(fields), providers)
        except ValidationError as exc:
            raise ToolError(
                "; ".join(
                    f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:10]
                )
            ) from exc
        except PolicyError as exc:
            raise ToolError(str(exc)) from exc

    # Named for the project as served (``--project NAME=PATH``), whatever its folder's name.
    for project in pool.projects.values():
        for path in project.file_paths():
            server.add_resource(
                FunctionResource.from_function(
                    _reader(project, path),
                    uri=f"project://{project.name}/{path}",
                    name=f"{project.name}/{path}",
                    mime_type="text/plain",
                )
            )
    return server


def _reader(project: WarmProject, path: str) -> Any:
    def read() -> str:
        try:
            return project.read_file(path)
        except ContextfuseError as exc:
            raise ResourceError(str(exc)) from exc

    return read
