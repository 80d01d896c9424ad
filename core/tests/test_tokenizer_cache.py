"""The tokenizer's compiled copy of its encoding: same counts, rebuilt when damaged."""

from __future__ import annotations

from pathlib import Path

import pytest

tiktoken = pytest.importorskip("tiktoken")

from contextfuse.tokenizer import _compiled_encoding  # noqa: E402

SAMPLE = "def parse_header(value: str) -> dict[str, int]:\n    return {'ünïcode': 1}  # ok\n"


@pytest.fixture(autouse=True)
def _tiktoken_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))


def test_the_compiled_copy_counts_exactly_like_tiktoken(tmp_path: Path) -> None:
    first = _compiled_encoding(tiktoken, "cl100k_base", tmp_path)  # writes the copy
    again = _compiled_encoding(tiktoken, "cl100k_base", tmp_path)  # reads it
    assert list(tmp_path.glob("*.marshal"))
    assert again.encode_ordinary(SAMPLE) == first.encode_ordinary(SAMPLE)


def test_a_damaged_copy_is_rebuilt(tmp_path: Path) -> None:
    _compiled_encoding(tiktoken, "cl100k_base", tmp_path)
    (compiled,) = tmp_path.glob("*.marshal")
    compiled.write_bytes(b"not marshal data")
    encoding = _compiled_encoding(tiktoken, "cl100k_base", tmp_path)
    assert len(encoding.encode_ordinary(SAMPLE)) > 10
    assert compiled.read_bytes() != b"not marshal data"


def test_the_quick_encoder_counts_exactly_like_tiktoken(tmp_path: Path) -> None:
    from contextfuse.tokenizer import _quick_encoding

    _quick_encoding.cache_clear()
    full = _compiled_encoding(tiktoken, "cl100k_base", tmp_path)  # writes the ranks it reads
    quick = _quick_encoding("cl100k_base")
    assert quick is not None
    sources = Path(__file__).resolve().parents[1] / "src" / "contextfuse"
    texts = [SAMPLE, "", " \n\t  x", "naïve café 名前 😀 'll 's\r\n", "a" * 5000]
    texts += [p.read_text("utf-8") for p in sorted(sources.rglob("*.py"))[:60]]
    for text in texts:
        assert quick.encode_ordinary(text) == full.encode_ordinary(text)  # type: ignore[attr-defined]
    _quick_encoding.cache_clear()


def test_a_process_counts_its_first_texts_without_building_tiktoken(tmp_path: Path) -> None:
    from contextfuse.tokenizer import TiktokenTokenizer, _load_encoding, _quick_encoding

    _compiled_encoding(tiktoken, "cl100k_base", tmp_path)
    _quick_encoding.cache_clear()
    _load_encoding.cache_clear()
    tokenizer = TiktokenTokenizer()
    assert tokenizer.count(SAMPLE) == len(tiktoken.get_encoding("cl100k_base").encode(SAMPLE))
    assert _load_encoding.cache_info().currsize == 0
    tokenizer.count("x" * 2_100_000)  # past the quick encoder's share: tiktoken's is built
    assert _load_encoding.cache_info().currsize == 1
    _quick_encoding.cache_clear()
    _load_encoding.cache_clear()


def _true_count(text: str) -> int:
    return len(tiktoken.get_encoding("cl100k_base").encode_ordinary(text))


TEXTS = [f"- src/pkg/module_{i}.py [full]: helper_{i} [sig]" for i in range(20)]


@pytest.mark.parametrize("built", [False, True], ids=["quick encoder", "tiktoken"])
def test_counts_given_from_memory_are_the_counts_of_the_text(built: bool) -> None:
    from contextfuse.tokenizer import TiktokenTokenizer

    tokenizer = TiktokenTokenizer()
    if built:
        tokenizer.count("x" * 2_100_000)  # past the quick encoder's share
    first = tokenizer.count_many(TEXTS[:12])  # 12: tiktoken counts them as a batch
    mixed = tokenizer.count_many([*TEXTS[6:], "", SAMPLE])  # some remembered, some not
    again = [tokenizer.count(t) for t in TEXTS]
    assert first == [_true_count(t) for t in TEXTS[:12]]
    assert mixed == [_true_count(t) for t in [*TEXTS[6:], "", SAMPLE]]
    assert again == [_true_count(t) for t in TEXTS]


def test_a_remembered_text_is_not_encoded_again() -> None:
    from contextfuse.tokenizer import TiktokenTokenizer

    tokenizer = TiktokenTokenizer()
    tokenizer.count_many(TEXTS)
    tokenizer._counter = None  # type: ignore[assignment,method-assign]  # encoding would fail
    assert tokenizer.count_many(TEXTS) == [_true_count(t) for t in TEXTS]
    assert tokenizer.count(TEXTS[3]) == _true_count(TEXTS[3])


def test_the_texts_remembered_are_bounded_in_number_and_length() -> None:
    from contextfuse.tokenizer import _REMEMBERED, _REMEMBERED_CHARS, TiktokenTokenizer

    tokenizer = TiktokenTokenizer()
    for i in range(_REMEMBERED + 10):
        tokenizer.count(f"line {i}")
    long = "word " * _REMEMBERED_CHARS
    assert tokenizer.count(long) == _true_count(long)
    assert 0 < len(tokenizer._known) <= _REMEMBERED
    assert long not in tokenizer._known
