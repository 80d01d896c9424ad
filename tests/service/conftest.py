"""A real contextfuse HTTP service on loopback, over a small git repository."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from contextfuse.plugin_manager import make_plugin_manager
from contextfuse.server.app import build_asgi
from contextfuse.server.projects import ProjectPool
from contextfuse.server.run import bind, prepare
from contextfuse.server.settings import ServerSettings

FILES = {
    "calc.py": 'def add(a, b):\n    """Add two numbers."""\n    return a + b\n',
    "main.py": "from calc import add\n\n\ndef main():\n    print(add(1, 2))\n",
    "README.md": "# demo\n\nA calculator that adds numbers.\n",
}


def make_repo(root: Path) -> Path:
    """A committed git repository with a few files."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (root / name).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=root, check=True)
    return root


def launched(command: list[str], wait_s: float = 120) -> tuple[subprocess.Popen[str], str | None]:
    """Start ``command`` (a contextfuse command that serves); the process and the URL it
    announces on standard error (None if it stopped or said nothing within ``wait_s``)."""
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        found = re.search(r" on (http://\S+)", line)
        if found:
            return process, found.group(1)
    return process, None


@contextmanager
def running(settings: ServerSettings, pool: ProjectPool | None = None) -> Iterator[str]:
    """Serve ``settings`` with uvicorn in a thread; yields the base URL.

    ``pool``: the projects to serve (already warm) instead of the settings' ones.
    """
    if pool is None:
        pool, providers = prepare(settings, make_plugin_manager(autoload=False))
    else:
        providers = {}
    app = build_asgi(settings, pool, providers)
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@contextmanager
def cli_server(*args: str) -> Iterator[str]:
    """``contextfuse ARGS`` as a real process; yields the first address it announces."""
    process, url = launched([sys.executable, "-m", "contextfuse.cli.main", *args])
    assert process.stderr is not None
    try:
        assert url, "the server did not announce its URL"
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


@pytest.fixture(scope="session")
def served_process() -> Callable[..., Any]:
    """Start a command that serves (``serve``, ``explore``) as a process: a context manager
    yielding the address it announces."""
    return cli_server


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository the module's server serves as project ``demo``."""
    return make_repo(tmp_path_factory.mktemp("service") / "demo")


@pytest.fixture(scope="module")
def service(repo: Path) -> Iterator[str]:
    """The base URL of a server for the module (starting one per test would re-index)."""
    settings = ServerSettings(projects={"demo": repo}, max_body_bytes=64 * 1024)
    with running(settings) as url:
        yield url


@pytest.fixture(scope="session")
def service_token() -> str:
    """The bearer token ``guarded_service`` wants."""
    return "service-token-0123456789"


@pytest.fixture(scope="module")
def guarded_service(repo: Path, service_token: str) -> Iterator[str]:
    """The base URL of a server for the module that wants the bearer token."""
    with running(ServerSettings(projects={"demo": repo}, token=service_token)) as url:
        yield url


@pytest.fixture
def launch() -> Callable[..., tuple[subprocess.Popen[str], str | None]]:
    """Start a ``contextfuse serve`` command line (see :func:`launched`)."""
    return launched


@pytest.fixture
def serve() -> Callable[..., Any]:
    """Start a server with other settings for one test (a context manager)."""
    return running


@pytest.fixture
def new_repo() -> Callable[[Path], Path]:
    """Create a committed repository at a path (for tests that change it)."""
    return make_repo
