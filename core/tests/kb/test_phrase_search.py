"""Phrase search: words in a row, as code writes an option or a message."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from contextfuse.backends import BackendSet, PhraseSearch
from contextfuse.kb import index, open_backends
from contextfuse.plugin_manager import make_plugin_manager

CLI = """\
def add_options(parser):
    parser.add_argument("--dry-run", action="store_true")


def execute(dry, job):
    return job.run() if not dry else None
"""
P = "project://tool/tool/cli.py#"


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendSet]:
    repo = tmp_path_factory.mktemp("tool")
    (repo / "tool").mkdir()
    (repo / "tool" / "cli.py").write_text(CLI, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    index(repo, pm=make_plugin_manager(autoload=False), project="tool")
    with open_backends(repo) as opened:
        yield opened


def _phrase(kb: BackendSet, words: list[str]) -> list[str]:
    assert isinstance(kb.text, PhraseSearch)
    return [hit.uri for hit in kb.text.search_phrase(words, kinds=("function",))]


def test_words_written_in_a_row_find_the_code_that_holds_them(kb: BackendSet) -> None:
    assert _phrase(kb, ["Dry", "run"]) == [P + "add_options"]


def test_the_same_words_apart_are_not_a_phrase(kb: BackendSet) -> None:
    assert P + "execute" in [hit.uri for hit in kb.text.search("job dry")]
    assert _phrase(kb, ["job", "dry"]) == []


def test_any_words_are_searched_safely(kb: BackendSet) -> None:
    assert _phrase(kb, ['"', 'a"b OR *', "NEAR(", ""]) == []
