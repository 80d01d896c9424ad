"""Vector and graph arrays: built once per generation of the index, mapped by every opening."""

from __future__ import annotations

import sqlite3
import string
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from contextfuse.backends import BackendSet
from contextfuse.kb import IndexSession, generation
from contextfuse.kb import graph as graph_module
from contextfuse.kb import vector as vector_module
from contextfuse.kb.arrays import ARRAYS_DIR, PackedStrings, pack_strings
from contextfuse.kb.layout import DEFAULT_INDEX_DIR
from contextfuse.kb.store import DB_NAME
from contextfuse.kb.tiers import SQLiteTierStore

U = "project://shop-repo/"


def letters(text: str) -> np.ndarray:
    lowered = text.lower()
    return np.array([lowered.count(c) + 1 for c in string.ascii_lowercase], dtype=np.float32)


class Letters:
    """An index contributor: a vector of letter counts for every node."""

    name = "letters"

    def contribute(self, session: IndexSession) -> None:
        texts = {uri: (digest, text) for uri, digest, text in session.iter_node_texts()}
        vector = session.backends.vector
        missing = vector.missing(self.name, {u: d for u, (d, _) in texts.items()})
        if missing:
            matrix = np.stack([letters(texts[u][1]) for u in missing])
            vector.upsert(self.name, missing, [texts[u][0] for u in missing], matrix)


@pytest.fixture
def built(repo: Path, build: Callable[..., Any]) -> Callable[[], Any]:
    def run() -> Any:
        return build(repo, contributors=[Letters()])

    run()
    return run


def token(repo: Path) -> str | None:
    with closing(sqlite3.connect(repo / DEFAULT_INDEX_DIR / DB_NAME)) as db:
        return generation.current(db)


def array_files(repo: Path) -> list[Path]:
    return sorted((repo / DEFAULT_INDEX_DIR / ARRAYS_DIR).glob("*.arr"))


def query(
    kb: BackendSet, project: str = U
) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    assert kb.vector is not None
    near = kb.vector.search("letters", letters("slugify text lower"), limit=5)
    ranked = kb.graph.personalized_pagerank({project + "shop/util.py#slugify": 1.0}, limit=5)
    return [(h.uri, round(h.score, 6)) for h in near], [(h.uri, round(h.score, 6)) for h in ranked]


def test_every_write_of_content_gives_the_index_a_new_generation(
    repo: Path, built: Callable[[], Any], write: Callable[..., Any]
) -> None:
    first = token(repo)
    built()
    assert token(repo) == first  # nothing changed, nothing written
    write(repo, {"shop/util.py": "def shout(text):\n    return text.upper()\n"})
    built()
    assert token(repo) not in (None, first)


def test_an_assembly_recording_its_files_keeps_the_generation(
    repo: Path, built: Callable[[], Any], opened: Callable[..., BackendSet]
) -> None:
    before = token(repo)
    SQLiteTierStore(opened(repo).nodes.database).touch(["shop/util.py"])
    assert token(repo) == before


def test_a_second_opening_maps_the_arrays_the_first_built(
    repo: Path,
    built: Callable[[], Any],
    opened: Callable[..., BackendSet],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = query(opened(repo))
    assert len(array_files(repo)) == 2  # the vectors of one model, the graph of all kinds

    def never(*_: Any) -> Any:
        raise AssertionError("rebuilt from SQLite although a file of this generation exists")

    monkeypatch.setattr(vector_module, "_code_arrays", never)
    monkeypatch.setattr(graph_module, "_adjacency_arrays", never)
    assert query(opened(repo)) == first


def test_open_backends_see_an_edit_at_once(
    repo: Path,
    built: Callable[[], Any],
    opened: Callable[..., BackendSet],
    write: Callable[..., Any],
) -> None:
    kb = opened(repo)  # held open across the change, as a server holds it
    before = query(kb)
    write(repo, {"shop/util.py": "def slugify(text):\n    return zzz_marker(text)\n"})
    built()
    after = query(kb)
    assert after != before
    assert after == query(opened(repo))
    assert len(array_files(repo)) == 2  # the previous generation's files are gone


def test_open_backends_see_a_files_new_children_at_once(
    repo: Path,
    built: Callable[[], Any],
    opened: Callable[..., BackendSet],
    write: Callable[..., Any],
) -> None:
    kb = opened(repo)  # held open across the change, as a server holds it
    before = [node.name for node in kb.nodes.children(U + "shop/util.py")]
    kb.nodes.children(U + "shop/util.py").clear()  # a caller's list is its own
    write(
        repo, {"shop/util.py": "def slugify(text):\n    return text\n\n\ndef added():\n    pass\n"}
    )
    built()
    after = [node.name for node in kb.nodes.children(U + "shop/util.py")]
    assert before and "added" not in before
    assert after == ["slugify", "added"]
    assert after == [node.name for node in opened(repo).nodes.children(U + "shop/util.py")]


def test_a_damaged_array_file_is_rebuilt(
    repo: Path, built: Callable[[], Any], opened: Callable[..., BackendSet]
) -> None:
    expected = query(opened(repo))
    for path in array_files(repo):
        path.write_bytes(path.read_bytes()[:100])
    assert query(opened(repo)) == expected


def test_packed_strings_read_back_every_string() -> None:
    values = ["project://a/b.py", "", "project://ü/ß#名前", "x" * 1000]
    packed = pack_strings(values)
    strings = PackedStrings(packed["data"], packed["ends"])
    assert list(strings) == values
    assert strings[-1] == values[-1]
    assert len(strings) == len(values)


def test_packed_strings_take_the_strings_at_the_indices_given() -> None:
    values = ["project://a/b.py", "", "project://ü/ß#名前", "x" * 1000, "last"]
    packed = pack_strings(values)
    strings = PackedStrings(packed["data"], packed["ends"])
    wanted = [4, 0, 2, 2, -1, -5, 1, 3]
    assert strings.take(wanted) == [values[i] for i in wanted]
    assert strings.take(np.array([3, 0], dtype=np.int64)) == [values[3], values[0]]
    assert strings.take([]) == []


@pytest.mark.parametrize("index", [5, -6])
def test_packed_strings_refuse_to_take_an_index_out_of_range(index: int) -> None:
    packed = pack_strings(["a", "b", "c", "d", "e"])
    with pytest.raises(IndexError):
        PackedStrings(packed["data"], packed["ends"]).take([0, index])


def test_a_renamed_project_maps_arrays_of_its_new_uris(
    repo: Path,
    built: Callable[[], Any],
    build: Callable[..., Any],
    opened: Callable[..., BackendSet],
) -> None:
    query(opened(repo))  # the arrays of the old name are mapped
    build(repo, contributors=[Letters()], project="web")
    near, ranked = query(opened(repo), "project://web/")
    assert near and ranked
    assert all(uri.startswith("project://web/") for uri, _ in near + ranked)


def test_the_mapped_vectors_are_the_int8_codes_and_their_scales(
    repo: Path, built: Callable[[], Any], opened: Callable[..., BackendSet]
) -> None:
    query(opened(repo))
    (codes,) = [p for p in array_files(repo) if p.name.startswith("codes-")]
    with closing(sqlite3.connect(repo / DEFAULT_INDEX_DIR / DB_NAME)) as db:
        stored = db.execute("SELECT sum(length(codes)) FROM vectors").fetchone()[0]
    # int8 codes take one byte a component: the file holds them, not float32 (4 bytes).
    assert stored < codes.stat().st_size < 2 * stored + 4096


def test_array_files_of_a_set_no_longer_asked_for_go_with_their_generation(
    repo: Path,
    built: Callable[[], Any],
    opened: Callable[..., BackendSet],
    write: Callable[..., Any],
) -> None:
    query(opened(repo))
    orphan = array_files(repo)[0].with_name(
        "vectors-of-a-removed-model-0123456789ab."
        + array_files(repo)[0].name.split(".")[1]
        + ".arr"
    )
    orphan.write_bytes(b"left by an older version")
    write(repo, {"shop/util.py": "def slugify(text):\n    return text.lower()\n"})
    built()
    query(opened(repo))
    assert orphan not in array_files(repo)
    assert len(array_files(repo)) == 2
