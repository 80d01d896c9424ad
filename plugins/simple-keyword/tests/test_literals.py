"""Literal evidence: options, setting names and quoted messages of a request, found in code."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from contextfuse import BackendSet
from contextfuse.kb import index, open_backends
from contextfuse.plugin_manager import make_plugin_manager
from contextfuse_simple_keyword.literals import MAX_PLACES, extract_literals, literal_evidence

P = "project://cli/"
MAIN = """\
def add_options(parser):
    parser.add_argument("--collect-only", action="store_true")
    parser.add_argument("--ignore-paths", default="")


def report(path):
    raise SystemExit(f"Unable to load file {path}")
"""
# The same option in a test, and a name written in more places than says anything.
TESTS = 'def test_collect_only(run):\n    run("--collect-only")\n'
COMMON = "".join(f'def step_{i}(data):\n    return data.sort("in-place")\n\n\n' for i in range(9))


def _texts(request: str) -> list[str]:
    return [literal.text for literal in extract_literals(request)]


def test_a_long_option_is_a_literal_without_its_value() -> None:
    assert _texts("running `pytest --collect-only --maxfail=2 -x` is slow") == [
        "--collect-only",
        "--maxfail",
    ]


def test_a_hyphenated_name_in_the_title_is_a_literal() -> None:
    assert _texts("the ignore-paths setting is ignored\nsince 2.1") == ["ignore-paths"]


def test_a_hyphenated_name_in_backquotes_is_a_literal() -> None:
    assert _texts("Bug\nsetting `ignore-paths` does nothing") == ["ignore-paths"]


def test_the_key_of_a_setting_line_is_a_literal() -> None:
    assert _texts("Bug\n```ini\nfunction-rgx = [a-z_]+$\n```") == ["function-rgx"]


def test_a_hyphenated_word_of_prose_or_output_is_not_a_literal() -> None:
    assert _texts("Bug\nit has side-effects:\n```\nr.py:1:0: E0611 (no-name-in-module)\n```") == []


def test_versions_ranges_encodings_and_paths_are_not_literals() -> None:
    assert _texts("pytest-5.3 with utf-8 text in [a-z] under src/my-pkg/mod.py") == []


def test_a_quoted_message_is_a_literal_without_the_values_put_in_it() -> None:
    assert _texts("it fails with 'Unable to load file a/b.py: 2 errors' today") == [
        "Unable to load file"
    ]


def test_quoted_names_and_code_fragments_are_not_literals() -> None:
    assert _texts("""set out_dir = 'ddd' and call f('a', 'b', 'c') then "for the" run""") == []


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendSet]:
    repo = tmp_path_factory.mktemp("cli")
    files = {"cli/main.py": MAIN, "tests/test_main.py": TESTS, "cli/common.py": COMMON}
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    index(repo, pm=make_plugin_manager(autoload=False), project="cli")
    with open_backends(repo) as opened:
        yield opened


def test_the_code_that_holds_an_option_is_evidence(backends: BackendSet) -> None:
    request = "`--collect-only` needs a one letter shortcut"
    assert literal_evidence(request, backends) == [P + "cli/main.py#add_options"]


def test_a_quoted_message_finds_the_code_that_raises_it(backends: BackendSet) -> None:
    request = 'pylint stops: "Unable to load file x/__init__.py"'
    assert literal_evidence(request, backends) == [P + "cli/main.py#report"]


def test_a_literal_written_in_many_places_is_no_evidence(backends: BackendSet) -> None:
    assert len(COMMON.split("def ")) - 1 > MAX_PLACES
    assert literal_evidence("sort in-place please", backends) == []


def test_code_holding_more_of_the_literals_comes_first(backends: BackendSet) -> None:
    request = "--ignore-paths is read but 'Unable to load file' shows"
    assert literal_evidence(request, backends)[0] == P + "cli/main.py#add_options"
