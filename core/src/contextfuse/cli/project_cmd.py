"""``contextfuse project context set``: per-project overrides."""

from __future__ import annotations

from pathlib import Path

import click

from contextfuse.cli.output import fail


@click.group("project")
def project() -> None:
    """Per-project settings (stored in <repo>/.contextfuse/config.toml)."""


@project.group("context")
def context() -> None:
    """Context settings of this project."""


@context.command("set")
@click.option(
    "--strategy",
    "strategies",
    multiple=True,
    required=True,
    help="A strategy to enable for this project (repeatable, in order).",
)
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The repository (default: the one the current folder is in).",
)
def set_context(strategies: tuple[str, ...], repo: Path | None) -> None:
    """Replace this project's enabled strategies (context.strategies.enabled)."""
    from contextfuse.cli.root_choice import current_root
    from contextfuse.config import load_config, write_project_strategies
    from contextfuse.errors import ContextfuseError
    from contextfuse.plugin_manager import make_plugin_manager
    from contextfuse.registry import StrategyRegistry

    repo = repo or current_root()
    try:
        config = load_config(repo)
        registry = StrategyRegistry(make_plugin_manager(component_pins=config.components), config)
        known = {e.name for e in registry.entries()}
        unknown = [s for s in strategies if s not in known]
        if unknown:
            fail(
                f"unknown strategy {', '.join(map(repr, unknown))}; installed: "
                f"{', '.join(sorted(known))}"
            )
        path = write_project_strategies(repo, list(strategies))
    except ContextfuseError as exc:
        fail(str(exc))
        return
    click.echo(f"{path}: context.strategies.enabled = {list(strategies)}")
