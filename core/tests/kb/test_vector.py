"""Vectors from index contributors: cached by content hash, exact cosine search."""

from __future__ import annotations

import sqlite3
import string
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pluggy
import pytest

from contextfuse import hookspecs
from contextfuse.errors import KnowledgeBaseError
from contextfuse.hookspecs import hookimpl
from contextfuse.kb import IndexSession, open_backends
from contextfuse.kb.indexer import DEFAULT_INDEX_DIR
from contextfuse.kb.store import DB_NAME

U = "project://shop-repo/"


def letters(text: str) -> np.ndarray:
    """A tiny deterministic embedding: how often each letter occurs."""
    lowered = text.lower()
    return np.array([lowered.count(c) for c in string.ascii_lowercase], dtype=np.float32)


class LetterEmbedder:
    """An index contributor that embeds every code node not embedded yet."""

    name = "letters"

    def __init__(self) -> None:
        self.sessions: list[IndexSession] = []
        self.embedded: list[str] = []
        self.methods_at_4: dict[str, tuple[str, str]] = {}
        self.texts: dict[str, tuple[str, str]] = {}

    def contribute(self, session: IndexSession) -> dict[str, int]:
        self.sessions.append(session)
        texts = {uri: (digest, text) for uri, digest, text in session.iter_node_texts()}
        self.texts = texts
        self.methods_at_4 = {
            uri: (digest, text)
            for uri, digest, text in session.iter_node_texts(depth=4, kinds=["method"])
        }
        vector = session.backends.vector
        missing = vector.missing(self.name, {u: d for u, (d, _) in texts.items()})
        if missing:
            matrix = np.stack([letters(texts[u][1]) for u in missing])
            vector.upsert(self.name, missing, [texts[u][0] for u in missing], matrix)
        self.embedded.extend(missing)
        session.progress("embedding", len(missing), len(missing))
        return {"embedded": len(missing)}


class Broken:
    name = "broken"

    def contribute(self, session: IndexSession) -> None:
        session.backends.vector.upsert(
            "broken", [U + "README.md"], ["x"], np.ones((1, 3), dtype=np.float32)
        )
        raise RuntimeError("the model is missing")


def test_an_index_without_vectors_has_no_vector_backend(kb: Any) -> None:
    assert kb.vector is None


def test_a_contributor_gets_the_session_after_the_nodes_are_written(
    repo: Path, build: Callable[..., Any]
) -> None:
    embedder = LetterEmbedder()
    stats = build(repo, contributors=[embedder])
    (session,) = embedder.sessions
    assert session.project == "shop-repo"
    assert session.root == repo.resolve()
    assert len(session.changed_uris) == stats.nodes
    assert session.removed_uris == frozenset()
    assert stats.contributors == {"letters": f"ok (embedded {stats.nodes})"}


def test_node_texts_come_with_their_content_hash(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    embedder = LetterEmbedder()
    stats = build(repo, contributors=[embedder])
    kb = opened(repo)
    assert len(embedder.texts) == stats.nodes
    methods = embedder.methods_at_4
    recount = U + "shop/models.py#ShoppingCart.recount"
    assert methods[recount][1] == "    def recount(self):\n        ..."
    assert all(kb.nodes.get_nodes([u])[u].kind == "method" for u in methods)
    hashes = kb.nodes.content_hashes(list(embedder.texts))
    assert hashes == {u: digest for u, (digest, _) in embedder.texts.items()}
    full = kb.nodes.get_renderings([recount], [9])[recount][9].content
    assert embedder.texts[recount][1] == full


def test_vectors_are_searched_by_cosine_similarity(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    build(repo, contributors=[LetterEmbedder()])
    kb = opened(repo)
    assert kb.vector.models() == ["letters"]
    target = U + "shop/util.py#slugify"
    text = kb.nodes.get_renderings([target], [9])[target][9].content
    hits = kb.vector.search("letters", letters(text) * 7.0, limit=3)  # scale does not matter
    assert hits[0].uri == target
    assert hits[0].score == pytest.approx(1.0, abs=1e-3)  # rescored from float16
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_unchanged_nodes_are_never_embedded_again(
    repo: Path, build: Callable[..., Any], write: Callable[..., Any]
) -> None:
    build(repo, contributors=[LetterEmbedder()])
    write(repo, {"shop/util.py": "def shout(text):\n    return text.upper()\n"})
    embedder = LetterEmbedder()
    stats = build(repo, contributors=[embedder])
    assert sorted(embedder.embedded) == [U + "shop/util.py", U + "shop/util.py#shout"]
    assert stats.contributors["letters"] == "ok (embedded 2)"
    assert U + "shop/util.py#slugify" in embedder.sessions[0].removed_uris


def test_a_failing_contributor_is_reported_and_the_index_stays_usable(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    embedder = LetterEmbedder()
    stats = build(repo, contributors=[Broken(), embedder])
    assert stats.contributors["broken"] == "failed: RuntimeError: the model is missing"
    assert stats.contributors["letters"].startswith("ok")
    assert any("'broken' failed" in note for note in stats.notes)
    kb = opened(repo)
    assert kb.text.search("cart")
    assert kb.vector.models() == ["broken", "letters"]  # what it stored before failing stays


def test_upsert_rejects_mismatched_lengths(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    build(repo, contributors=[LetterEmbedder()])
    with pytest.raises(ValueError, match="one vector per node"):
        opened(repo).vector.upsert("letters", ["a", "b"], ["h"], np.ones((2, 26), np.float32))


def test_contributors_come_from_the_plugin_manager(repo: Path, build: Callable[..., Any]) -> None:
    embedder = LetterEmbedder()

    class Plugin:
        @hookimpl
        def contextfuse_index_contributors(self) -> list[Any]:
            return [embedder]

    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.register(Plugin())
    build(repo, pm=pm, contributors=None)
    assert len(embedder.sessions) == 1


class CountingEmbedder(LetterEmbedder):
    """Embeds only when the session's one-query check says vectors are missing."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.missing_counts: list[int] = []

    def contribute(self, session: IndexSession) -> dict[str, int]:
        self.missing_counts.append(session.count_without_vectors(self.name))
        if self.fail:
            raise RuntimeError("interrupted")
        if not self.missing_counts[-1]:
            return {"embedded": 0}
        return super().contribute(session)


def test_a_refresh_after_a_failed_embedding_still_finds_the_missing_vectors(
    repo: Path, build: Callable[..., Any]
) -> None:
    build(repo, contributors=[CountingEmbedder(fail=True)])
    embedder = CountingEmbedder()
    stats = build(repo, contributors=[embedder])
    assert embedder.missing_counts[0] == stats.nodes
    assert stats.contributors["letters"] == f"ok (embedded {stats.nodes})"


def test_a_change_after_a_complete_embedding_is_embedded_at_the_next_refresh(
    repo: Path, build: Callable[..., Any], write: Callable[..., Any]
) -> None:
    build(repo, contributors=[CountingEmbedder()])
    build(repo, contributors=[CountingEmbedder()])  # nothing changed: the check is remembered
    write(repo, {"shop/util.py": "def shout(text):\n    return text.upper()\n"})
    embedder = CountingEmbedder()
    stats = build(repo, contributors=[embedder])
    assert embedder.missing_counts == [2]
    assert stats.contributors["letters"] == "ok (embedded 2)"


def _marks(repo: Path) -> list[str]:
    with closing(sqlite3.connect(repo / DEFAULT_INDEX_DIR / DB_NAME)) as conn:
        rows = conn.execute("SELECT key FROM meta WHERE key LIKE 'vectors-complete:%'")
        return [key for (key,) in rows]


def test_a_complete_embedding_is_remembered_until_the_next_change(
    repo: Path, build: Callable[..., Any], write: Callable[..., Any]
) -> None:
    build(repo, contributors=[CountingEmbedder()])
    assert _marks(repo) == ["vectors-complete:letters:"]
    write(repo, {"shop/util.py": "def shout(text):\n    return text.upper()\n"})
    build(repo, contributors=[CountingEmbedder(fail=True)])
    assert _marks(repo) == []


class SpikyEmbedder:
    """Vectors with one large component and small noise: int8 codes alone score them coarsely."""

    name = "spiky"

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}

    def contribute(self, session: IndexSession) -> None:
        rng = np.random.default_rng(7)
        items = [(uri, digest) for uri, digest, _ in session.iter_node_texts()]
        matrix = rng.normal(0.0, 0.05, (len(items), 256)).astype(np.float32)
        matrix[:, 0] = 1.0
        session.backends.vector.upsert(
            self.name, [u for u, _ in items], [d for _, d in items], matrix
        )
        unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        self.vectors = {uri: row for (uri, _), row in zip(items, unit, strict=True)}


def test_search_scores_and_order_are_the_float32_cosines(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    embedder = SpikyEmbedder()
    build(repo, contributors=[embedder])
    query = np.random.default_rng(8).normal(0.0, 1.0, 256).astype(np.float32)
    query /= np.linalg.norm(query)
    exact = {uri: float(row @ query) for uri, row in embedder.vectors.items()}
    hits = opened(repo).vector.search("spiky", query, limit=5)
    assert [h.uri for h in hits] == sorted(exact, key=lambda u: -exact[u])[:5]
    assert all(h.score == pytest.approx(exact[h.uri], abs=1e-3) for h in hits)


def _exact_best(vectors: dict[str, np.ndarray], query: np.ndarray, count: int) -> list[str]:
    exact = {uri: float(row @ query) for uri, row in vectors.items()}
    return sorted(exact, key=lambda u: -exact[u])[:count]


def test_a_repeated_search_finds_what_the_first_found(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    build(repo, contributors=[SpikyEmbedder()])
    vector = opened(repo).vector
    query = np.random.default_rng(8).normal(0.0, 1.0, 256).astype(np.float32)
    first = vector.search("spiky", query, limit=5)
    assert vector.search("spiky", query, limit=5) == first
    assert vector.search("spiky", query, limit=3) == first[:3]


def test_vectors_too_many_to_keep_are_read_for_each_search_with_the_same_result(
    repo: Path,
    build: Callable[..., Any],
    opened: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from contextfuse.kb import vector as vector_module

    build(repo, contributors=[SpikyEmbedder()])
    query = np.random.default_rng(8).normal(0.0, 1.0, 256).astype(np.float32)
    kept = opened(repo).vector.search("spiky", query, limit=5)
    monkeypatch.setattr(vector_module, "_HALVES_KEPT", 0)
    unkept = opened(repo).vector
    assert unkept._codes("spiky").halves is None
    assert unkept.search("spiky", query, limit=5) == kept
    assert unkept.search("spiky", query, limit=5) == kept


def test_a_search_rescores_with_vectors_written_after_the_last_search(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    build(repo, contributors=[SpikyEmbedder()])
    reader = opened(repo).vector
    query = np.random.default_rng(8).normal(0.0, 1.0, 256).astype(np.float32)
    query /= np.linalg.norm(query)
    reader.search("spiky", query, limit=5)  # keeps the float16 vectors it read
    writer = opened(repo).vector  # another connection, as another process would write
    stored = writer._codes("spiky")
    uris, hashes = list(stored.uris), list(stored.hashes)
    fresh = np.random.default_rng(9).normal(0.0, 1.0, (len(uris), 256)).astype(np.float32)
    writer.upsert("spiky", uris, hashes, fresh)
    unit = dict(zip(hashes, fresh / np.linalg.norm(fresh, axis=1, keepdims=True), strict=True))
    hits = reader.search("spiky", query, limit=5)
    expected = _exact_best({u: unit[h] for u, h in zip(uris, hashes, strict=True)}, query, 5)
    assert [h.uri for h in hits] == expected


def test_vectors_are_stored_as_int8_codes_and_float16(
    repo: Path, build: Callable[..., Any]
) -> None:
    build(repo, contributors=[SpikyEmbedder()])
    with closing(sqlite3.connect(repo / DEFAULT_INDEX_DIR / DB_NAME)) as conn:
        sizes = set(conn.execute("SELECT length(codes), length(vector) FROM vectors"))
    assert sizes == {(256, 512)}


def test_an_index_with_float32_vectors_is_rebuilt_with_a_note(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    build(repo, contributors=[LetterEmbedder()])
    with closing(sqlite3.connect(repo / DEFAULT_INDEX_DIR / DB_NAME)) as conn:
        # The layout of schema 3: one float32 vector per row.
        conn.execute("DROP TABLE vectors")
        conn.execute(
            "CREATE TABLE vectors (model TEXT NOT NULL, content_hash TEXT NOT NULL, vector BLOB "
            "NOT NULL, PRIMARY KEY (model, content_hash)) WITHOUT ROWID"
        )
        conn.execute("INSERT INTO vectors VALUES ('letters', 'h', ?)", (bytes(104),))
        conn.execute("PRAGMA user_version = 3")
        conn.commit()
    with pytest.raises(KnowledgeBaseError, match="another version of contextfuse"):
        open_backends(repo)
    stats = build(repo, contributors=[LetterEmbedder()])
    assert stats.rebuilt
    assert any("built by another version and was rebuilt" in note for note in stats.notes)
    assert stats.contributors["letters"] == f"ok (embedded {stats.nodes})"
    assert opened(repo).vector.search("letters", letters("cart"), limit=1)


def test_a_scan_scores_every_row_of_every_block_as_its_codes_times_the_query() -> None:
    from contextfuse.kb import vector

    rng = np.random.default_rng(3)
    rows = 2 * vector._SCAN_BLOCK + 5  # two full blocks and a short one
    codes = rng.integers(-127, 128, (rows, 64)).astype(np.int8)
    scales = rng.random(rows).astype(np.float32)
    query = rng.normal(0.0, 1.0, 64).astype(np.float32)
    expected = (codes.astype(np.float64) @ query.astype(np.float64)) * scales
    assert np.allclose(vector._scan(codes, scales, query), expected, rtol=1e-5, atol=1e-3)


def _stored_hashes(repo: Path) -> set[str]:
    with closing(sqlite3.connect(repo / DEFAULT_INDEX_DIR / DB_NAME)) as conn:
        return {row[0] for row in conn.execute("SELECT content_hash FROM vectors")}


def test_batched_upserts_are_written_when_the_batch_fills(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    from contextfuse.kb.vector import SQLiteVectorBackend

    build(repo)
    vectors = SQLiteVectorBackend(opened(repo).nodes.database, write_batch=3)
    rows = np.eye(4, 26, dtype=np.float32)
    vectors.upsert("letters", ["u1", "u2"], ["h1", "h2"], rows[:2])
    assert _stored_hashes(repo) == set()
    assert vectors.missing("letters", {"u1": "h1", "u3": "h3"}) == ["u3"]  # kept counts
    vectors.upsert("letters", ["u3"], ["h3"], rows[2:3])
    assert _stored_hashes(repo) == {"h1", "h2", "h3"}


def test_a_search_writes_the_batched_upserts_first(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    from contextfuse.kb.vector import SQLiteVectorBackend

    build(repo)
    vectors = SQLiteVectorBackend(opened(repo).nodes.database, write_batch=100)
    vectors.upsert("letters", ["u1"], ["h1"], np.eye(1, 26, dtype=np.float32))
    # No node has that hash, so nothing is found: the point is what was written.
    vectors.search("letters", np.eye(1, 26, dtype=np.float32)[0])
    assert _stored_hashes(repo) == {"h1"}


class _CountsAfterUpserting(LetterEmbedder):
    """Embeds, then asks the session how many nodes still lack a vector."""

    left: int = -1

    def contribute(self, session: IndexSession) -> dict[str, int]:
        done = super().contribute(session)
        self.left = session.count_without_vectors(self.name)
        return done


def test_a_contributor_counting_after_its_upserts_sees_them_stored(
    repo: Path, build: Callable[..., Any]
) -> None:
    embedder = _CountsAfterUpserting()
    build(repo, contributors=[embedder])
    assert embedder.embedded and embedder.left == 0
