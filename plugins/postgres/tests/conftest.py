"""A real PostgreSQL server for the plugin's tests, and a small repository to index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """A throwaway PostgreSQL 18 server with pgvector (the tests fail if it cannot start)."""
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


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A folder with two small Python modules (no git); its name is unique per test."""
    root = tmp_path / f"repo-{tmp_path.name}"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/a.py").write_text("def alpha():\n    return beta()\n")
    (root / "pkg/b.py").write_text("def beta():\n    return 2\n")
    return root
