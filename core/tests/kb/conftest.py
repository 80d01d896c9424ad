"""Repositories built for the knowledge-base tests: real files, real ``git``, real SQLite."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contextfuse.backends import BackendSet
from contextfuse.kb import IndexStats, index, open_backends

#: A fake AWS key: the scanner must never let it into the index.
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "-----END RSA PRIVATE KEY-----\n"
)

MODELS_PY = '''\
"""Models of the shop."""

import os
from .util import slugify

MAX_ITEMS = 10


class Base:
    """The base of every model."""

    def save(self):
        return slugify(self.name)


@register(kind="model")
class ShoppingCart(Base):
    """A cart of items.

    It holds at most MAX_ITEMS items.
    """

    owner: str = ""
    limit = MAX_ITEMS

    def __init__(self, owner: str, *, limit: int = MAX_ITEMS) -> None:
        """Make an empty cart."""
        self.owner = owner
        self.items = []

    def add_item(self, item, count=1):
        self.items.append((item, count))
        self.recount()

    def recount(self):
        return len(self.items)

    def empty(self): return not self.items
'''

UTIL_PY = '''\
def slugify(text):
    # lower case, dashes
    return text.lower().replace(" ", "-")


def unused_helper_function(value):
    """Return the value."""
    return value
'''

README_MD = """\
# Shop

The shop sells things.

## Setup

Install it.

```
# not a heading
```

## Setup

Again.
"""

GUIDE_RST = """\
=====
Guide
=====

How to use the shop.

Carts
=====

Carts hold items.

Adding
------

Call ``add_item``.
"""

APP_TS = """\
import { helper } from "./helper";

/** The app. */
export class App {
  private name = "app";

  /** Run the app. */
  run(times: number): number {
    return helper(times);
  }
}

export function start(): App {
  return new App();
}
"""

HELPER_TS = """\
export function helper(n: number): number {
  return n * 2;
}
"""


def run_git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity; returns its output."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada Tester",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada Tester",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo.parent),
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    """Write files (text or bytes) under ``root``, creating folders."""
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)


def commit_all(repo: Path, message: str) -> None:
    """Stage everything and commit."""
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", message)


def sample_files() -> dict[str, str | bytes]:
    """The sample repository's files (see :func:`make_repo`)."""
    return {
        "shop/__init__.py": '"""The shop package."""\n',
        "shop/models.py": MODELS_PY,
        "shop/util.py": UTIL_PY,
        "shop/broken.py": "def oops(:\n    pass\n",
        "README.md": README_MD,
        "docs/guide.rst": GUIDE_RST,
        "web/app.ts": APP_TS,
        "web/helper.ts": HELPER_TS,
        ".gitignore": "build/\n*.log\n",
        "build/generated.py": "GENERATED = True\n",
        "debug.log": "a log line\n",
        ".env": f"AWS_ACCESS_KEY_ID={AWS_KEY}\n",
        "deploy/id_rsa": PRIVATE_KEY,
        "settings.py": f'AWS_KEY = "{AWS_KEY}"\nDEBUG = True\n',
        "notes/key.txt": "before\n" + PRIVATE_KEY + "after\n",
        "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
        "static/app.min.js": "var a=1;" * 400 + "\n",
    }


def make_repo(root: Path, *, with_git: bool = True) -> Path:
    """A small repository with code, docs, secrets, a binary, an ignored folder and a link.

    History (with git): an initial commit, a change of ``shop/util.py`` together with
    ``shop/models.py``, a rename and a deletion.
    """
    root.mkdir(parents=True, exist_ok=True)
    outside = root.parent / f"{root.name}-outside.txt"
    outside.write_text("outside the repository\n")
    write_files(root, sample_files())
    write_files(root, {"old_name.py": "def moved():\n    return 1\n", "gone.py": "X = 1\n"})
    (root / "escape.txt").symlink_to(outside)
    if not with_git:
        os.remove(root / "old_name.py")
        os.remove(root / "gone.py")
        return root
    run_git(root, "init", "-q", "-b", "main")
    commit_all(root, "Initial commit")
    write_files(
        root, {"shop/util.py": UTIL_PY + "\n\ndef titled(text):\n    return text.title()\n"}
    )
    write_files(root, {"shop/models.py": MODELS_PY + "\n\nDEFAULT_OWNER = 'nobody'\n"})
    commit_all(root, "Add titled helper")
    run_git(root, "mv", "old_name.py", "new_name.py")
    commit_all(root, "Rename old_name")
    run_git(root, "rm", "-q", "gone.py")
    commit_all(root, "Remove gone.py")
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fresh sample repository with git history (see :func:`make_repo`)."""
    return make_repo(tmp_path / "shop-repo")


@pytest.fixture
def build() -> Callable[..., IndexStats]:
    """Index a repository with no plugins (contributors are passed explicitly)."""

    def run(path: Path, **options: Any) -> IndexStats:
        options.setdefault("contributors", [])
        return index(path, **options)

    return run


@pytest.fixture
def opened() -> Iterator[Callable[..., BackendSet]]:
    """Open backends of an index; every set opened is closed after the test."""
    sets: list[BackendSet] = []

    def open_(path: Path, **options: Any) -> BackendSet:
        backends = open_backends(path, **options)
        sets.append(backends)
        return backends

    yield open_
    for backends in sets:
        backends.nodes.close()


@pytest.fixture(scope="session")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, IndexStats]]:
    """The sample repository indexed once, for tests that only read."""
    root = make_repo(tmp_path_factory.mktemp("shared") / "shop-repo")
    yield root, index(root, contributors=[])


@pytest.fixture
def kb(indexed: tuple[Path, IndexStats]) -> Iterator[BackendSet]:
    """Backends of the shared sample index."""
    backends = open_backends(indexed[0])
    yield backends
    backends.nodes.close()


@pytest.fixture
def git() -> Callable[..., str]:
    """``git(repo, *args)``: run git with a fixed identity."""
    return run_git


@pytest.fixture
def commit() -> Callable[[Path, str], None]:
    """``commit(repo, message)``: stage everything and commit."""
    return commit_all


@pytest.fixture
def write() -> Callable[[Path, dict[str, str | bytes]], None]:
    """``write(root, {path: content})``: create or overwrite files."""
    return write_files


@pytest.fixture
def new_repo(tmp_path: Path) -> Callable[..., Path]:
    """``new_repo(name, with_git=True)``: another sample repository under ``tmp_path``."""

    def make(name: str = "shop-repo", *, with_git: bool = True) -> Path:
        return make_repo(tmp_path / name, with_git=with_git)

    return make


@pytest.fixture
def linked(
    new_repo: Callable[..., Path],
    build: Callable[..., IndexStats],
    opened: Callable[..., BackendSet],
) -> Callable[[str, dict[str, str]], Callable[..., set[str]]]:
    """``linked(name, files)`` indexes a repository of ``files`` (no git) and returns
    ``calls(uri)``: the qualified names of the symbols the node ``uri`` has calls edges to
    (``path#qualname`` with ``paths=True``)."""

    def make(name: str, files: dict[str, str]) -> Callable[..., set[str]]:
        root = new_repo(name, with_git=False)
        write_files(root, dict(files))
        build(root)
        kb = opened(root)
        prefix = f"project://{name}/"

        def calls(uri: str, paths: bool = False) -> set[str]:
            edges = kb.graph.neighbors(uri, ("calls",), "out")
            if paths:
                return {e.target.removeprefix(prefix) for e in edges}
            return {e.target.split("#", 1)[1] for e in edges}

        return calls

    return make
