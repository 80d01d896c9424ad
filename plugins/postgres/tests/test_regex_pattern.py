"""An RE2 pattern rewritten for PostgreSQL's ``~`` keeps every file RE2 would match."""

from __future__ import annotations

import psycopg
import pytest
from contextfuse_postgres.text import postgres_pattern

from contextfuse.kb.regex_search import compile_pattern, matching_lines

TEXTS = [
    "def dispatch_request(self):\n    return self.view()\n",
    "class Router:\n    pass\n",
    "x = re.compile('a\\\\bc')\nfoo_bar = 1\n",
    "word\nnext line\tTab\n",
]
PATTERNS = [
    r"^\s*def\s+dispatch_\w+",
    r"\bfoo\b",
    r"\Bar\b",
    r"(?i)ROUTER",
    r"(?P<name>pass|return)\s",
    r"line\tTab$",
    r"word[^x]next",
    r"self\.view\(\)\z",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_postgresql_keeps_every_text_re2_matches(server_url: str, pattern: str) -> None:
    rewritten = postgres_pattern(pattern, ignore_case=False)
    assert rewritten is not None
    compiled = compile_pattern(pattern)
    with psycopg.connect(server_url) as conn:
        for text in TEXTS:
            kept = conn.execute("SELECT %s ~ %s", (text, rewritten)).fetchone()
            assert kept is not None
            if matching_lines(compiled, text, 1):
                assert kept[0], (pattern, text)


@pytest.mark.parametrize("pattern", [r"\p{Greek}", r"\pL", r"a(?i:b)", r"\Qa.b\E", r"\x{41}"])
def test_what_postgresql_spells_otherwise_is_left_to_re2(pattern: str) -> None:
    assert postgres_pattern(pattern, ignore_case=False) is None


def test_word_boundaries_and_line_mode_are_rewritten() -> None:
    assert postgres_pattern(r"\bx\B\z", ignore_case=True) == r"(?wi)\yx\Y\Z"
