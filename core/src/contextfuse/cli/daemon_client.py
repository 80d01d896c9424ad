"""The command line's side of ``contextfuse daemon``: ask the daemon, else say nothing.

:func:`answer_through_daemon` runs before the command line imports the engine: it finds the
index folder the command is about from its options alone, and when a daemon listens there,
sends it the command and prints its answer. Whenever the daemon cannot answer (none runs, it
died, it serves another project, its code or environment differ), it returns None and the
command runs in this process as if no daemon existed; a socket and state file that a dead
daemon left are removed on the way.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from contextfuse.cli.daemon_protocol import (
    NO_DAEMON_ENV,
    PROTOCOL,
    SERVED_COMMANDS,
    SOCKET_NAME,
    FrameError,
    connect,
    fingerprint,
    read_state,
    recv_frame,
    remove_stale,
    send_frame,
)

__all__ = ["answer_through_daemon", "daemon_index_dir", "option_value"]

_MARKER = ".contextfuse"  # the folder that marks a project's root (contextfuse.repo_root)
_CONNECT_TIMEOUT_S = 2.0


def answer_through_daemon(argv: Sequence[str]) -> int | None:
    """Have the daemon of the command's index run ``argv``; its exit status, or None when
    the command is to run in this process (standard input is then as it was)."""
    if os.name == "nt" or not argv or argv[0] not in SERVED_COMMANDS:
        return None
    if os.environ.get(NO_DAEMON_ENV, "") not in ("", "0"):
        return None
    args = list(argv[1:])
    options = args[: args.index("--")] if "--" in args else args
    if {"--no-daemon", "--help", "-h"} & set(options):
        return None
    index_dir = daemon_index_dir(args)
    if index_dir is None:
        return None
    path = os.path.join(index_dir, SOCKET_NAME)
    if not os.path.exists(path):
        return None
    stdin = b""
    if "-" in args:  # the query may come from standard input: the daemon reads it from us
        if sys.stdin is None or sys.stdin.isatty():
            return None
        stdin = sys.stdin.buffer.read()
    status = _ask(index_dir, path, list(argv), stdin)
    if status is None and "-" in args:
        sys.stdin = io.TextIOWrapper(
            io.BytesIO(stdin), sys.stdin.encoding, sys.stdin.errors, newline="\n"
        )
    return status


def _ask(index_dir: str, path: str, argv: list[str], stdin: bytes) -> int | None:
    try:
        sock = connect(path, timeout=_CONNECT_TIMEOUT_S)
    except ConnectionRefusedError:  # nobody listens: the daemon died (or the machine rebooted)
        remove_stale(index_dir, read_state(index_dir))
        return None
    except OSError:
        return None
    request = {
        "protocol": PROTOCOL,
        "op": "run",
        "argv": argv,
        "cwd": os.getcwd(),
        "fingerprint": fingerprint(),
        "streams": {
            "stdin": [sys.stdin.encoding, sys.stdin.errors],
            "stdout": [sys.stdout.encoding, sys.stdout.errors],
            "stderr": [sys.stderr.encoding, sys.stderr.errors],
        },
    }
    try:
        with sock:
            sock.settimeout(None)  # a refresh after a large change takes as long as it takes
            send_frame(sock, json.dumps(request).encode())
            send_frame(sock, stdin)
            answer = json.loads(recv_frame(sock))
            if not isinstance(answer, dict) or answer.get("status") != "ok":
                return None
            out, err = recv_frame(sock), recv_frame(sock)
    except (OSError, FrameError, ValueError, AttributeError):
        return None
    status = answer.get("exit")
    if not isinstance(status, int):
        return None
    _write(sys.stderr, err)
    _write(sys.stdout, out)
    return status


def _write(stream: Any, data: bytes) -> None:
    if data:
        stream.flush()
        stream.buffer.write(data)
        stream.buffer.flush()


def option_value(args: Sequence[str], name: str) -> str | None:
    """The last value given to the long option ``name`` (``--name V`` or ``--name=V``)."""
    value = None
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(name + "="):
            value = arg[len(name) + 1 :]
    return value


def daemon_index_dir(args: Sequence[str]) -> str | None:
    """The index folder a command with these arguments uses, as far as the options and the
    configuration files say without the engine; None when that takes more (the command
    then runs in this process, as it would without a daemon)."""
    given = option_value(args, "--index-dir")
    if given is not None:
        return os.path.realpath(os.path.expanduser(given))
    repo = option_value(args, "--repo")
    root = os.path.realpath(repo) if repo is not None else _marked_root(os.getcwd())
    if root is None:
        return None
    return os.path.realpath(os.path.join(root, _configured_dir(root) or _MARKER))


def _marked_root(start: str) -> str | None:
    """The nearest folder from ``start`` up holding a ``.contextfuse`` folder."""
    folder = os.path.realpath(start)
    while True:
        if os.path.isdir(os.path.join(folder, _MARKER)):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _configured_dir(root: str) -> str | None:
    """``[index] dir`` of the project's configuration, else of the user's."""
    explicit = os.environ.get("CONTEXTFUSE_CONFIG")
    if explicit:
        user = explicit
    else:
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
        user = os.path.join(base, "contextfuse", "config.toml")
    for path in (os.path.join(root, _MARKER, "config.toml"), user):
        if os.path.isfile(path):
            value = _toml_index_dir(path)
            if value is not None:
                return value
    return None


def _toml_index_dir(path: str) -> str | None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        with open(path, "rb") as handle:
            index = tomllib.load(handle).get("index")
    except (OSError, ValueError):
        return None
    value = index.get("dir") if isinstance(index, dict) else None
    return value if isinstance(value, str) and value else None
