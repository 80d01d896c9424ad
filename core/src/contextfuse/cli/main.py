"""Entry point of the ``contextfuse`` command.

Start-up must stay instant (``contextfuse --help``): subcommands live in their own modules
and are imported only when invoked, and plugin commands are collected only when the
command asked for is not a built-in one. This module imports neither click nor the engine:
a command that a running daemon answers (``contextfuse daemon``) needs neither.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from typing import Any

#: What ``contextfuse.cli.group`` defines, importable from here as before.
_GROUP_NAMES = frozenset({"BUILTIN_COMMANDS", "LazyGroup", "cli"})


def __getattr__(name: str) -> Any:
    if name in _GROUP_NAMES:
        from contextfuse.cli import group

        return getattr(group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> Any:
    """Run the command line (the ``contextfuse`` console script)."""
    # A command creates many objects and few cycles, then exits: with the default
    # thresholds the collector ran 140 times in one assembly (50 ms, a tenth of it).
    gc.set_threshold(100_000, 50, 100)
    from contextfuse.cli.group import cli

    return cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="contextfuse")


def console() -> None:
    """The ``contextfuse`` console script: run a command, then leave at once.

    Tearing the interpreter down (a last garbage collection over every object, modules
    freed one by one, threads joined) took 0.1 s after each assembly, a fifth of the command.
    A command has closed its index and written its output by now: the output is flushed and
    the process ends with the command's status, as mypy does.
    """
    status = _through_daemon(sys.argv[1:])
    if status is None:
        try:
            main()
            status = 0
        except SystemExit as exc:
            status = exit_status(exc.code)
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # the reader went away, or stdout is closed
        status = status or 1
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(status)


def _through_daemon(argv: list[str]) -> int | None:
    """The exit status of ``argv`` answered by a running daemon, or None to run it here."""
    from contextfuse.cli.daemon_client import answer_through_daemon

    try:
        return answer_through_daemon(argv)
    except KeyboardInterrupt:
        print("\nAborted!", file=sys.stderr)  # what click says when interrupted
        return 1


def exit_status(code: object) -> int:
    """``sys.exit``'s argument as an exit status (a message is printed and counts as 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    console()
