"""Regular-expression search: RE2 patterns, linear in the text, matches given to nodes."""

from __future__ import annotations

import re

import pytest

from contextfuse.errors import InvalidPatternError
from contextfuse.kb.regex_search import (
    MAX_PATTERN_LENGTH,
    NodeSpan,
    compile_pattern,
    matching_lines,
    rank_matches,
)

TEXT = (
    "class App:\n    def dispatch_request(self):\n        pass\n\ndef DISPATCH_all():\n    pass\n"
)
SPANS = [
    NodeSpan("file", "file", 1, 6),
    NodeSpan("file#App", "class", 1, 3),
    NodeSpan("file#App.dispatch_request", "method", 2, 3),
    NodeSpan("file#DISPATCH_all", "function", 5, 6),
]


def test_lines_with_a_match_are_found_with_line_anchors() -> None:
    assert matching_lines(compile_pattern(r"^\s*def\s+dispatch_\w+"), TEXT, 10) == [2]


def test_case_is_ignored_when_asked() -> None:
    assert matching_lines(compile_pattern("def DISPATCH_"), TEXT, 10) == [5]
    assert matching_lines(compile_pattern("def DISPATCH_", ignore_case=True), TEXT, 10) == [2, 5]


def test_a_match_counts_for_the_innermost_node_around_it() -> None:
    hits = rank_matches(compile_pattern(r"pass"), [(0, TEXT)], lambda _: SPANS, 10)
    assert [h.uri for h in hits] == ["file#App.dispatch_request", "file#DISPATCH_all"]


def test_kinds_give_the_match_to_the_innermost_node_of_those_kinds() -> None:
    pattern = compile_pattern(r"dispatch_request")
    hits = rank_matches(pattern, [(0, TEXT)], lambda _: SPANS, 10, kinds=["class"])
    assert [h.uri for h in hits] == ["file#App"]


def test_nodes_with_more_matching_lines_rank_first() -> None:
    hits = rank_matches(compile_pattern(r"pass|def"), [(0, TEXT)], lambda _: SPANS, 10)
    assert [(h.uri, h.score) for h in hits][:1] == [("file#App.dispatch_request", 2.0)]


def test_spans_are_read_only_for_files_with_a_match() -> None:
    asked: list[int] = []

    def spans_of(key: int) -> list[NodeSpan]:
        asked.append(key)
        return SPANS

    rank_matches(compile_pattern(r"DISPATCH"), [(1, "nothing"), (2, TEXT)], spans_of, 10)
    assert asked == [2]


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(", "missing )"),
        (r"(a)\1", "invalid escape sequence"),
        (r"(?<=a)b", "invalid perl operator"),
        ("", "empty regular expression"),
        ("a" * (MAX_PATTERN_LENGTH + 1), "at most"),
        ("\ud800", "not valid text"),
    ],
)
def test_a_pattern_that_cannot_be_searched_is_a_clear_error(pattern: str, reason: str) -> None:
    with pytest.raises(InvalidPatternError, match=re.escape(reason)):
        compile_pattern(pattern)


@pytest.mark.timeout(60)
def test_a_pattern_that_backtracks_exponentially_elsewhere_finishes() -> None:
    # Python's re takes longer than the age of the universe on this; RE2 is linear.
    text = "a" * 200_000 + "!"
    assert matching_lines(compile_pattern(r"(a+)+$"), text, 10) == []
    assert matching_lines(compile_pattern(r"(a|aa)*b"), text, 10) == []


def test_a_pattern_matching_every_line_stops_at_the_limit() -> None:
    assert len(matching_lines(compile_pattern("."), "x\n" * 1000, 25)) == 25
