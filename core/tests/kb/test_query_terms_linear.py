"""Turning a query into search terms takes time linear in its length, whatever it holds."""

from __future__ import annotations

import time

import pytest

from contextfuse.kb.terms import weighted_query_terms

#: Runs of one or two characters: a backtracking pattern with nested repetition spends
#: quadratic time on them (a 20,000-character run of letters took 24 s).
RUNS = ["a", "1", "A", "_", "-a", "a-", "é", "aA", "a_", "Ab", "a1", "a.", "a/", "a.-", "a "]
LIMIT = 100_000  # the query limit of every surface


@pytest.mark.timeout(120)
@pytest.mark.parametrize("run", RUNS)
def test_a_query_of_one_long_run_is_read_in_linear_time(run: str) -> None:
    query = (run * (LIMIT // len(run) + 1))[:LIMIT]
    started = time.perf_counter()
    weighted_query_terms(query)
    # Linear work on 100,000 characters takes milliseconds; quadratic work took minutes.
    assert time.perf_counter() - started < 5.0


def test_path_like_tokens_are_still_one_term_each() -> None:
    weights = weighted_query_terms("see -src/app/models.py and a..b/c or x-/y")
    assert weights["src_app_models_py"] == 2
    assert weights["models_py"] == 2
    assert weights["b_c"] == 2
    assert weights["x_y"] == 2
