"""Fixtures of the cross-distribution tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def _pip_install_target(target: Path, *projects: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--target",
            str(target),
            *map(str, projects),
        ],
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="session")
def pip_install_target() -> Callable[..., None]:
    """Really pip-install distributions (no dependencies) into a target directory."""
    return _pip_install_target


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The folder of fixture projects (plugin distributions, sample repositories)."""
    return FIXTURES


@pytest.fixture
def run_with_path() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run a Python snippet or the CLI in a subprocess that sees extra site directories."""

    def run(
        args: list[str], *extra: Path, stdin: str | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([*map(str, extra), env.get("PYTHONPATH", "")])
        return subprocess.run(
            [sys.executable, *args],
            env=env,
            capture_output=True,
            text=True,
            input=stdin,
            cwd=cwd,
            timeout=300,
        )

    return run


#: A small application: a class with a method that raises, a function, a README.
SMALL_APP = {
    "app/server.py": '''"""The HTTP server."""


class Server:
    def start(self, port):
        """Bind ``port`` and serve until stopped."""
        if port < 1024:
            raise PermissionError("privileged port")
        self.port = port
''',
    "app/config.py": '''def load_config(path):
    """Read the TOML configuration at ``path``."""
    return open(path).read()
''',
    "README.md": "# App\n\nA small server.\n",
}


@pytest.fixture(scope="session")
def write_small_app() -> Callable[[Path], Path]:
    """Write the small application into a folder (created) as a git repository; returns it."""

    def write(root: Path) -> Path:
        for rel, text in SMALL_APP.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        return root

    return write
