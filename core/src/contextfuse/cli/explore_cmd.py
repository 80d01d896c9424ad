"""``contextfuse explore [QUERY]``: the context explorer over one repository, in the browser."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import click

from contextfuse.cli.output import fail, require_serve_extra


@click.command("explore")
@click.argument("query", required=False)
@click.option(
    "--repo",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="The repository to explore (default: the one the current folder is in).",
)
@click.option("--budget", type=click.IntRange(min=1), default=8000, show_default=True)
@click.option(
    "--strategy",
    "strategies",
    multiple=True,
    help="Tick this strategy on the page (repeatable); default: the enabled ones.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Default: any free port.")
@click.option("--no-browser", is_flag=True, help="Print the page's address; open no browser.")
def explore(
    query: str | None,
    repo: Path | None,
    budget: int,
    strategies: tuple[str, ...],
    port: int,
    no_browser: bool,
) -> None:
    """Serve the explorer over one repository on 127.0.0.1 and open it in the browser.

    The page shows where the budget goes for QUERY: tokens by file, depth and strategy, what
    was left out and why, each fragment's score and source, and two budgets side by side.
    It is the `serve` page (`/`) for this repository alone; stop it with Ctrl-C.
    """
    require_serve_extra()
    from contextfuse.cli.root_choice import current_root
    from contextfuse.cli.serve_cmd import project_name
    from contextfuse.errors import ContextfuseError
    from contextfuse.plugin_manager import make_plugin_manager
    from contextfuse.server.run import serve
    from contextfuse.server.settings import load_server_settings

    root = repo.resolve() if repo is not None else current_root()
    name = project_name(root.name)
    state: dict[str, str | int] = {"project": name, "budget": budget}
    if query:
        state["q"] = query
    if strategies:
        state["strategies"] = ",".join(strategies)

    def announce(url: str) -> None:
        page = f"{url}/#{urlencode(state)}"
        click.echo(f"contextfuse explorer on {page}", err=True)
        if not no_browser:
            import webbrowser

            if not webbrowser.open(page, new=2):
                click.echo("no browser to open: open the address above", err=True)

    try:
        # Loopback only and no token: a page for the person at this machine.
        settings = load_server_settings(
            None, host="127.0.0.1", port=port, projects={name: root}, token=None
        )
        click.echo(f"indexing {root}...", err=True)
        serve(settings, make_plugin_manager(), announce=announce)
    except ContextfuseError as exc:
        fail(str(exc))
