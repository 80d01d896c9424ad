"""The signals toolkit: rank fusion, test and prose detection, the request's intent."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextfuse.backends import Node
from contextfuse.node_scoring import ranking_of
from contextfuse.signals import (
    PROSE_PRIOR,
    RECORD_PRIOR,
    TEST_PRIOR,
    RequestIntent,
    is_record_path,
    is_test_path,
    node_prior,
    reciprocal_rank_fusion,
)


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_api.py",
        "pkg/tests/helpers.py",
        "testing/conftest.py",
        "src/test_client.py",
        "client_test.go",
        "src/__tests__/router.ts",
        "src/router.test.ts",
        "lib/router.spec.js",
        "src/test/java/FooTest.java",
    ],
)
def test_test_code_is_recognised_by_its_path(path: str) -> None:
    assert is_test_path(path)


@pytest.mark.parametrize(
    "path", ["src/_pytest/python.py", "contest/scores.py", "latest.py", "attestation/sign.go"]
)
def test_implementation_code_is_not_taken_for_tests(path: str) -> None:
    assert not is_test_path(path)


def _node(path: str, resource_type: str = "code") -> Node:
    return Node(f"project://p/{path}", path, "file", path, resource_type=resource_type)


def test_tests_rank_below_implementation_unless_the_request_asks_for_tests() -> None:
    plain, asking = (
        RequestIntent.of("how are redirects followed"),
        RequestIntent.of("add unit tests for the redirect handling"),
    )
    assert node_prior(_node("tests/test_redirects.py"), plain) == TEST_PRIOR
    assert node_prior(_node("tests/test_redirects.py"), asking) == 1.0
    assert node_prior(_node("client/redirects.py"), plain) == 1.0


def test_prose_ranks_below_code_unless_the_request_asks_for_documentation() -> None:
    guide = _node("docs/guide.md", "documentation")
    assert node_prior(guide, RequestIntent.of("how does login work")) == PROSE_PRIOR
    assert node_prior(guide, RequestIntent.of("where is login documented")) == 1.0


@pytest.mark.parametrize(
    "path",
    [
        "CHANGELOG.md",
        "History.md",
        "docs/changes.rst",
        "LICENSE",
        "LICENSE.txt",
        "CODE_OF_CONDUCT.md",
        "CONTRIBUTING.rst",
        "AUTHORS",
        "SECURITY.md",
        "changelog/1234.bugfix.rst",
    ],
)
def test_a_projects_records_about_itself_are_recognised_by_their_path(path: str) -> None:
    assert is_record_path(path)


@pytest.mark.parametrize("path", ["docs/guide.md", "README.md", "src/history.py", "news/feed.md"])
def test_guides_and_code_are_not_taken_for_records(path: str) -> None:
    assert not is_record_path(path)


def test_records_rank_below_other_prose_unless_the_request_asks_for_documentation() -> None:
    log = _node("CHANGELOG.md", "documentation")
    assert node_prior(log, RequestIntent.of("how does login work")) == RECORD_PRIOR < PROSE_PRIOR
    assert node_prior(log, RequestIntent.of("what does the changelog say about login")) == 1.0


def test_rank_fusion_counts_agreement_between_lists() -> None:
    fused = reciprocal_rank_fusion({"text": ["a", "b"], "vector": ["b", "c"]})
    assert max(fused, key=fused.__getitem__) == "b"


def test_rank_fusion_weighs_each_list() -> None:
    fused = reciprocal_rank_fusion({"text": ["a"], "mentions": ["b"]}, {"mentions": 2.0})
    assert fused["b"] == pytest.approx(2 * fused["a"])


def test_a_list_with_weight_zero_is_left_out() -> None:
    assert reciprocal_rank_fusion({"text": ["a"]}, {"text": 0.0}) == {}


def test_each_candidate_says_the_rank_each_signal_gave_it() -> None:
    ranked = ranking_of(
        {"project://p/a.py#f": 0.5, "project://p/b.py": 0.9},
        {"text": ["project://p/b.py", "project://p/a.py#f"], "graph": []},
    )
    assert [r.uri for r in ranked] == ["project://p/b.py", "project://p/a.py#f"]
    assert ranked[1].signals == {"text": 2}


def test_a_candidate_listed_twice_in_a_list_has_its_first_rank_there() -> None:
    ranked = ranking_of(
        {"u": 1.0, "v": 0.5},
        {"graph": ["v", "u", "v"], "text": ["u", "w", "u"]},
    )
    assert [(r.uri, list(r.signals.items())) for r in ranked] == [
        ("u", [("graph", 2), ("text", 1)]),
        ("v", [("graph", 1)]),
    ]


_URIS = st.sampled_from([f"project://p/m{i}.py" for i in range(8)])


@given(
    st.dictionaries(_URIS, st.floats(0.0, 1.0)),
    st.dictionaries(st.sampled_from(["text", "vector", "graph"]), st.lists(_URIS, max_size=12)),
)
def test_candidates_carry_every_lists_first_rank_in_the_lists_order(
    scores: dict[str, float], lists: dict[str, list[str]]
) -> None:
    ranked = ranking_of(scores, lists)
    assert [r.uri for r in ranked] == sorted(scores, key=lambda u: (-scores[u], u))
    for candidate in ranked:
        expected = [
            (name, ranking.index(candidate.uri) + 1)
            for name, ranking in lists.items()
            if candidate.uri in ranking
        ]
        assert list(candidate.signals.items()) == expected


@pytest.mark.parametrize(
    "query", ["a failing test shows the bug", "here is a minimal test case", "the test_foo fails"]
)
def test_a_bug_report_that_mentions_a_test_does_not_ask_for_tests(query: str) -> None:
    assert not RequestIntent.of(query).wants_tests
