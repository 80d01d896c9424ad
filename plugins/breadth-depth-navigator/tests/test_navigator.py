"""The breadth-depth-navigator on a repository the test creates and indexes for real."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from contextfuse import BackendSet, ContextRequest
from contextfuse.kb import index, open_backends
from contextfuse.plugin_manager import make_plugin_manager
from contextfuse.testing import assemble_with, assert_strategy_conforms
from contextfuse_breadth_depth_navigator import BreadthDepthNavigator

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
    return list(assemble_with(BreadthDepthNavigator(), backends, query, budget).fragments)


def test_the_navigator_conforms_to_the_strategy_protocol(backends):
    assert_strategy_conforms(BreadthDepthNavigator(), backends)


def test_the_walk_reaches_code_the_request_does_not_name(backends):
    scores, lists = BreadthDepthNavigator().navigate(
        ContextRequest(query="TooManyRedirects"), backends
    )
    assert any(uri.endswith("#Client.send") for uri in lists["walk"])
    assert any(uri.endswith("#Client.send") for uri in scores)


def test_the_named_symbol_is_the_focus_at_full_source(backends):
    fragments = _assemble(backends, "resolve_location", budget=600)
    assert fragments[0].provenance.resource_uri.endswith("http/redirects.py")
    assert fragments[0].detail_depth == 9 and "def resolve_location" in fragments[0].content


def test_each_fragment_says_why_it_got_its_depth_and_how_it_was_found(backends):
    payload = assemble_with(
        BreadthDepthNavigator(), backends, "how does the client follow redirects", explain=True
    )
    assert payload.explanation is not None
    rows = payload.explanation["fragments"]
    assert all(row["depth_reason"] for row in rows)
    assert all(row["signals"] for row in rows if not row["uko_node"].endswith("#<header>"))


def test_implementation_outranks_tests_for_a_plain_question(backends):
    scores = BreadthDepthNavigator().scores(
        ContextRequest(query="how does the client follow redirects"), backends
    )
    best = max(scores, key=scores.__getitem__)
    assert "tests/" not in best


def test_the_budget_is_never_exceeded(backends):
    for budget in (64, 300, 2000):
        assert sum(f.token_count for f in _assemble(backends, "redirect", budget)) <= budget
