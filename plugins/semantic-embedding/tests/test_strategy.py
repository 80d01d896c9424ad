"""The semantic-embedding strategy and its index contributor on a repository indexed for real."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from contextfuse import BackendSet, ContextRequest
from contextfuse.kb import index, open_backends
from contextfuse.plugin_manager import make_plugin_manager
from contextfuse.testing import assemble_with, assert_strategy_conforms
from contextfuse_semantic_embedding import SemanticEmbeddingStrategy, SemanticIndexContributor

FILES = {
    "text/slug.py": '''def slugify(title):
    """Turn a title into a lowercase, dash-separated url fragment."""
    return "-".join(title.lower().split())
''',
    "net/retry.py": '''import time


def retry_with_backoff(call, attempts=5):
    """Call again after an exponentially growing sleep when it raises."""
    for attempt in range(attempts):
        try:
            return call()
        except OSError:
            time.sleep(2 ** attempt)
    raise TimeoutError("gave up")
''',
    "db/pool.py": '''class ConnectionPool:
    """Keeps database connections open for reuse."""

    def acquire(self):
        return self._free.pop()
''',
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("semantic")
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture(scope="module")
def stats(repo):
    return index(
        repo, pm=make_plugin_manager(autoload=False), contributors=[SemanticIndexContributor()]
    )


@pytest.fixture(scope="module")
def backends(repo, stats) -> Iterator[BackendSet]:
    with open_backends(repo) as opened:
        yield opened


def assemble(backends, query):
    return list(assemble_with(SemanticEmbeddingStrategy(), backends, query).fragments)


def test_the_strategy_conforms_to_the_protocol():
    assert_strategy_conforms(SemanticEmbeddingStrategy())


def test_indexing_stores_vectors_of_the_shipped_model(backends):
    assert SemanticEmbeddingStrategy().embedder.name in backends.vector.models()


def test_a_paraphrase_finds_the_code_it_describes(backends):
    fragments = assemble(backends, "wait longer and longer between attempts after a failure")
    assert fragments[0].provenance.resource_uri.endswith("net/retry.py")


def test_it_handles_a_request_only_when_vectors_exist(backends):
    strategy = SemanticEmbeddingStrategy()
    assert strategy.can_handle(ContextRequest(query="x"), backends) > 0
    assert strategy.can_handle(ContextRequest(query="x"), BackendSet()) == 0.0


def test_unchanged_nodes_are_not_embedded_again(repo, stats):
    again = index(
        repo, pm=make_plugin_manager(autoload=False), contributors=[SemanticIndexContributor()]
    )
    assert again.contributors["semantic-embedding"] == "ok (embedded 0)"


def test_the_plugin_contributes_the_strategy_and_the_contributor():
    pm = make_plugin_manager()
    assert "semantic-embedding" in {s.strategy.name for s in pm.strategy_sources()}
    contributed = [c.item for c in pm.collect("contextfuse_index_contributors")]
    assert any(c.name == "semantic-embedding" for c in contributed)


class _Plain:
    """The contributor without its vectorizer: it embeds after the parse."""

    def __init__(self) -> None:
        self.inner = SemanticIndexContributor()
        self.name = self.inner.name

    def contribute(self, session):
        return self.inner.contribute(session)


def _vectors(root):
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(root / ".contextfuse" / "index.db")) as conn:
        return conn.execute("SELECT * FROM vectors ORDER BY content_hash").fetchall()


def test_vectors_embedded_while_parsing_equal_those_embedded_after(tmp_path):
    # Two nodes of one content share a vector: the first node's, whose path begins the text.
    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text("def twin():\n    return 'same'\n")
    (tmp_path / "c.py").write_text(FILES["net/retry.py"])
    pm = make_plugin_manager(autoload=False)
    during = index(tmp_path, pm=pm, contributors=[SemanticIndexContributor()], workers=2)
    expected = _vectors(tmp_path)
    after = index(tmp_path, pm=pm, contributors=[_Plain()], rebuild=True, workers=2)
    assert _vectors(tmp_path) == expected
    assert during.contributors == after.contributors == {"semantic-embedding": "ok (embedded 4)"}


def test_only_the_static_embedder_runs_in_the_index_workers():
    class Other:
        name = "other"
        dim = 3

        def embed(self, texts):
            raise AssertionError("not called")

    assert SemanticIndexContributor(Other()).vectorizer() is None
    vectorizer = SemanticIndexContributor().vectorizer()
    assert vectorizer is not None and vectorizer.model == "static-minilm-256"
