"""The test matrix: Python 3.10-3.13, lint, typecheck, and one session per plugin.

The plugin sessions are derived from ``plugins/*/pyproject.toml``: adding a plugin folder
adds its session. With pyenv, make every interpreter visible first, e.g.
``export PYENV_VERSION=3.11.7:3.10.13:3.12.1:3.13.0``.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
PLUGINS = sorted(p.parent.name for p in ROOT.glob("plugins/*/pyproject.toml"))

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.error_on_missing_interpreters = bool(os.environ.get("CI"))
nox.options.sessions = ["lint", "typecheck", "tests"]
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")

TEST_DEPS = ["pytest>=8", "pytest-timeout>=2.3", "hypothesis>=6.100"]


def _install_core(session: nox.Session) -> None:
    """The core (with tree-sitter languages and the service extra) and the test tools."""
    session.install("-e", "./core[treesitter,serve]", *TEST_DEPS)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The whole test suite with every distribution of this checkout installed."""
    session.install("-r", "requirements-dev.txt")
    session.run("python", "-m", "pytest", *(session.posargs or []))


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHONS[-1])
def quick(session: nox.Session) -> None:
    """The quick loop: every test but the slow ones (pip installs, kill -9 of an indexer)."""
    session.install("-r", "requirements-dev.txt")
    session.run("python", "-m", "pytest", "-m", "not slow", *(session.posargs or []))


@nox.session(python="3.11")
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the core and on every plugin."""
    session.install("-r", "requirements-dev.txt")
    session.run("mypy")
    found = [*ROOT.glob("plugins/*/src/*"), *ROOT.glob("templates/*/src/*")]
    packages = sorted(str(p) for p in found if p.is_dir())
    session.run("mypy", "--strict", *packages)


@nox.session(python="3.11")
def docs(session: nox.Session) -> None:
    """The documentation site, built with mkdocs --strict (a broken link fails)."""
    session.install("mkdocs>=1.6")
    session.run("mkdocs", "build", "--strict", "--site-dir", str(ROOT / ".nox" / "site"))


@nox.session(python="3.11")
@nox.parametrize("plugin", PLUGINS)
def plugin(session: nox.Session, plugin: str) -> None:
    """One plugin's own tests, with only the core and that plugin installed."""
    _install_core(session)
    session.install("-e", f"./plugins/{plugin}")
    session.run("python", "-m", "pytest", f"plugins/{plugin}", *session.posargs)
