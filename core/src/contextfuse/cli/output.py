"""Shared output helpers of the command line."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text for people, json for machines.",
)


def emit_json(data: Any) -> None:
    """Print ``data`` as indented JSON on standard output."""
    click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def fail(message: str, code: int = 2) -> None:
    """Print ``error: message`` on standard error and exit with ``code`` (no traceback)."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def require_serve_extra() -> None:
    """Exit with a clear message when the ``serve`` extra (fastapi, uvicorn, mcp) is missing."""
    import importlib.util

    missing = [m for m in ("fastapi", "uvicorn", "mcp") if importlib.util.find_spec(m) is None]
    if missing:
        fail(f"{', '.join(missing)} not installed: pip install 'contextfuse-core[serve]'")
