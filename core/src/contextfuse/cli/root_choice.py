"""The project a command is about when none is named: found from the current folder, and said."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["current_root"]


def current_root(*, quiet: bool = False) -> Path:
    """The project the current folder lies in; unless ``quiet``, a note on standard error
    names it when it is a folder above (see :func:`contextfuse.repo_root.locate_repo_root`)."""
    from contextfuse.repo_root import locate_repo_root, root_notice

    here = Path.cwd()
    located = locate_repo_root(here)
    notice = root_notice(located, here)
    if notice is not None and not quiet:
        click.echo(f"note: {notice}", err=True)
    return located.path
