"""``contextfuse strategies list``: every strategy, its capabilities and availability."""

from __future__ import annotations

from pathlib import Path

import click

from contextfuse.cli.output import FORMAT_OPTION, emit_json, fail


@click.group("strategies")
def strategies() -> None:
    """List and inspect strategies."""


@strategies.command("list")
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Judge availability against this repository's index (default: the one the current "
    "folder is in).",
)
@FORMAT_OPTION
def list_strategies(repo: Path | None, fmt: str) -> None:
    """Show every strategy with its capabilities and quality score, available or not, and why."""
    from contextfuse.cli.root_choice import current_root
    from contextfuse.config import load_config
    from contextfuse.errors import ContextfuseError
    from contextfuse.plugin_manager import make_plugin_manager
    from contextfuse.registry import StrategyRegistry
    from contextfuse.stores import choose_provider

    repo = repo or current_root()
    try:
        config = load_config(repo)
        pm = make_plugin_manager(component_pins=config.components)
        store = choose_provider(pm, config.index.store)
        registry = StrategyRegistry(pm, config, provides=frozenset(store.provides))
        backends = _backends_if_indexed(repo)
        try:
            rows = registry.describe(backends)
        finally:
            if backends is not None:
                backends.close()
    except ContextfuseError as exc:
        fail(str(exc))
        return
    if fmt == "json":
        emit_json(
            {"strategies": rows, "indexed": backends is not None, "notices": registry.notices}
        )
        return
    if backends is None:
        click.echo(f"(no index for {repo}: availability is judged on installation only)")
    for row in rows:
        status = "available" if row["available"] else f"unavailable: {row['reason']}"
        quality = "-" if row["quality_score"] is None else f"{row['quality_score']:.2f}"
        caps = row["capabilities"] or {}
        uses = [k[5:] for k, v in caps.items() if k.startswith("uses_") and v]
        click.echo(
            f"{row['name']:<26} quality {quality:<5} uses {','.join(uses) or '-':<18} {status}"
        )


def _backends_if_indexed(repo: Path):  # type: ignore[no-untyped-def]
    from contextfuse.kb import index_exists, open_backends

    if not index_exists(repo):
        return None
    return open_backends(repo)
