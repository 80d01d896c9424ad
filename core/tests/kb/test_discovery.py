"""What is indexed and what is left out (and said so)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextfuse.backends import BackendSet
from contextfuse.kb import IndexStats

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
P = "project://shop-repo/"


def paths(kb: BackendSet) -> set[str]:
    return {node.path for node in kb.nodes.files()}


def test_text_files_git_tracks_are_indexed(kb: BackendSet) -> None:
    assert {"shop/models.py", "README.md", "docs/guide.rst", "web/app.ts", ".gitignore"} <= paths(
        kb
    )


def test_gitignored_files_are_not_indexed(kb: BackendSet) -> None:
    assert not {"build/generated.py", "debug.log"} & paths(kb)


def test_deleted_and_renamed_files_show_their_current_state(kb: BackendSet) -> None:
    found = paths(kb)
    assert "new_name.py" in found
    assert not {"old_name.py", "gone.py"} & found


def test_binary_files_are_skipped_with_the_reason(indexed: tuple[Path, IndexStats]) -> None:
    _, stats = indexed
    assert ("logo.png", "binary") in stats.skipped_files
    assert stats.skipped["binary"] == 1


def test_minified_files_are_skipped(indexed: tuple[Path, IndexStats]) -> None:
    _, stats = indexed
    assert dict(stats.skipped_files)["static/app.min.js"].startswith("generated or minified")


def test_secret_files_are_excluded_by_name(indexed: tuple[Path, IndexStats]) -> None:
    _, stats = indexed
    reasons = dict(stats.skipped_files)
    assert reasons[".env"].startswith("secret file")
    assert reasons["deploy/id_rsa"].startswith("secret file")


def test_secrets_inside_files_are_redacted(kb: BackendSet) -> None:
    content = kb.nodes.get_renderings([P + "settings.py"], [9])[P + "settings.py"][9].content
    assert AWS_KEY not in content
    assert 'AWS_KEY = "[REDACTED:aws-access-key]"' in content


def test_a_private_key_block_is_redacted_and_lines_keep_their_numbers(kb: BackendSet) -> None:
    rendering = kb.nodes.get_renderings([P + "notes/key.txt"], [9])[P + "notes/key.txt"][9]
    assert rendering.content.splitlines() == ["before", "[REDACTED:private-key]", "", "", "after"]


def test_no_secret_reaches_the_index_file(indexed: tuple[Path, IndexStats]) -> None:
    root, _ = indexed
    conn = sqlite3.connect(root / ".contextfuse" / "index.db")
    conn.execute("PRAGMA wal_checkpoint(FULL)")
    conn.close()
    data = b"".join(p.read_bytes() for p in (root / ".contextfuse").glob("index.db*"))
    assert AWS_KEY.encode() not in data
    assert b"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun" not in data


def test_redactions_are_counted_by_kind(indexed: tuple[Path, IndexStats]) -> None:
    _, stats = indexed
    assert stats.secret_kinds == {"aws-access-key": 1, "private-key": 1}
    assert stats.files_redacted == 2


def test_links_leaving_the_repository_are_not_followed(indexed: tuple[Path, IndexStats]) -> None:
    _, stats = indexed
    assert ("escape.txt", "symbolic link leaves the repository") in stats.skipped_files


def test_the_index_directory_is_never_indexed(kb: BackendSet) -> None:
    assert not any(p.startswith(".contextfuse") for p in paths(kb))


def test_contextfuseignore_excludes_files(
    repo: Path, build: Callable[..., Any], opened: Callable[..., Any], write: Callable[..., Any]
) -> None:
    write(repo, {".contextfuseignore": "docs/\n"})
    stats = build(repo)
    assert ("docs/guide.rst", "ignored by .contextfuseignore") in stats.skipped_files
    assert "docs/guide.rst" not in paths(opened(repo))


def test_files_over_the_size_limit_are_skipped(repo: Path, build: Callable[..., Any]) -> None:
    stats = build(repo, max_file_size=300)
    assert dict(stats.skipped_files)["shop/models.py"] == "larger than 300 bytes"


def test_a_folder_without_git_indexes_and_says_there_is_no_history(
    new_repo: Callable[..., Any], build: Callable[..., Any], opened: Callable[..., Any]
) -> None:
    root = new_repo("plain", with_git=False)
    stats = build(root)
    backends = opened(root)
    assert not stats.git
    assert any("no history" in note for note in stats.notes)
    assert backends.temporal is None
    assert "shop/models.py" in paths(backends)
    # Without git: Callable[..., Any], .gitignore files are still honoured.
    assert "build/generated.py" not in paths(backends)
    assert "debug.log" not in paths(backends)


def test_without_git_a_negated_gitignore_pattern_keeps_its_file(
    new_repo: Callable[..., Any],
    write: Callable[..., Any],
    build: Callable[..., Any],
    opened: Callable[..., Any],
) -> None:
    root = new_repo("plain", with_git=False)
    write(
        root,
        {
            "gen/.gitignore": "*.py\n!keep.py\n",
            "gen/drop.py": "def drop():\n    return 1\n",
            "gen/keep.py": "def keep():\n    return 2\n",
        },
    )
    build(root)
    indexed = paths(opened(root))
    assert "gen/keep.py" in indexed
    assert "gen/drop.py" not in indexed


def test_a_contextfuseignore_that_is_not_utf8_still_applies(
    repo: Path, build: Callable[..., Any], write: Callable[..., Any]
) -> None:
    write(repo, {".contextfuseignore": b"docs/\n# caf\xe9 (Latin-1)\n"})
    stats = build(repo)
    assert ("docs/guide.rst", "ignored by .contextfuseignore") in stats.skipped_files
