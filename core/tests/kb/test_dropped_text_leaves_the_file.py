"""Text that leaves the index leaves the index file: no byte of a dropped file's value stays
behind in freed pages or in the search index's segments."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from contextfuse.kb import IndexStats
from contextfuse.kb.store import Database

#: Not shaped like any secret the detector knows: only leaving the index removes it.
VALUE = "Zq7markerUndetectedValue42"


def index_bytes(root: Path) -> bytes:
    folder = root / ".contextfuse"
    return b"".join(path.read_bytes() for path in sorted(folder.glob("index.db*")))


def traces(root: Path) -> int:
    data = index_bytes(root)
    return data.count(VALUE.encode()) + data.lower().count(VALUE.lower().encode())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    for n in range(30):
        body = "\n".join(f"def step_{n}_{k}(x):\n    return x + {k}\n" for k in range(60))
        (root / f"module{n}.py").write_text(body)
    (root / "notes.txt").write_text(f"the deploy value is {VALUE} for now\n")
    return root


@pytest.mark.parametrize("rebuild", [True, False], ids=["rebuild", "refresh"])
def test_a_dropped_files_value_is_nowhere_in_the_index_file(
    project: Path, build: Callable[..., IndexStats], rebuild: bool
) -> None:
    build(project)
    assert traces(project) > 0  # indexed: its words are in the file
    (project / ".contextfuseignore").write_text("notes.txt\nmodule1*.py\n")
    stats = build(project, rebuild=rebuild)
    assert stats.files == 20  # 19 modules and the ignore file: notes.txt and module1*.py left
    assert traces(project) == 0


def test_the_index_zeroes_what_it_deletes_whatever_the_sqlite_build(tmp_path: Path) -> None:
    db = Database(tmp_path / "t.db")
    assert db.connection().execute("PRAGMA secure_delete").fetchone()[0] == 1
    db.close()
