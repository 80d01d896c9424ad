"""The history backend: commits, the files they touched, co-change counts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextfuse.backends import BackendSet
from contextfuse.kb import IndexStats


def test_commits_come_newest_first_with_author_message_and_files(kb: BackendSet) -> None:
    commits = kb.temporal.commits()
    assert [c.message for c in commits] == [
        "Remove gone.py",
        "Rename old_name",
        "Add titled helper",
        "Initial commit",
    ]
    assert commits[0].author == "Ada Tester"
    assert commits[0].files == ("gone.py",)
    assert set(commits[1].files) == {"old_name.py", "new_name.py"}
    assert len(commits[0].sha) == 40


def test_commits_of_a_path_are_those_that_touched_it(kb: BackendSet) -> None:
    found = kb.temporal.commits(path="shop/util.py")
    assert [c.message for c in found] == ["Add titled helper", "Initial commit"]
    # A file URI works as well as a path.
    assert kb.temporal.commits(path="project://shop-repo/shop/util.py", limit=1) == found[:1]


def test_files_changed_together_are_counted(kb: BackendSet) -> None:
    together = dict(kb.temporal.co_changed("shop/util.py"))
    assert together["shop/models.py"] == 2
    assert together["README.md"] == 1


def test_the_stats_count_commits(indexed: tuple[Path, IndexStats]) -> None:
    _, stats = indexed
    assert (stats.commits, stats.commits_added) == (4, 4)


def test_only_new_commits_are_read_on_refresh(
    repo: Path,
    build: Callable[..., Any],
    opened: Callable[..., Any],
    write: Callable[..., Any],
    commit: Callable[..., Any],
) -> None:
    build(repo)
    write(repo, {"shop/util.py": "def slugify(text):\n    return text\n"})
    commit(repo, "Simplify slugify")
    stats = build(repo)
    assert (stats.commits, stats.commits_added) == (5, 1)
    assert opened(repo).temporal.commits(limit=1)[0].message == "Simplify slugify"
    assert dict(opened(repo).temporal.co_changed("shop/util.py"))["shop/models.py"] == 2


def test_rewritten_history_is_read_again(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any], git: Callable[..., Any]
) -> None:
    build(repo)
    git(repo, "commit", "-q", "--amend", "-m", "Delete gone.py")
    stats = build(repo)
    messages = [c.message for c in opened(repo).temporal.commits()]
    assert messages[0] == "Delete gone.py"
    assert "Remove gone.py" not in messages
    assert stats.commits == 4


def test_bulk_commits_do_not_count_as_changing_together(
    repo: Path,
    build: Callable[..., Any],
    opened: Callable[..., Any],
    write: Callable[..., Any],
    commit: Callable[..., Any],
) -> None:
    write(repo, {f"bulk/f{i}.txt": f"{i}\n" for i in range(51)})
    commit(repo, "Vendor 51 files")
    build(repo)
    kb = opened(repo)
    assert kb.temporal.co_changed("bulk/f0.txt") == []
    assert len(kb.temporal.commits(limit=1)[0].files) == 51


def test_a_repository_without_commits_has_an_empty_history(
    tmp_path: Path,
    build: Callable[..., Any],
    opened: Callable[..., Any],
    git: Callable[..., Any],
    write: Callable[..., Any],
) -> None:
    root = tmp_path / "fresh"
    write(root, {"a.py": "A = 1\n"})
    git(root, "init", "-q")
    stats = build(root)
    assert stats.git and stats.commits == 0
    assert opened(root).temporal.commits() == []
