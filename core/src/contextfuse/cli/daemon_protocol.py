"""What the command line and its daemon share: file names, framing, and who may be answered.

Light on purpose (the standard library only, and few of its modules): the client imports it
before deciding whether to load the engine at all.

A message is a frame: eight bytes of big-endian length, then that many bytes. A request is a
JSON frame then a frame of standard input's bytes; an answer is a JSON frame, and when it
says ``"status": "ok"`` two frames more, the command's standard output and error as bytes.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from typing import Any

__all__ = [
    "LOG_NAME",
    "MAX_FRAME",
    "NO_DAEMON_ENV",
    "PROTOCOL",
    "SERVED_COMMANDS",
    "SOCKET_NAME",
    "STATE_NAME",
    "FrameError",
    "bind_address",
    "connect",
    "control",
    "fingerprint",
    "pid_alive",
    "read_state",
    "recv_frame",
    "remove_stale",
    "send_frame",
]

#: Bumped whenever a request or an answer changes shape.
PROTOCOL = 1
#: The commands a daemon answers.
SERVED_COMMANDS = frozenset({"assemble"})
#: Inside the index folder: the socket, the state file (JSON) and the daemon's log.
SOCKET_NAME = "daemon.sock"
STATE_NAME = "daemon.json"
LOG_NAME = "daemon.log"
#: Set to anything but ``0`` or empty, the command line never asks a daemon.
NO_DAEMON_ENV = "CONTEXTFUSE_NO_DAEMON"
#: The largest frame either side accepts (a query, a payload of two million tokens).
MAX_FRAME = 64 * 1024 * 1024

_HEADER = 8
# Environment variables that change what a command does or reads: the plugins' and the
# configuration's (CONTEXTFUSE_*), git's, where files and caches are, Python's own.
_ENV_PREFIXES = ("CONTEXTFUSE_", "GIT_", "XDG_", "PYTHON", "TIKTOKEN_", "HF_", "SQLITE_")
_ENV_NAMES = ("HOME", "TMPDIR")
# A socket path longer than this (sun_path holds 108 bytes on Linux, 104 on BSD) is reached
# from its folder.
_SHORT_PATH = 100


class FrameError(Exception):
    """The peer sent something that is not a frame, or closed the connection midway."""


def send_frame(sock: socket.socket, data: bytes) -> None:
    """Send ``data`` as one frame."""
    sock.sendall(len(data).to_bytes(_HEADER, "big") + data)


def recv_frame(sock: socket.socket, limit: int = MAX_FRAME) -> bytes:
    """Receive one frame; :class:`FrameError` when it is cut short or over ``limit``."""
    size = int.from_bytes(_recv_exactly(sock, _HEADER), "big")
    if size > limit:
        raise FrameError(f"a frame of {size} bytes is over the limit of {limit}")
    return _recv_exactly(sock, size)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise FrameError("the connection closed in the middle of a frame")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def connect(path: str, timeout: float | None = None) -> socket.socket:
    """A connection to the daemon listening at ``path`` (``OSError`` when none does)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        with _short(path) as address:
            sock.connect(address)
    except BaseException:
        sock.close()
        raise
    return sock


@contextlib.contextmanager
def _short(path: str) -> Any:
    """``path`` as a socket address: itself, or its name from inside its folder when long.

    The process's working folder is changed meanwhile; callers are single-threaded then
    (the client, the daemon before it serves).
    """
    if len(os.fsencode(path)) <= _SHORT_PATH:
        yield path
        return
    here = os.getcwd()
    os.chdir(os.path.dirname(path))
    try:
        yield os.path.basename(path)
    finally:
        os.chdir(here)


def bind_address(path: str) -> Any:
    """The context in which to bind a socket at ``path`` (see :func:`connect`)."""
    return _short(path)


def fingerprint() -> dict[str, str]:
    """What must be equal between a client and the daemon answering it.

    The code's version, the interpreter, where modules are found (and when a package was
    last installed or removed there, which changes the set of plugins), and a digest of the
    environment variables that configure a command (secrets among them never leave the
    process in clear).
    """
    import hashlib

    from contextfuse import __version__

    # sys.path[0] is where the process was started from (the script's folder, or the
    # working folder under -m), not where the code comes from.
    paths = sys.path if getattr(sys.flags, "safe_path", False) else sys.path[1:]
    stamps = []
    for entry in paths:
        try:
            stamps.append(f"{entry}\0{os.stat(entry).st_mtime_ns}")
        except OSError:
            stamps.append(entry)
    environment = sorted(
        f"{k}={v}"
        for k, v in os.environ.items()
        if (k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES) and k != NO_DAEMON_ENV
    )

    def digest(items: list[str]) -> str:
        return hashlib.sha256("\0\0".join(items).encode("utf-8", "surrogateescape")).hexdigest()

    return {
        "version": __version__,
        # The interpreter, whichever link to it was run, and the environment (venv) it is in.
        "python": f"{os.path.realpath(sys.executable)}\0{sys.prefix}\0{sys.version}",
        "paths": digest(stamps),
        "environment": digest(environment),
    }


def read_state(index_dir: str) -> dict[str, Any] | None:
    """The state file of ``index_dir``'s daemon, or None when there is none (or it is not
    a state file)."""
    try:
        with open(os.path.join(index_dir, STATE_NAME), "rb") as handle:
            state = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and isinstance(state.get("pid"), int) else None


def pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists (whoever it is)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive, and not our daemon's
        return True
    return True


def remove_stale(index_dir: str, state: dict[str, Any] | None) -> bool:
    """Remove the socket and the state file of a daemon that no longer answers; True if
    none answers there.

    Only when the socket refuses connections (or is gone), and only what that daemon made:
    the socket if it is still the inode the state names, the state file if it still says
    what it said, so a daemon starting meanwhile keeps its own. A socket that is merely
    slow to answer is left alone.
    """
    sock_path = os.path.join(index_dir, SOCKET_NAME)
    try:
        connect(sock_path, timeout=1.0).close()
    except (ConnectionRefusedError, FileNotFoundError):
        pass
    except OSError:
        return False
    else:
        return False
    inode = state.get("socket_inode") if state else None
    with contextlib.suppress(OSError):
        if inode is None or os.stat(sock_path).st_ino == inode:
            os.unlink(sock_path)
    if state is not None and read_state(index_dir) == state:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(index_dir, STATE_NAME))
    return True


def control(index_dir: str, op: str, timeout: float = 5.0) -> dict[str, Any] | None:
    """Send ``op`` (``status`` or ``stop``) to ``index_dir``'s daemon; its answer, or None
    when no daemon answers there."""
    try:
        with connect(os.path.join(index_dir, SOCKET_NAME), timeout=timeout) as sock:
            send_frame(sock, json.dumps({"protocol": PROTOCOL, "op": op}).encode())
            send_frame(sock, b"")
            answer = json.loads(recv_frame(sock))
    except (OSError, FrameError, ValueError):
        return None
    return answer if isinstance(answer, dict) else None
