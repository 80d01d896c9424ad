"""``contextfuse daemon``: one repository's warm assembler, answering the command line.

The daemon listens on a Unix socket inside the index folder (mode 0600: only its user can
connect, and a peer of another user is refused anyway) and writes a state file next to it;
both are removed when it stops (``contextfuse daemon stop``, SIGTERM, SIGINT, the idle
timeout, or its socket taken away). A request carries the command line of a command the
client would run (``assemble``), its working folder and standard input; the daemon runs the
same command code with the warm assembler in place of a new one
(:mod:`contextfuse.cli.assembler_source`) and returns standard output, standard error and
the exit status, so the client prints exactly what it would have printed.

Never stale: each command does the refresh the command line does (file-system stats prove
in milliseconds that nothing changed); the assembler is reopened when another process
re-indexed or replaced the index, and rebuilt when a configuration file changed. A client
whose code version, interpreter, packages or environment differ is refused and runs the
command itself, and so is one about another project or store; when the daemon's own code
or packages changed on disk, it refuses and stops.

Commands run one at a time: each swaps the process's standard streams and working folder
for the request's, so two must never overlap (their assemblies would not run faster side
by side anyway, one process computing on one core at a time).
"""

from __future__ import annotations

import codecs
import contextlib
import io
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from contextfuse.assembler import ContextAssembler
from contextfuse.cli.assembler_source import WARM, NotServed
from contextfuse.cli.daemon_protocol import (
    PROTOCOL,
    SERVED_COMMANDS,
    SOCKET_NAME,
    STATE_NAME,
    FrameError,
    bind_address,
    fingerprint,
    read_state,
    recv_frame,
    send_frame,
)
from contextfuse.config import ContextfuseConfig, project_config_path, user_config_path
from contextfuse.errors import ContextfuseError
from contextfuse.kb import generation
from contextfuse.kb.layout import DEFAULT_INDEX_DIR
from contextfuse.kb.store import DB_NAME, Database
from contextfuse.server.workers import warm_backends

__all__ = ["DEFAULT_IDLE_TIMEOUT_S", "DaemonServer", "WarmIndex", "code_stamp", "index_dir_for"]

#: A daemon nobody asked anything for this long exits (``--idle-timeout``).
DEFAULT_IDLE_TIMEOUT_S = 1800.0
_MAX_HEADER = 1 << 20  # the JSON part of a request; the query may come in the stdin frame
_READ_TIMEOUT_S = 10.0  # a client sends its request at once; a silent one is dropped
_SEND_TIMEOUT_S = 60.0
_TICK_S = 0.5  # how often the idle timeout, a signal and the socket are looked at
_STOP_GRACE_S = 30.0  # a stopping daemon finishes the command under way within this
_ERROR_HANDLERS = frozenset(
    {"strict", "ignore", "replace", "surrogateescape", "backslashreplace", "xmlcharrefreplace"}
)

_Stamp = tuple[int, int, int] | None


def _stat_stamp(path: Path | str) -> _Stamp:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


class WarmIndex:
    """One repository's assembler, kept open between commands and in step with the disk.

    :param root: the repository (resolved).
    :param index_dir: where its index lives when not where the configuration puts it.
    """

    def __init__(self, root: Path, index_dir: Path | None = None) -> None:
        self.root = root.resolve()
        self._explicit_dir = index_dir.resolve() if index_dir is not None else None
        self._assembler: ContextAssembler | None = None
        self._config_files = (user_config_path(), project_config_path(self.root))
        self._config_stamp: tuple[_Stamp, ...] = ()
        self._seen: tuple[int | None, str | None] = (None, None)
        self.index_dir = self._build().index_dir or self.root / DEFAULT_INDEX_DIR

    def _build(self) -> ContextAssembler:
        """A new assembler on the configuration as the files now say."""
        self.close()
        self._config_stamp = tuple(_stat_stamp(p) for p in self._config_files)
        self._assembler = ContextAssembler(self.root, index_dir=self._explicit_dir)
        return self._assembler

    def warm(self) -> None:
        """Build or refresh the index, open it, map what every request reads, and run one
        assembly that leaves no trace (the strategies' first run loads what they keep)."""
        assembler = self._assembler or self._build()
        assembler.refresh()
        warm_backends(assembler.backends)
        with contextlib.suppress(ContextfuseError):  # a request will say what is wrong
            assembler.assemble("where does the program start", promote=False)
        self.settle()

    def lease(self, root: Path, index_dir: Path | None, store: str | None) -> ContextAssembler:
        """The assembler for a command about ``root``, up to date (see the module's doc).

        :raises NotServed: the command is about another repository, index or store.
        :raises ConfigError: a configuration file now says something invalid (the command
            says so, as it would have without a daemon).
        """
        if store is not None:
            raise NotServed("a command with --store is answered by the command line")
        if Path(root).expanduser().resolve() != self.root:
            raise NotServed(f"this daemon serves {self.root}, not {root}")
        assembler = self._assembler
        if assembler is None or self._config_stamp != tuple(
            _stat_stamp(p) for p in self._config_files
        ):
            assembler = self._build()
        wanted = index_dir_for(self.root, index_dir, assembler.config)
        if wanted != self.index_dir.resolve():
            raise NotServed(f"this daemon serves the index in {self.index_dir}, not {wanted}")
        if self._index_state(assembler) != self._seen:
            assembler.reopen()  # another process re-indexed, or replaced the index
        assembler.registry.clear_notices()
        return assembler

    def settle(self) -> None:
        """Remember the index as the last command left it (call after each command)."""
        if self._assembler is not None:
            self._seen = self._index_state(self._assembler)

    def _index_state(self, assembler: ContextAssembler) -> tuple[int | None, str | None]:
        """The index file's inode and the content generation the open backends see."""
        try:
            database = getattr(assembler.backends.nodes, "database", None)
            key = generation.read_key(database) if isinstance(database, Database) else None
        except ContextfuseError:  # no index (yet): the command builds it
            key = None
        stamp = _stat_stamp(self.index_dir / DB_NAME)
        return (stamp[0] if stamp else None), key

    def close(self) -> None:
        """Close the assembler (its index connections and threads)."""
        assembler, self._assembler = self._assembler, None
        if assembler is not None:
            assembler.close()


def index_dir_for(root: Path, index_dir: Path | None, config: ContextfuseConfig) -> Path:
    """The index folder a command with these options would use (resolved)."""
    if index_dir is not None:
        return Path(index_dir).expanduser().resolve()
    return (root / (config.index.dir or DEFAULT_INDEX_DIR)).resolve()


def code_stamp() -> dict[str, int]:
    """The modification times of the loaded modules that are not installed packages.

    Those are the editable installs' sources (the project's own code under development):
    when one changes, the daemon runs old code. An installed package that changes changes
    its ``site-packages`` folder, which :func:`fingerprint` watches.
    """
    bases = tuple({sys.base_prefix, sys.base_exec_prefix})
    stamp: dict[str, int] = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or path.startswith(bases):
            continue
        if "site-packages" in path or "dist-packages" in path:
            continue
        with contextlib.suppress(OSError):
            stamp[path] = os.stat(path).st_mtime_ns
    return stamp


def _changed_file(stamp: dict[str, int]) -> str | None:
    for path, mtime_ns in stamp.items():
        try:
            if os.stat(path).st_mtime_ns != mtime_ns:
                return path
        except OSError:
            return path
    return None


def _peer_uid(conn: socket.socket) -> int | None:
    """The user id of the process at the other end (None where the system cannot say)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        data = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return None
    return int(struct.unpack("3i", data)[1])


def _request_problem(request: Any) -> str | None:
    """What is wrong with a request's shape, or None."""
    if not isinstance(request, dict):
        return "a request is a JSON object"
    if request.get("protocol") != PROTOCOL:
        return f"protocol {request.get('protocol')!r}; this daemon speaks {PROTOCOL}"
    op = request.get("op")
    if op in ("status", "stop"):
        return None
    if op != "run":
        return f"unknown op {op!r} (run, status, stop)"
    argv = request.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return "argv is a non-empty list of strings"
    if argv[0] not in SERVED_COMMANDS:
        return f"the daemon answers {', '.join(sorted(SERVED_COMMANDS))}, not {argv[0]!r}"
    cwd = request.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        return "cwd is an absolute path"
    if not isinstance(request.get("fingerprint"), dict):
        return "fingerprint is an object"
    streams = request.get("streams")
    if not isinstance(streams, dict):
        return "streams is an object"
    for name in ("stdin", "stdout", "stderr"):
        pair = streams.get(name)
        if not isinstance(pair, list) or [type(p) for p in pair] != [str, str]:
            return f"streams.{name} is [encoding, errors]"
        encoding, errors = pair
        try:
            codecs.lookup(encoding)
        except LookupError:
            return f"streams.{name}: unknown encoding {encoding!r}"
        if errors not in _ERROR_HANDLERS:
            return f"streams.{name}: unknown error handler {errors!r}"
    return None


class _Refused(Exception):
    """The client should run the command itself."""


class DaemonServer:
    """Answers commands about ``warm``'s repository on a Unix socket in its index folder.

    :param idle_timeout_s: exit after this long without a request (0: never).
    :param log: where the daemon says what it does (its log file).
    """

    def __init__(
        self,
        warm: WarmIndex,
        *,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
        log: Callable[[str], None] = print,
    ) -> None:
        self.warm = warm
        self.socket_path = warm.index_dir / SOCKET_NAME
        self.state_path = warm.index_dir / STATE_NAME
        self.idle_timeout_s = idle_timeout_s
        self._log = log
        self._serial = threading.Lock()
        self._stop = threading.Event()
        self._why_stop = ""
        self._activity = threading.Lock()
        self._busy = 0
        self._last_request = time.monotonic()
        self._fingerprint = fingerprint()
        self._code = code_stamp()
        self._listener: socket.socket | None = None
        self._socket_inode: int | None = None
        self.started = time.time()
        self.answered = 0

    # ---- life ---------------------------------------------------------------------------

    def bind(self) -> None:
        """Listen on the socket (0600) and write the state file (atomically)."""
        path = str(self.socket_path)
        self.warm.index_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # the caller checked that no daemon answers there
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        previous = os.umask(0o177)  # never, even for an instant, open to anyone else
        try:
            with bind_address(path) as address:
                listener.bind(address)
        except BaseException:
            listener.close()
            raise
        finally:
            os.umask(previous)
        os.chmod(path, 0o600)
        listener.listen(16)
        listener.settimeout(_TICK_S)
        self._listener = listener
        self._socket_inode = os.stat(path).st_ino
        self._write_state()

    def _write_state(self) -> None:
        state = {
            "pid": os.getpid(),
            "socket": str(self.socket_path),
            "socket_inode": self._socket_inode,
            "root": str(self.warm.root),
            "index_dir": str(self.warm.index_dir),
            "started": self.started,
            "idle_timeout_s": self.idle_timeout_s,
            "protocol": PROTOCOL,
            "version": self._fingerprint["version"],
        }
        tmp = f"{self.state_path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle)
        os.replace(tmp, self.state_path)

    def serve_forever(self) -> str:
        """Answer requests until stopped; returns why it stopped. Cleans up after itself."""
        assert self._listener is not None, "bind() first"
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        # The folder it was started from may be removed; each command enters its own.
        os.chdir(os.sep)
        try:
            while not self._stop.is_set():
                try:
                    conn, _ = self._listener.accept()
                except TimeoutError:
                    self._check_idle()
                    continue
                except OSError:
                    if self._stop.is_set():
                        break
                    raise
                self._begin()
                threading.Thread(target=self._handle, args=(conn,), daemon=True).start()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._shutdown()
        return self._why_stop

    def stop(self, why: str) -> None:
        """Stop answering (the command under way finishes first)."""
        if not self._stop.is_set():
            self._why_stop = why
            self._stop.set()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop(f"signal {signal.Signals(signum).name}")

    def _check_idle(self) -> None:
        stamp = _stat_stamp(self.socket_path)
        if stamp is None or stamp[0] != self._socket_inode:
            self.stop("its socket was removed")
            return
        with self._activity:
            idle_s = 0.0 if self._busy else time.monotonic() - self._last_request
        if self.idle_timeout_s and idle_s >= self.idle_timeout_s:
            self.stop(f"idle for {self.idle_timeout_s:g} s")

    def _begin(self) -> None:
        with self._activity:
            self._busy += 1

    def _end(self) -> None:
        with self._activity:
            self._busy -= 1
            self._last_request = time.monotonic()

    def _shutdown(self) -> None:
        """Remove the socket and the state file (if still ours), then close the index."""
        if self._listener is not None:
            self._listener.close()
        with contextlib.suppress(OSError):
            if os.stat(self.socket_path).st_ino == self._socket_inode:
                os.unlink(self.socket_path)
        state = read_state(str(self.warm.index_dir))
        if state is not None and state.get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                os.unlink(self.state_path)
        if self._serial.acquire(timeout=_STOP_GRACE_S):  # the command under way ends first
            try:
                self.warm.close()
            finally:
                self._serial.release()

    # ---- requests -----------------------------------------------------------------------

    def _handle(self, conn: socket.socket) -> None:
        """Answer one connection; whatever it sends, the daemon goes on."""
        try:
            conn.settimeout(_READ_TIMEOUT_S)
            uid = _peer_uid(conn)
            if uid is not None and uid != os.getuid():
                self._reply(conn, {"status": "error", "error": "not this daemon's user"})
                return
            try:
                header = recv_frame(conn, limit=_MAX_HEADER)
                stdin = recv_frame(conn)
                request = json.loads(header)
            except (FrameError, ValueError, UnicodeDecodeError) as exc:
                self._reply(conn, {"status": "error", "error": f"bad request: {exc}"})
                return
            answer, streams = self._answer(request, stdin)
            conn.settimeout(_SEND_TIMEOUT_S)
            self._reply(conn, answer, *streams)
        except OSError:
            pass  # the client went away: nothing to tell it
        except Exception:  # a bug: said in the log, never the daemon's end
            self._log(f"error answering a request:\n{traceback.format_exc()}")
        finally:
            conn.close()
            self._end()

    @staticmethod
    def _reply(conn: socket.socket, answer: dict[str, Any], *frames: bytes) -> None:
        send_frame(conn, json.dumps(answer).encode())
        for frame in frames:
            send_frame(conn, frame)

    def _answer(self, request: Any, stdin: bytes) -> tuple[dict[str, Any], tuple[bytes, ...]]:
        problem = _request_problem(request)
        if problem is not None:
            return {"status": "error", "error": f"bad request: {problem}"}, ()
        if request["op"] == "status":
            return {"status": "ok", **self.status()}, ()
        if request["op"] == "stop":
            self.stop("asked to stop")
            return {"status": "ok", "pid": os.getpid()}, ()
        try:
            if request["fingerprint"] != self._fingerprint:
                if fingerprint() != self._fingerprint:
                    self.stop("the installed packages changed")
                raise _Refused("the client's code, interpreter or environment differ")
            with self._serial:
                if self._stop.is_set():
                    raise _Refused("the daemon is stopping")
                changed = _changed_file(self._code)
                if changed is not None:
                    self.stop(f"its code changed ({changed})")
                    raise _Refused(self._why_stop)
                status, out, err = self._run(request, stdin)
        except _Refused as exc:
            return {"status": "refused", "reason": str(exc)}, ()
        self.answered += 1
        return {"status": "ok", "exit": status}, (out, err)

    def _run(self, request: dict[str, Any], stdin: bytes) -> tuple[int, bytes, bytes]:
        """Run the command in this process with the request's streams and folder."""
        from contextfuse.cli.main import exit_status, main

        streams = request["streams"]
        out, err = io.BytesIO(), io.BytesIO()
        # As CPython opens the standard streams on POSIX: no newline translation.
        given = tuple(
            io.TextIOWrapper(
                buffer, streams[name][0], streams[name][1], newline="\n", write_through=True
            )
            for name, buffer in (("stdin", io.BytesIO(stdin)), ("stdout", out), ("stderr", err))
        )
        saved = (sys.stdin, sys.stdout, sys.stderr)
        here = os.getcwd()
        token = WARM.set(self.warm)
        try:
            try:
                os.chdir(request["cwd"])
            except OSError as exc:
                raise _Refused(f"cannot enter {request['cwd']}: {exc.strerror}") from exc
            sys.stdin, sys.stdout, sys.stderr = given
            try:
                main(list(request["argv"]))
                status = 0
            except SystemExit as exc:
                status = exit_status(exc.code)
            except NotServed as exc:
                raise _Refused(str(exc)) from exc
            except Exception as exc:  # a bug: the client runs the command and shows it
                self._log(f"error running {request['argv'][:1]}:\n{traceback.format_exc()}")
                raise _Refused(f"the daemon failed: {type(exc).__name__}") from exc
            for stream in given[1:]:
                stream.flush()
            return status, out.getvalue(), err.getvalue()
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
            os.chdir(here)
            WARM.reset(token)
            with contextlib.suppress(Exception):
                self.warm.settle()

    def status(self) -> dict[str, Any]:
        """What ``contextfuse daemon status`` shows."""
        return {
            "pid": os.getpid(),
            "socket": str(self.socket_path),
            "root": str(self.warm.root),
            "index_dir": str(self.warm.index_dir),
            "uptime_s": round(time.time() - self.started, 3),
            "answered": self.answered,
            "idle_timeout_s": self.idle_timeout_s,
            "version": self._fingerprint["version"],
        }
