"""The ``contextfuse`` command group: built-in commands imported on use, plugin commands on
demand (see :mod:`contextfuse.cli.main`)."""

from __future__ import annotations

import importlib
from typing import Any

import click

#: name -> (module, attribute, one-line help). The module is imported only when the
#: command runs, so ``--help`` never imports pydantic, numpy or the plugins.
BUILTIN_COMMANDS: dict[str, tuple[str, str, str]] = {
    "plugins": ("contextfuse.cli.plugins_cmd", "plugins", "List installed plugins and slots."),
    "strategies": (
        "contextfuse.cli.strategies_cmd",
        "strategies",
        "List and inspect strategies.",
    ),
    "index": ("contextfuse.cli.index_cmd", "index", "Build or refresh a repository's index."),
    "assemble": ("contextfuse.cli.assemble_cmd", "assemble", "Assemble context for a query."),
    "project": ("contextfuse.cli.project_cmd", "project", "Per-project settings."),
    "compact": ("contextfuse.cli.compact_cmd", "compact", "Compact an agent transcript (stdin)."),
    "serve": ("contextfuse.cli.serve_cmd", "serve", "Serve the HTTP API over named projects."),
    "explore": (
        "contextfuse.cli.explore_cmd",
        "explore",
        "See where the budget goes, in the browser.",
    ),
    "mcp": ("contextfuse.cli.mcp_cmd", "mcp", "Serve tools and resources over MCP (stdio)."),
    "plan": ("contextfuse.cli.plan_cmd", "plan", "Plans and decisions: add, decide, close, show."),
    "daemon": (
        "contextfuse.cli.daemon_cmd",
        "daemon",
        "Keep a repository warm for assemble: start, stop, status.",
    ),
}


class LazyGroup(click.Group):
    """A group whose built-in commands are imported on use and plugin commands on demand."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(BUILTIN_COMMANDS) | set(super().list_commands(ctx))
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in BUILTIN_COMMANDS:
            module_name, attr, _ = BUILTIN_COMMANDS[cmd_name]
            command: click.Command = getattr(importlib.import_module(module_name), attr)
            return command
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        return _plugin_commands().get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        # Every bad input ends in one line on standard error and exit status 2, never a
        # traceback: the library's errors and pydantic's validation errors alike.
        from contextfuse.errors import ContextfuseError

        try:
            return super().invoke(ctx)
        except ContextfuseError as exc:
            _fail(str(exc))
        except ValueError as exc:
            if type(exc).__module__.startswith("pydantic"):
                _fail(_one_line_validation(exc))
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Help lists built-ins from the table above without importing them.
        rows = [(name, helptext) for name, (_, _, helptext) in sorted(BUILTIN_COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _fail(message: str) -> None:
    from contextfuse.cli.output import fail

    fail(" ".join(message.split()))


def _one_line_validation(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    parts = []
    for error in errors():
        where = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{where}: {error.get('msg', '')}" if where else str(error.get("msg", "")))
    return "invalid input: " + "; ".join(parts)


def _plugin_commands() -> dict[str, click.Command]:
    from contextfuse.plugin_manager import make_plugin_manager

    commands: dict[str, click.Command] = {}
    pm = make_plugin_manager(on_error="warn")
    for given in pm.collect("contextfuse_cli_commands"):
        command = given.item
        if command.name in BUILTIN_COMMANDS:
            click.echo(
                f"warning: the command {command.name!r} of plugin {given.plugin!r} clashes "
                "with a built-in command and was skipped",
                err=True,
            )
            continue
        commands[str(command.name)] = command
    return commands


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    version=None,
    package_name="contextfuse-core",
    prog_name="contextfuse",
    message="%(prog)s %(version)s",
)
def cli() -> None:
    """contextfuse: assemble the context an LLM agent should read, within a token budget."""
