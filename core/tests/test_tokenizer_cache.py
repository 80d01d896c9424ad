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
