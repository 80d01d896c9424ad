"""``contextfuse daemon start|stop|status``: a warm assembler the command line reuses.

While a daemon runs for a repository, ``contextfuse assemble`` about it is answered by the
daemon (the same output, without the start-up of the engine and the plugins); see
:mod:`contextfuse.server.daemon` and :mod:`contextfuse.cli.daemon_client`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import click

from contextfuse.cli.daemon_protocol import LOG_NAME, control, pid_alive, read_state, remove_stale
from contextfuse.cli.output import FORMAT_OPTION, emit_json, fail

#: The line a daemon started in the foreground prints once it answers.
READY = "contextfuse daemon ready"
_LOCK_NAME = "daemon.lock"
_STOP_WAIT_S = 35.0  # the daemon finishes the command under way within 30 s

_REPO_OPTION = click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The repository (default: the one the current folder is in).",
)
_INDEX_DIR_OPTION = click.option(
    "--index-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the index lives (default: <repo>/.contextfuse, or [index] dir).",
)


@click.group("daemon")
def daemon() -> None:
    """Keep a repository's assembler warm for `contextfuse assemble` (start, stop, status).

    The daemon listens on a socket inside the index folder that only you can use; while it
    runs, `contextfuse assemble` about that repository is answered by it, with the same
    output. It stops on `contextfuse daemon stop`, SIGTERM, or after --idle-timeout.
    """


@daemon.command("start")
@_REPO_OPTION
@_INDEX_DIR_OPTION
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0),
    default=1800.0,
    show_default=True,
    help="Seconds without a request after which the daemon exits (0: never).",
)
@click.option(
    "--foreground",
    is_flag=True,
    help="Run in this process until stopped, logging on standard error.",
)
@click.option("--log", "log_path", type=click.Path(path_type=Path), default=None, hidden=True)
def start(
    repo: Path | None,
    index_dir: Path | None,
    idle_timeout: float,
    foreground: bool,
    log_path: Path | None,
) -> None:
    """Start a daemon for the repository (indexing it first if needed)."""
    if os.name == "nt":
        fail("the daemon needs Unix domain sockets, which this system does not offer")
    root, directory = _where(repo, index_dir)
    running = control(str(directory), "status")
    if running is not None:
        click.echo(f"a daemon already runs for {root} (pid {running.get('pid')})", err=True)
        return
    remove_stale(str(directory), read_state(str(directory)))
    if foreground:
        _run_foreground(root, index_dir, idle_timeout, log_path)
    else:
        _spawn(root, index_dir, directory, idle_timeout)


@daemon.command("stop")
@_REPO_OPTION
@_INDEX_DIR_OPTION
def stop(repo: Path | None, index_dir: Path | None) -> None:
    """Stop the repository's daemon (the command under way finishes first)."""
    root, directory = _where(repo, index_dir)
    answer = control(str(directory), "stop")
    if answer is None or answer.get("status") != "ok":
        _say_none_runs(root, directory)
        return
    pid = int(answer["pid"])
    deadline = time.monotonic() + _STOP_WAIT_S
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    click.echo(f"stopped the daemon of {root} (pid {pid})", err=True)


@daemon.command("status")
@_REPO_OPTION
@_INDEX_DIR_OPTION
@FORMAT_OPTION
def status(repo: Path | None, index_dir: Path | None, fmt: str) -> None:
    """Say whether a daemon runs for the repository: its pid, socket and uptime.

    Exit status 0 when one runs, 1 when none does.
    """
    root, directory = _where(repo, index_dir)
    answer = control(str(directory), "status")
    if answer is None or answer.get("status") != "ok":
        if fmt == "json":
            emit_json({"running": False, "root": str(root), "index_dir": str(directory)})
            remove_stale(str(directory), read_state(str(directory)))
        else:
            _say_none_runs(root, directory)
        sys.exit(1)
    if fmt == "json":
        emit_json({"running": True, **{k: v for k, v in answer.items() if k != "status"}})
        return
    click.echo(
        f"a daemon runs for {answer['root']}\n"
        f"  pid: {answer['pid']}\n"
        f"  socket: {answer['socket']}\n"
        f"  uptime: {_duration(float(answer['uptime_s']))}\n"
        f"  commands answered: {answer['answered']}\n"
        f"  idle timeout: {_idle(float(answer['idle_timeout_s']))}\n"
        f"  version: {answer['version']}"
    )


def _where(repo: Path | None, index_dir: Path | None) -> tuple[Path, Path]:
    """The repository and its index folder (resolved), as ``assemble`` would find them."""
    from contextfuse.cli.root_choice import current_root
    from contextfuse.config import load_config
    from contextfuse.errors import ContextfuseError
    from contextfuse.server.daemon import index_dir_for

    root = (repo if repo is not None else current_root()).expanduser().resolve()
    if not root.is_dir():
        fail(f"{root}: not a directory")
    try:
        return root, index_dir_for(root, index_dir, load_config(root))
    except ContextfuseError as exc:
        fail(str(exc))
        raise  # unreachable: fail() exits


def _say_none_runs(root: Path, directory: Path) -> None:
    state = read_state(str(directory))
    if remove_stale(str(directory), state) and state is not None:
        click.echo(
            f"no daemon runs for {root} (removed what process {state['pid']} left behind)",
            err=True,
        )
    else:
        click.echo(f"no daemon runs for {root}", err=True)


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def _idle(seconds: float) -> str:
    return "none" if not seconds else f"{seconds:g} s"


def _spawn(root: Path, index_dir: Path | None, directory: Path, idle_timeout: float) -> None:
    """Start the daemon in a new session and wait until it answers (or says why not)."""
    command = [
        sys.executable, "-m", "contextfuse.cli.main", "daemon", "start", "--foreground",
        "--repo", str(root), "--idle-timeout", str(idle_timeout),
        "--log", str(directory / LOG_NAME),
    ]  # fmt: skip
    if index_dir is not None:
        command += ["--index-dir", str(index_dir.resolve())]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the terminal's Ctrl-C and hang-up are not the daemon's
    )
    assert process.stdout is not None
    try:
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith(READY):
                click.echo(f"started a daemon for {root} ({line[len(READY) + 2 :]})", err=True)
                return
            click.echo(line, err=True)
    except KeyboardInterrupt:
        process.terminate()
        process.wait()
        fail("interrupted: the daemon was not started", code=1)
    finally:
        process.stdout.close()
    fail(f"the daemon did not start (exit status {process.wait()})", code=1)


def _run_foreground(
    root: Path, index_dir: Path | None, idle_timeout: float, log_path: Path | None
) -> None:
    import fcntl
    import gc

    from contextfuse.errors import ContextfuseError
    from contextfuse.server.daemon import DaemonServer, WarmIndex

    def log(message: str) -> None:
        # Straight to the file descriptor: sys.stderr is a request's while one is answered.
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}\n"
        os.write(2, line.encode("utf-8", "replace"))

    try:
        warm = WarmIndex(root, index_dir)
        warm.index_dir.mkdir(parents=True, exist_ok=True)
        lock = open(warm.index_dir / _LOCK_NAME, "a+b")  # noqa: SIM115 (held for life)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fail(f"another daemon is starting or running for {root}", code=1)
        warm.warm()
        server = DaemonServer(warm, idle_timeout_s=idle_timeout, log=log)
        server.bind()
    except ContextfuseError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot start the daemon: {exc}")
    click.echo(f"{READY}: pid {os.getpid()}, socket {server.socket_path}", err=True)
    if log_path is not None:
        _log_to(log_path)
    log(f"serving {root} (pid {os.getpid()}, socket {server.socket_path})")
    gc.freeze()  # what start-up built lives as long as the daemon: never scan it again
    why = server.serve_forever()
    log(f"stopped: {why}")
    lock.close()


def _log_to(path: Path) -> None:
    """Send standard output and error to ``path`` (the daemon's log, restarted each start)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for target in (1, 2):
        os.dup2(fd, target)
    os.close(fd)
