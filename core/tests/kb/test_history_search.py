"""The history's search side: what each commit changed, full-text search, renames."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextfuse.backends import BackendSet


def test_a_commit_is_found_by_words_of_its_message(kb: BackendSet) -> None:
    hits = kb.temporal.search("titled helper")
    assert hits
    first = kb.temporal.get_commits([hits[0].uri])
    assert [c.message for c in first.values()] == ["Add titled helper"]


def test_hits_are_commit_uris_of_the_project(kb: BackendSet) -> None:
    hit = kb.temporal.search("titled")[0]
    assert hit.uri.startswith("commit://shop-repo/")
    assert len(hit.uri.rsplit("/", 1)[-1]) == 40


def test_a_commit_is_found_by_an_identifier_only_its_diff_holds(kb: BackendSet) -> None:
    # DEFAULT_OWNER appears in no commit message, only in the lines the commit added.
    best = kb.temporal.search("DEFAULT_OWNER")[0]
    assert [c.message for c in kb.temporal.get_commits([best.uri]).values()] == [
        "Add titled helper"
    ]


def test_a_commit_is_found_by_a_path_it_touched(kb: BackendSet) -> None:
    found = kb.temporal.get_commits([h.uri for h in kb.temporal.search("gone.py")])
    assert "Remove gone.py" in {c.message for c in found.values()}


def test_each_change_counts_its_lines_and_names_the_functions_it_touched(
    kb: BackendSet,
) -> None:
    (commit,) = kb.temporal.commits(path="shop/util.py", limit=1)
    change = next(c for c in commit.changes if c.path == "shop/util.py")
    assert change.added == 4
    assert change.removed == 0
    assert change.symbols  # the hunk header names the code the lines were added after


def test_a_query_of_function_words_only_finds_nothing(kb: BackendSet) -> None:
    assert kb.temporal.search("the of and") == []


def test_a_renamed_file_is_followed_to_where_it_lives_now(kb: BackendSet) -> None:
    assert kb.temporal.current_path("old_name.py") == "new_name.py"
    assert kb.temporal.current_path("shop/util.py") == "shop/util.py"


def test_new_commits_are_searchable_after_a_refresh(
    repo: Path,
    build: Callable[..., Any],
    opened: Callable[..., Any],
    write: Callable[..., Any],
    commit: Callable[..., Any],
) -> None:
    build(repo)
    write(repo, {"shop/util.py": "def slugify(text):\n    return text.lower()\n"})
    commit(repo, "Lower-case slugs for canonical URLs")
    build(repo)
    temporal = opened(repo).temporal
    hits = temporal.search("canonical slugs")
    messages = [c.message for c in temporal.get_commits([h.uri for h in hits]).values()]
    assert messages == ["Lower-case slugs for canonical URLs"]


def test_rewritten_history_leaves_no_stale_search_rows(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any], git: Callable[..., Any]
) -> None:
    build(repo)
    git(repo, "commit", "-q", "--amend", "-m", "Delete the unused module")
    build(repo)
    temporal = opened(repo).temporal
    assert temporal.search("unused module")
    assert not any(
        c.message == "Remove gone.py"
        for c in temporal.get_commits([h.uri for h in temporal.search("Remove")]).values()
    )


def test_the_backend_satisfies_the_temporal_protocol(kb: BackendSet) -> None:
    from contextfuse.backends import TemporalBackend

    assert isinstance(kb.temporal, TemporalBackend)
