"""Vectors computed as files are parsed: stored with the files, the same as computed after."""

from __future__ import annotations

import sqlite3
import string
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from contextfuse.kb import IndexSession
from contextfuse.kb.indexer import DEFAULT_INDEX_DIR
from contextfuse.kb.store import DB_NAME
from contextfuse.kb.vectorizers import NodeVectorizer, vectorizers_of

KINDS = ("file", "function", "method", "class")


def letters(uri: str, text: str) -> np.ndarray:
    """A deterministic embedding of a node's path and text: how often each letter occurs."""
    lowered = f"{uri}\n{text}".lower()
    return np.array([lowered.count(c) for c in string.ascii_lowercase], dtype=np.float32)


class Letters:
    """The vectorizer of :class:`LetterContributor` (it runs in the worker processes)."""

    model = "letters"
    kinds = KINDS

    def __init__(self, fail: str = "") -> None:
        self.fail = fail

    def vectors(self, nodes: Sequence[tuple[str, str]]) -> np.ndarray:
        if self.fail == "raise":
            raise RuntimeError("the model is missing")
        if self.fail == "shape":
            return np.ones((len(nodes) + 1, 3), dtype=np.float32)
        return np.stack([letters(uri, text) for uri, text in nodes])


class LetterContributor:
    """Embeds what has no vector yet (the first node of each content), after the parse;
    with ``vectorizer``, offers its vectorizer to the indexer."""

    name = "letters"

    def __init__(self, *, vectorizer: Letters | None = None) -> None:
        self._vectorizer = vectorizer
        self.embedded_after = 0
        self.vectorized: dict[str, int] = {}

    def vectorizer(self) -> Letters | None:
        return self._vectorizer

    def contribute(self, session: IndexSession) -> dict[str, int]:
        self.vectorized = dict(session.vectorized)
        vector = session.backends.vector
        first: dict[str, tuple[str, str]] = {}
        for uri, digest, text in session.iter_node_texts(kinds=KINDS):
            first.setdefault(digest, (uri, text))
        missing = set(vector.missing("letters", {u: d for d, (u, _) in first.items()}))
        todo = [(d, u, t) for d, (u, t) in first.items() if u in missing]
        if todo:
            matrix = np.stack([letters(u, t) for _, u, t in todo])
            vector.upsert("letters", [u for _, u, _ in todo], [d for d, _, _ in todo], matrix)
        self.embedded_after = len(todo)
        return {"embedded": len(todo)}


def stored_vectors(repo: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(repo / DEFAULT_INDEX_DIR / DB_NAME)) as conn:
        return conn.execute("SELECT * FROM vectors ORDER BY model, content_hash").fetchall()


@pytest.fixture
def twins(repo: Path) -> Path:
    """The sample repository with two files of the same content (one content hash)."""
    (repo / "shop" / "twin_a.py").write_text("def twin():\n    return 'same'\n")
    (repo / "shop" / "twin_b.py").write_text("def twin():\n    return 'same'\n")
    return repo


@pytest.mark.parametrize("workers", [1, 2])
def test_vectors_computed_while_parsing_equal_those_computed_after(
    twins: Path, tmp_path: Path, build: Callable[..., Any], workers: int
) -> None:
    after = LetterContributor()
    build(twins, contributors=[after], workers=workers)
    expected = stored_vectors(twins)
    (twins / DEFAULT_INDEX_DIR / DB_NAME).unlink()
    parsing = LetterContributor(vectorizer=Letters())
    build(twins, contributors=[parsing], workers=workers, rebuild=True)
    assert stored_vectors(twins) == expected
    assert after.embedded_after == len(expected)
    assert parsing.embedded_after == 0  # all of them were stored with the files
    assert parsing.vectorized == {"letters": len(expected)}


@pytest.mark.parametrize("fail", ["raise", "shape"])
def test_a_failing_vectorizer_leaves_the_vectors_to_its_contributor(
    repo: Path, build: Callable[..., Any], fail: str
) -> None:
    contributor = LetterContributor(vectorizer=Letters(fail))
    stats = build(repo, contributors=[contributor], workers=2)
    assert stats.contributors == {"letters": f"ok (embedded {contributor.embedded_after})"}
    assert contributor.embedded_after == len(stored_vectors(repo)) > 0
    assert contributor.vectorized == {}


def test_a_contributor_whose_vectorizer_cannot_be_had_offers_none() -> None:
    class Failing:
        name = "failing"

        def vectorizer(self) -> NodeVectorizer:
            raise RuntimeError("no model")

    class Plain:
        name = "plain"

    offered = LetterContributor(vectorizer=Letters())
    assert vectorizers_of([Failing(), Plain(), LetterContributor(), offered]) == [
        offered.vectorizer()
    ]


def test_a_refresh_stores_the_vectors_of_changed_files_only(
    repo: Path, build: Callable[..., Any]
) -> None:
    build(repo, contributors=[LetterContributor(vectorizer=Letters())], workers=2)
    before = stored_vectors(repo)
    (repo / "shop" / "util.py").write_text("def changed():\n    return 'new'\n")
    contributor = LetterContributor(vectorizer=Letters())
    build(repo, contributors=[contributor])
    assert contributor.embedded_after == 0
    assert contributor.vectorized == {"letters": 2}  # the file and its one function
    assert len(set(stored_vectors(repo)) - set(before)) == 2
