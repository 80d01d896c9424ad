"""The arce strategy on a repository the test creates and indexes for real."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from contextfuse import BackendSet, ContextRequest, PlanContext
from contextfuse.kb import index, open_backends
from contextfuse.plugin import uri_path
from contextfuse.plugin_manager import make_plugin_manager
from contextfuse.testing import assemble_with, assert_strategy_conforms
from contextfuse_arce import ArceStrategy, ArceWeights
from contextfuse_arce.strategy import embedded_query
from contextfuse_semantic_embedding.strategy import shared_embedder

FILES = {
    "http/client.py": '''"""The HTTP client."""

from http.redirects import resolve_location


class Client:
    """Sends requests and follows redirects."""

    def send(self, request, follow=True):
        response = self.transport(request)
        hops = 0
        while follow and response.status in (301, 302, 303, 307, 308):
            hops += 1
            if hops > self.max_hops:
                raise TooManyRedirects(hops)
            request = request.copy(url=resolve_location(request.url, response))
            response = self.transport(request)
        return response

    def transport(self, request):
        raise NotImplementedError


class TooManyRedirects(Exception):
    """Raised when a response keeps redirecting."""
''',
    "http/redirects.py": '''"""Where a redirect points."""


def resolve_location(url, response):
    """The absolute URL of the response's Location header, relative to ``url``."""
    location = response.headers["location"]
    if location.startswith("/"):
        return url.origin + location
    return location
''',
    "http/cookies.py": '''"""Cookie jars."""


class CookieJar:
    def set_cookie(self, name, value):
        self.cookies[name] = value
''',
    "tests/test_redirects.py": '''"""Tests of redirect following."""

from http.client import Client


def test_client_follows_redirects():
    client = Client()
    assert client.send("redirect me") is not None


def test_too_many_redirects_raise():
    client = Client()
    client.send("redirect loop")
''',
    "docs/redirects.md": "# Redirects\n\nThe client follows redirects up to a limit.\n",
}


@pytest.fixture(scope="module")
def backends(tmp_path_factory) -> Iterator[BackendSet]:
    repo = tmp_path_factory.mktemp("web")
    for rel, text in FILES.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    pm = make_plugin_manager(autoload=False)
    from contextfuse_semantic_embedding import plugin as semantic

    pm.register_plugin(semantic, "semantic-embedding")
    index(repo, pm=pm)
    with open_backends(repo) as opened:
        yield opened


def _assemble(backends: BackendSet, query: str, budget: int = 2000) -> list:
    return list(assemble_with(ArceStrategy(), backends, query, budget).fragments)


def test_arce_conforms_to_the_strategy_protocol(backends):
    assert_strategy_conforms(ArceStrategy(), backends)


def test_a_plain_question_finds_the_implementation_before_its_tests(backends):
    fragments = _assemble(backends, "how does the client follow redirects")
    full = [uri_path(f.provenance.resource_uri) for f in fragments if f.detail_depth == 9]
    first_test = next((i for i, path in enumerate(full) if path.startswith("tests/")), len(full))
    assert full[0].startswith("http/")
    assert full.index("http/client.py") < first_test


def test_tests_come_first_when_the_request_asks_for_tests(backends):
    scores = ArceStrategy().scores(
        ContextRequest(query="add unit tests for following redirects"), backends
    )
    best = max(scores, key=scores.__getitem__)
    assert "tests/test_redirects.py" in best


def test_graph_neighbours_of_the_best_hits_are_found(backends):
    _, lists = ArceStrategy().signals(ContextRequest(query="TooManyRedirects"), backends)
    assert any(uri.endswith("#Client.send") for uri in lists["graph"])


def test_each_fragment_says_which_signals_found_it_and_why_its_depth(backends):
    payload = assemble_with(
        ArceStrategy(), backends, "how does the client follow redirects", explain=True
    )
    assert payload.explanation is not None
    rows = payload.explanation["fragments"]
    assert all(row["signals"] for row in rows if not row["uko_node"].endswith("#<header>"))
    assert all(row["depth_reason"] for row in rows)


def test_the_budget_is_never_exceeded(backends):
    for budget in (64, 300, 2000):
        assert sum(f.token_count for f in _assemble(backends, "redirect", budget)) <= budget


def test_without_vectors_arce_still_ranks_by_text_and_graph(backends):
    no_vectors = backends.model_copy(update={"vector": None})
    ranked = ArceStrategy().rank(
        ContextRequest(query="resolve_location"), no_vectors, PlanContext()
    )
    assert ranked[0].uri.endswith("#resolve_location")
    assert "vector" not in ranked[0].signals


def test_the_code_list_holds_implementation_code_but_no_tests_or_prose(backends):
    _, lists = ArceStrategy().signals(ContextRequest(query="redirects client"), backends)
    assert any(uri.endswith("#Client.send") for uri in lists["code"])
    assert not any("tests/" in uri or "docs/" in uri for uri in lists["code"])


def test_without_a_code_weight_there_is_no_code_list(backends):
    strategy = ArceStrategy(ArceWeights(code=0.0))
    _, lists = strategy.signals(ContextRequest(query="redirects client"), backends)
    assert "code" not in lists


def test_the_code_list_holds_symbols_of_every_language_not_only_functions(tmp_path):
    (tmp_path / "retry.go").write_text(
        "package retry\n\n"
        "// Backoff says how long to wait between attempts.\n"
        "type Backoff struct {\n\tBase int\n\tJitter int\n}\n",
        encoding="utf-8",
    )
    index(tmp_path, pm=make_plugin_manager(autoload=False))
    with open_backends(tmp_path) as go:
        _, lists = ArceStrategy().signals(ContextRequest(query="backoff jitter"), go)
    assert any(uri.endswith("#Backoff") for uri in lists["code"])


def test_the_code_defining_an_option_the_request_writes_is_a_ranked_list(tmp_path):
    (tmp_path / "cli.py").write_text(
        'def add_options(parser):\n    parser.add_argument("--max-hops", type=int)\n\n\n'
        "def hops(options):\n    return options.max_hops\n",
        encoding="utf-8",
    )
    index(tmp_path, pm=make_plugin_manager(autoload=False))
    with open_backends(tmp_path) as cli:
        request = ContextRequest(query="the `--max-hops` option is ignored")
        _, lists = ArceStrategy().signals(request, cli)
    assert [uri.rsplit("#", 1)[-1] for uri in lists["literals"]] == ["add_options"]


def test_without_a_literals_weight_there_is_no_literals_list(backends):
    request = ContextRequest(query='the client says "raised when a response keeps redirecting"')
    assert "literals" in ArceStrategy().signals(request, backends)[1]
    _, lists = ArceStrategy(ArceWeights(literals=0.0)).signals(request, backends)
    assert "literals" not in lists


def test_the_embedded_query_keeps_the_content_words_of_a_question():
    assert embedded_query("How does the client follow redirects?") == "client follow redirects"


def test_a_request_of_function_words_alone_is_embedded_whole():
    assert embedded_query("what is it?") == "what is it?"


class _RecordingEmbedder:
    """The shared embedder, remembering the texts it was asked to embed."""

    def __init__(self) -> None:
        self.inner = shared_embedder()
        self.name = self.inner.name
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def test_the_vector_signal_embeds_the_question_without_its_function_words(backends):
    embedder = _RecordingEmbedder()
    lists = ArceStrategy(embedder=embedder).rankings(
        ContextRequest(query="how does the client follow redirects"), backends
    )
    assert embedder.texts == ["client follow redirects"]
    assert lists["vector"]
