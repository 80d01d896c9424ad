"""A copy of a third-party library in a repository is indexed whole, not split into symbols."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from contextfuse.kb import index
from contextfuse.kb.layout import DEFAULT_INDEX_DIR
from contextfuse.kb.store import DB_NAME
from contextfuse.kb.vendored import is_vendored

LIBRARY = "".join(f"function helper{i}(a) {{\n  return a + {i};\n}}\n\n" for i in range(40))


@pytest.mark.parametrize(
    "path",
    [
        "sphinx/themes/basic/static/jquery-3.6.0.js",
        "static/underscore-1.13.1.js",
        "assets/chart.min.js",
        "vendor/github.com/pkg/errors/errors.go",
        "third_party/zlib/setup.py",
        "web/node_modules/left-pad/index.js",
    ],
)
def test_release_named_assets_and_vendoring_folders_are_vendored(path: str) -> None:
    assert is_vendored(path)


@pytest.mark.parametrize(
    "path",
    ["src/core.js", "src/version-2.ts", "packages/zod/src/v4/core/schemas.ts", "docs/vendors.md"],
)
def test_a_projects_own_files_are_not_vendored(path: str) -> None:
    assert not is_vendored(path)


def nodes_of(root: Path, path: str) -> list[tuple[str, str]]:
    with closing(sqlite3.connect(root / DEFAULT_INDEX_DIR / DB_NAME)) as conn:
        return conn.execute(
            "SELECT kind, name FROM nodes WHERE path = ? ORDER BY line_start", (path,)
        ).fetchall()


def test_a_vendored_library_is_one_file_node_while_the_projects_code_is_split(
    tmp_path: Path,
) -> None:
    pytest.importorskip("tree_sitter_javascript")
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "lib-1.2.3.js").write_text(LIBRARY)
    (tmp_path / "app.js").write_text(LIBRARY)
    index(tmp_path)
    assert [kind for kind, _ in nodes_of(tmp_path, "static/lib-1.2.3.js")] == ["file"]
    assert ("function", "helper0") in nodes_of(tmp_path, "app.js")
