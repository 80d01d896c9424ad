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
