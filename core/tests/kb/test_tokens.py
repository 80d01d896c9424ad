"""Token counts of nested nodes, composed from their parts, equal counting in full."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from contextfuse.kb.parse import parse
from contextfuse.kb.render import render_file
from contextfuse.kb.tokens import COMPOSABLE, _PieceCounter, count_renderings
from contextfuse.tokenizer import Tokenizer, default_tokenizer


class InFull:
    """The default tokenizer under another name: every text is counted in full."""

    name = "in-full"

    def __init__(self, inner: Tokenizer) -> None:
        self.inner = inner

    def count(self, text: str) -> int:
        return self.inner.count(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.inner.count(t) for t in texts]


def counts(text: str, language: str, tokenizer: Tokenizer) -> list[int]:
    lines = text.split("\n")
    drafts = render_file("p", "f", lines, parse(text, lines, language))
    return count_renderings(tokenizer, drafts)


LINES = st.sampled_from(
    [
        "# Title", "## Part", "### Deep", "text with words", "    indented code();",
        "", "   ", "\t", "end.", "x = {'a': 1}\\", "  - item", "```", "!!!", "— ünïcode —",
        "def f(x):", "    return x  ", "class A:", "    def m(self):", "        pass",
        "    @decorated", "# comment", "'''", "))", "\u3000全角",
    ]
)  # fmt: skip


def test_the_default_tokenizer_is_composable() -> None:
    assert default_tokenizer().name in COMPOSABLE


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(LINES, max_size=60), language=st.sampled_from(["markdown", "python"]))
def test_composed_counts_equal_counts_in_full(lines: list[str], language: str) -> None:
    text = "\n".join(lines)
    tokenizer = default_tokenizer()
    assert counts(text, language, tokenizer) == counts(text, language, InFull(tokenizer))


GAPS = st.lists(st.sampled_from(["", "    ", "\t", "# note", "    # inner"]), max_size=3)
STATEMENTS = st.sampled_from(
    ["return 1", "x = (1,\n            2)", "pass  ", "print('a;b')  # c", "y = {'k': [1]}", ";"]
)


@st.composite
def python_source(draw: st.DrawFn) -> str:
    """Valid Python: classes with methods and functions, odd blank lines and trailers."""
    out: list[str] = []
    for index in range(draw(st.integers(1, 4))):
        out.extend(draw(GAPS))
        if draw(st.booleans()):
            out.append(f"class C{index}:")
            for method in range(draw(st.integers(1, 3))):
                out.extend("    " + g if g else g for g in draw(GAPS))
                out.append(f"    def m{method}(self):")
                out.extend(f"        {s}".replace("\n", "\n        ") for s in draw(
                    st.lists(STATEMENTS.filter(lambda s: s != ";"), min_size=1, max_size=3)
                ))  # fmt: skip
        else:
            out.append(f"def f{index}():")
            out.append(f"    {draw(STATEMENTS.filter(lambda s: s != ';'))}")
    out.extend(draw(GAPS))
    return "\n".join(out) + draw(st.sampled_from(["", "\n", "\n\n", "\n  \n"]))


@settings(max_examples=300, deadline=None)
@given(text=python_source())
def test_composed_counts_equal_counts_in_full_for_python(text: str) -> None:
    compile(text, "generated", "exec")
    tokenizer = default_tokenizer()
    assert counts(text, "python", tokenizer) == counts(text, "python", InFull(tokenizer))


#: Characters around the cut: every kind of space the tokenizer's pattern or Python's
#: ``str.isspace`` knows (they disagree on some), newlines and carriage returns, letters,
#: digits, contractions and punctuation.
TRICKY = st.lists(
    st.sampled_from(
        list(" \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u180e\u200b\u2028\u3000\ufeff")
        + list("aZé1'sdt;:)(#/\\-_\"`<>|全")
        + ["ll", "re", "\n\n", "\r\n", "  ", "123"]
    ),
    max_size=60,
).map("".join)


@settings(max_examples=2000, deadline=None)
@given(text=TRICKY)
def test_a_text_counted_piece_by_piece_counts_as_in_full(text: str) -> None:
    tokenizer = default_tokenizer()
    assert _PieceCounter(tokenizer).count(text) == tokenizer.count(text)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(TRICKY, min_size=2, max_size=8))
def test_pieces_remembered_from_other_texts_give_the_same_counts(texts: list[str]) -> None:
    tokenizer = default_tokenizer()
    counter = _PieceCounter(tokenizer)
    joined = "\n".join(texts)
    counter.count(joined)  # its pieces are now remembered
    assert [counter.count(text) for text in [*texts, joined]] == [
        tokenizer.count(text) for text in [*texts, joined]
    ]
