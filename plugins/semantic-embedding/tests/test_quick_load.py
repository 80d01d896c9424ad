"""A query embedded without loading ``tokenizers``, from a table mapped from the cache."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from contextfuse_semantic_embedding.embedders import DEFAULT_MODEL_DIR, StaticEmbedder
from contextfuse_semantic_embedding.wordpiece import WordPiece, load

tokenizers = pytest.importorskip("tokenizers")

TOKENIZER_JSON = DEFAULT_MODEL_DIR / "tokenizer.json"
SOURCES = Path(__file__).resolve().parents[3] / "core" / "src" / "contextfuse"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def library() -> object:
    tokenizer = tokenizers.Tokenizer.from_file(str(TOKENIZER_JSON))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


#: The blocks ``WordPiece.handles`` vouches for.
BLOCKS = [
    (0x0000, 0x0377),
    (0x03A3, 0x052F),
    (0x2000, 0x2064),
    (0x20A0, 0x20BF),
    (0x2100, 0x218B),
    (0x2190, 0x2426),
    (0x2460, 0x2B73),
]
CHARACTERS = [chr(c) for low, high in BLOCKS for c in range(low, high + 1)]


def texts() -> list[str]:
    """Source files, and random strings of those blocks with the awkward characters."""
    found = [p.read_text("utf-8")[:4000] for p in sorted(SOURCES.rglob("*.py"))[:80]]
    rnd = random.Random(20)
    found += ["".join(rnd.choices(CHARACTERS, k=rnd.randint(0, 30))) for _ in range(3000)]
    words = ["[UNK]", "[PAD]", "x" * 101, "naïve", "a\x0bb", "snake_case", "déjà-vu", "e\u0301"]
    found += [" ".join(rnd.choice(words) for _ in range(4)) for _ in range(300)]
    return found


def test_the_python_wordpiece_gives_the_ids_tokenizers_gives(library: object) -> None:
    quick = load(TOKENIZER_JSON)
    assert quick is not None
    for text in texts():
        assert quick.handles(text)
        expected = library.encode(text, add_special_tokens=False).ids  # type: ignore[attr-defined]
        assert quick.encode(text) == expected, repr(text[:80])


def test_every_character_vouched_for_is_tokenized_as_tokenizers_does(library: object) -> None:
    quick = load(TOKENIZER_JSON)
    assert quick is not None
    for c in CHARACTERS:
        text = f"{c} a{c}b x {c}{c} {c}e\u0301 É{c}{c}1"
        expected = library.encode(text, add_special_tokens=False).ids  # type: ignore[attr-defined]
        assert quick.encode(text) == expected, hex(ord(c))


def test_text_beyond_those_blocks_is_left_to_tokenizers() -> None:
    assert not WordPiece.handles("解析 the header")
    embedder = StaticEmbedder()
    embedder.tokenize(["解析 the header"])
    assert embedder._tokenizer is not None


def test_another_tokenizer_configuration_is_left_to_tokenizers() -> None:
    data = json.loads(TOKENIZER_JSON.read_text("utf-8"))
    data["normalizer"]["lowercase"] = False
    assert WordPiece.from_config(data) is None


def test_a_query_is_embedded_without_loading_tokenizers() -> None:
    query = "Where does the server refresh its index?"
    quick = StaticEmbedder()
    vector = quick.embed([query])
    assert quick._tokenizer is None
    batch = StaticEmbedder().embed([query] * 9)  # a batch: through tokenizers
    assert np.array_equal(vector[0], batch[0])


def test_the_table_is_mapped_from_the_cache_after_the_first_load(tmp_path: Path) -> None:
    first = StaticEmbedder()
    expected = first.embed(["read a configuration file"])
    assert list((tmp_path / "cache" / "contextfuse" / "embedders").glob("table-*.npy"))
    second = StaticEmbedder()
    assert np.array_equal(second.embed(["read a configuration file"]), expected)
    assert isinstance(second._table, np.memmap)
