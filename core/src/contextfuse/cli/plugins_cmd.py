"""``contextfuse plugins``: installed plugins, their hooks, and who fills each slot."""

from __future__ import annotations

from typing import Any

import click

from contextfuse.cli.output import FORMAT_OPTION, emit_json


def plugin_report() -> dict[str, Any]:
    """What ``contextfuse plugins --format json`` prints.

    ``components`` maps each slot to the plugin that fills it; ``slots`` describes each slot
    from the slot table (phase, configuration section, protocol, method, hook, core default)
    with its provider and the wrappers around it.
    """
    from contextfuse.plugin_manager import make_plugin_manager
    from contextfuse.slots import SLOTS

    pm = make_plugin_manager(on_error="warn")
    components = pm.slot_table()
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
        "components": components,
        "slots": [
            {
                "name": slot.name,
                "phase": slot.phase,
                "section": slot.section,
                "protocol": slot.protocol,
                "method": slot.method,
                "hook": slot.hook,
                "default": slot.default_name,
                "provider": components[slot.name],
                "wrappers": pm.component_wrappers(slot.name),
            }
            for slot in SLOTS
        ],
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
    click.echo("Components (phase, slot, protocol: provider):")
    for slot in report["slots"]:
        wrapped = f" wrapped by {', '.join(slot['wrappers'])}" if slot["wrappers"] else ""
        click.echo(
            f"  {slot['phase']} {slot['name']:<22} {slot['protocol']:<21} "
            f"{slot['provider']}{wrapped}"
        )
