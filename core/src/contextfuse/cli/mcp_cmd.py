"""``contextfuse mcp``: the MCP server over stdio."""

from __future__ import annotations

import click

from contextfuse.cli.output import fail, require_serve_extra
from contextfuse.cli.serve_cmd import parse_projects, project_name


@click.command("mcp")
@click.option(
    "--project",
    "projects",
    multiple=True,
    metavar="NAME=PATH",
    help="Serve the repository at PATH as project NAME (repeatable; default: the project the "
    "current folder is in, named after its folder).",
)
def mcp(projects: tuple[str, ...]) -> None:
    """Serve tools (assemble_context, list_strategies, compact_transcript) and the projects'
    indexed files as resources, over MCP on standard input and output."""
    require_serve_extra()
    from contextfuse.compaction import collect_providers
    from contextfuse.errors import ContextfuseError
    from contextfuse.mcp_server import build_mcp_server
    from contextfuse.plugin_manager import make_plugin_manager
    from contextfuse.server.projects import ProjectPool
    from contextfuse.server.settings import load_server_settings

    chosen = parse_projects(projects)
    if not chosen:
        from contextfuse.cli.root_choice import current_root

        root = current_root()
        chosen = {project_name(root.name): root}
    try:
        settings = load_server_settings(None, projects=chosen, refresh_interval_s=30.0)
        pool = ProjectPool(settings.projects, refresh_interval_s=settings.refresh_interval_s)
        pool.warm()
        server = build_mcp_server(pool, collect_providers(make_plugin_manager()))
    except ContextfuseError as exc:
        fail(str(exc))
        return
    try:
        server.run("stdio")
    finally:
        pool.close()
