"""``contextfuse plugins``: installed plugins, their hooks, and who fills each slot."""

from __future__ import annotations

from typing import Any

import click

from contextfuse.cli.output import FORMAT_OPTION, emit_json


def plugin_report() -> dict[str, Any]:
    """What ``contextfuse plugins --format json`` prints."""
    from contextfuse.plugins import make_plugin_manager

    pm = make_plugin_manager(on_error="warn")
    return {
        "plugins": [
            {
                "name": p.name,
                "distribution": p.distribution,
                "version": p.version,
                "entry_point": p.entry_point,
                "hooks": list(p.hooks),
            }
            for p in pm.loaded
        ],
        "failures": [
            {
                "name": f.name,
                "distribution": f.distribution,
                "version": f.version,
                "entry_point": f.entry_point,
                "cause": f.cause,
            }
            for f in pm.failures
        ],
        "components": pm.slot_table(),
    }


@click.command("plugins")
@FORMAT_OPTION
def plugins(fmt: str) -> None:
    """List installed plugins with versions and hooks, and which plugin fills each slot."""
    report = plugin_report()
    if fmt == "json":
        emit_json(report)
        return
    click.echo("Plugins:")
    for p in report["plugins"]:
        origin = f"{p['distribution']} {p['version']}".strip()
        click.echo(f"  {p['name']}  ({origin})")
        click.echo(f"    hooks: {', '.join(p['hooks']) or '-'}")
    if report["failures"]:
        click.echo("Failed to load:")
        for f in report["failures"]:
            click.echo(
                f"  {f['name']}  ({f['distribution']} {f['version']}, {f['entry_point']}): "
                f"{f['cause']}"
            )
    click.echo("Components:")
    for slot, provider in report["components"].items():
        click.echo(f"  {slot:<22} {provider}")
