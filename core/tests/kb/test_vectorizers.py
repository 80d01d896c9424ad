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

    def __init__(self, fail: str = "", batch: int | None = None) -> None:
        self.fail = fail
        self.batch = batch

    def vectors(self, nodes: Sequence[tuple[str, str]]) -> np.ndarray:
        if self.fail == "raise":
            raise RuntimeError("the model is missing")
        if self.fail == "shape":
            return np.ones((len(nodes) + 1, 3), dtype=np.float32)
        return np.stack([letters(uri, text) for uri, text in nodes])


class LetterContributor:
    """Embeds what has no vector yet after the parse, ``batch`` nodes at a time in index
    order, storing the last node of a batch for a content (no batch: the first node); with
    ``vectorizer``, offers its vectorizer to the indexer."""

    name = "letters"

    def __init__(self, *, vectorizer: Letters | None = None, batch: int | None = None) -> None:
        self._vectorizer = vectorizer
        self.batch = batch
        self.embedded_after = 0
        self.vectorized: dict[str, int] = {}

    def vectorizer(self) -> Letters | None:
        return self._vectorizer

    def contribute(self, session: IndexSession) -> dict[str, int]:
        self.vectorized = dict(session.vectorized)
        if session.count_without_vectors("letters", KINDS) == 0:
            return {"embedded": 0}
        nodes = list(session.iter_node_texts(kinds=KINDS))
        size = self.batch or len(nodes) or 1
        for start in range(0, len(nodes), size):
            window = nodes[start : start + size]
            missing = set(session.backends.vector.missing("letters", {u: d for u, d, _ in window}))
            chosen: dict[str, tuple[str, str]] = {}
            for uri, digest, text in window:
                if uri in missing and (self.batch or digest not in chosen):
                    chosen[digest] = (uri, text)
            if chosen:
                matrix = np.stack([letters(u, t) for u, t in chosen.values()])
                uris = [u for u, _ in chosen.values()]
                session.backends.vector.upsert("letters", uris, list(chosen), matrix)
            self.embedded_after += len(chosen)
        return {"embedded": self.embedded_after}


def stored_vectors(repo: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(repo / DEFAULT_INDEX_DIR / DB_NAME)) as conn:
        return conn.execute("SELECT * FROM vectors ORDER BY model, content_hash").fetchall()


@pytest.fixture
def twins(repo: Path) -> Path:
    """The sample repository with files and functions of the same content, whose nodes
    get different vectors (their paths are embedded too)."""
    for name in ("a", "b", "c", "d", "e"):
        (repo / "shop" / f"twin_{name}.py").write_text(
            "def twin():\n    return 'same'\n\n\ndef other():\n    return 'same'\n"
        )
    return repo


@pytest.mark.parametrize(("workers", "batch"), [(1, None), (2, None), (2, 2), (1, 3), (2, 7)])
def test_vectors_computed_while_parsing_equal_those_computed_after(
    twins: Path, build: Callable[..., Any], workers: int, batch: int | None
) -> None:
    after = LetterContributor(batch=batch)
    build(twins, contributors=[after], workers=workers)
    expected = stored_vectors(twins)
    parsing = LetterContributor(vectorizer=Letters(batch=batch), batch=batch)
    build(twins, contributors=[parsing], workers=workers, rebuild=True)
    assert stored_vectors(twins) == expected
    assert after.embedded_after == len(expected)
    assert parsing.embedded_after == 0  # all of them were stored with the files
    assert parsing.vectorized == {"letters": len(expected)}


def test_a_refresh_after_incomplete_vectors_leaves_them_to_the_contributor(
    repo: Path, build: Callable[..., Any]
) -> None:
    build(repo, contributors=[LetterContributor(vectorizer=Letters("raise"))])
    with closing(sqlite3.connect(repo / DEFAULT_INDEX_DIR / DB_NAME)) as conn, conn:
        conn.execute(
            "DELETE FROM vectors WHERE content_hash IN (SELECT content_hash FROM vectors LIMIT 3)"
        )
        conn.execute("DELETE FROM meta WHERE key LIKE 'vectors-complete:%'")
    (repo / "shop" / "util.py").write_text("def changed():\n    return 'new'\n")
    contributor = LetterContributor(vectorizer=Letters())
    build(repo, contributors=[contributor])
    assert contributor.vectorized == {}
    assert contributor.embedded_after == 5  # the three deleted and the two changed nodes


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
