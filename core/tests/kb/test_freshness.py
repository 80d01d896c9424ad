"""A refresh skipped from stats alone: never when anything an index run reads has changed."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from contextfuse.kb import parser_versions
from contextfuse.kb.api import index_unchanged
from contextfuse.kb.freshness import SNAPSHOT_NAME
from contextfuse.kb.generation import renew
from contextfuse.kb.layout import DEFAULT_INDEX_DIR
from contextfuse.kb.store import DB_NAME

Builder = Callable[..., Any]


def settle(root: Path, seconds: float = 10.0) -> None:
    """Date every file and folder of ``root`` back, as if nobody had touched it lately."""
    past = time.time() - seconds
    for folder, dirs, files in os.walk(root):
        for name in [*files, *dirs]:
            os.utime(os.path.join(folder, name), (past, past), follow_symlinks=False)
        os.utime(folder, (past, past))


def current(repo: Path, **options: Any) -> bool:
    options.setdefault("contributors", [])
    return index_unchanged(repo, **options)


def fresh_index(repo: Path, build: Builder) -> None:
    """Index a repository nobody touched lately: the snapshot proves it current."""
    settle(repo)
    build(repo)
    assert current(repo)


def test_an_index_run_leaves_a_snapshot_proving_the_index_current(
    repo: Path, build: Builder
) -> None:
    settle(repo)
    build(repo)
    assert (repo / DEFAULT_INDEX_DIR / SNAPSHOT_NAME).is_file()
    assert current(repo)


def test_without_a_snapshot_nothing_is_proven(repo: Path, build: Builder) -> None:
    fresh_index(repo, build)
    os.remove(repo / DEFAULT_INDEX_DIR / SNAPSHOT_NAME)
    assert not current(repo)


def test_a_run_under_another_project_name_is_a_change(repo: Path, build: Builder) -> None:
    fresh_index(repo, build)
    assert current(repo, project=repo.name)
    assert not current(repo, project="web")  # that run renames the index


def test_an_edited_file_is_a_change(repo: Path, build: Builder) -> None:
    fresh_index(repo, build)
    (repo / "shop/util.py").write_text("def shout(text):\n    return text.upper()\n")
    assert not current(repo)


def test_an_added_file_is_a_change(repo: Path, build: Builder) -> None:
    fresh_index(repo, build)
    (repo / "shop/extra.py").write_text("X = 1\n")
    assert not current(repo)


def test_a_deleted_file_is_a_change(repo: Path, build: Builder) -> None:
    fresh_index(repo, build)
    os.remove(repo / "shop/util.py")
    assert not current(repo)


def test_a_renamed_file_is_a_change(repo: Path, build: Builder) -> None:
    fresh_index(repo, build)
    os.rename(repo / "shop/util.py", repo / "shop/helpers.py")
    assert not current(repo)


def test_a_file_added_in_a_nested_folder_is_a_change(repo: Path, build: Builder) -> None:
    (repo / "shop/deep/er").mkdir(parents=True)
    (repo / "shop/deep/er/leaf.py").write_text("LEAF = 1\n")
    fresh_index(repo, build)
    (repo / "shop/deep/er/other.py").write_text("OTHER = 2\n")
    assert not current(repo)


def test_a_file_added_in_an_untracked_folder_of_ignored_files_is_a_change(
    repo: Path, build: Builder
) -> None:
    # The folder holds only an ignored file: no indexed file tells of it, its mtime does.
    (repo / "logs").mkdir()
    (repo / "logs/run.log").write_text("ignored by *.log\n")
    fresh_index(repo, build)
    (repo / "logs/notes.py").write_text("NOTE = 1\n")
    assert not current(repo)


def test_a_changed_gitignore_is_a_change(repo: Path, build: Builder) -> None:
    fresh_index(repo, build)
    with open(repo / ".gitignore", "a") as fh:
        fh.write("docs/\n")
    assert not current(repo)


def test_a_new_commit_is_a_change(
    repo: Path, build: Builder, commit: Callable[[Path, str], None]
) -> None:
    (repo / "notes.md").write_text("# Notes\n")
    fresh_index(repo, build)
    commit(repo, "Add notes")
    assert not current(repo)


def test_another_tokenizer_or_contributor_set_is_a_change(repo: Path, build: Builder) -> None:
    class Named:
        name = "extra"

        def contribute(self, session: Any) -> None:
            return None

    fresh_index(repo, build)
    assert not current(repo, contributors=[Named()])
    assert not current(repo, max_file_size=10)


def test_another_user_or_git_environment_is_a_change(
    repo: Path, build: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh_index(repo, build)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(repo.parent / "other.gitconfig"))
    assert not current(repo)


def test_another_version_of_a_parser_is_a_change(
    repo: Path, build: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An editable install changes no site-packages folder when its parsers change.
    fresh_index(repo, build)
    monkeypatch.setattr(
        parser_versions, "TREE_SITTER_VERSION", parser_versions.TREE_SITTER_VERSION + 1
    )
    assert not current(repo)


def test_another_writer_of_the_index_is_a_change(repo: Path, build: Builder) -> None:
    fresh_index(repo, build)
    with closing(sqlite3.connect(repo / DEFAULT_INDEX_DIR / DB_NAME, isolation_level=None)) as db:
        db.execute("BEGIN IMMEDIATE")
        renew(db)
        db.execute("COMMIT")
    assert not current(repo)


def test_an_edit_within_the_same_clock_tick_is_read_again(
    repo: Path, build: Builder, opened: Callable[..., Any]
) -> None:
    settle(repo)
    target = repo / "shop/util.py"
    target.write_text("def first_name():\n    return 1\n")
    # Written in the clock tick the index run starts in (a coarse clock, a fast machine):
    # its mtime is not older than the run's start.
    tick = time.time_ns() + 1_000_000_000
    os.utime(target, ns=(tick, tick))
    build(repo)
    target.write_text("def other_name():\n    return 2\n")  # the same size, the same tick
    os.utime(target, ns=(tick, tick))
    assert not current(repo)
    build(repo)
    kb = opened(repo)
    assert [n.name for n in kb.nodes.find_symbols("other_name")] == ["other_name"]
    assert kb.nodes.find_symbols("first_name") == []


@pytest.mark.parametrize("with_git", [True, False])
def test_an_assembler_skips_the_index_run_until_something_changes(
    new_repo: Callable[..., Path], with_git: bool
) -> None:
    from contextfuse.assembler import ContextAssembler

    repo = new_repo(with_git=with_git)
    settle(repo)
    with ContextAssembler(repo) as assembler:
        assert assembler.refresh() is not None  # the first run indexes
        assembler.assemble("slugify the text", 2000)
        assert assembler.refresh() is None  # nothing changed: no run
        (repo / "shop/util.py").write_text("def slugify(text):\n    return 'renamed'\n")
        assert assembler.refresh() is not None
        after = assembler.assemble("slugify the text", 2000)
    assert any("'renamed'" in f.content for f in after.fragments)
