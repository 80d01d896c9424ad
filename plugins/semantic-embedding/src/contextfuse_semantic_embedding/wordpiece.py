"""BERT's WordPiece tokenizer in Python, for the few texts of a query.

The ``tokenizers`` library reads ``tokenizer.json`` in 0.04 s, a tenth of a command-line
assembly that embeds one query; this module reads only the vocabulary (0.005 s) and gives
the same token ids for the configuration it supports (checked on load): the static model's
``BertNormalizer`` (clean text, pad CJK ideographs, strip accents, lowercase),
``BertPreTokenizer`` and ``WordPiece`` with special added tokens. It is a port of those
parts of ``tokenizers`` (Rust); anything else in ``tokenizer.json`` makes :func:`load` return
None, and the library does the work.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

__all__ = ["WordPiece", "load"]

#: Rust's ``char::is_whitespace`` (the White_Space property).
_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_OTHER = frozenset({"Cc", "Cf", "Cn", "Co", "Cs"})
#: Any character outside the blocks :meth:`WordPiece.handles` vouches for.
_BEYOND = re.compile(
    "[^\u0000-\u0377\u03a3-\u052f\u2000-\u2064\u20a0-\u20bf\u2100-\u218b\u2190-\u2426\u2460-\u2b73]"
)
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def load(path: Path) -> WordPiece | None:
    """The tokenizer of ``tokenizer.json`` at ``path``, or None if it is not one this module
    reproduces exactly."""
    try:
        data = json.loads(path.read_text("utf-8"))
        return WordPiece.from_config(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None


class WordPiece:
    """``encode(text)``: the ids ``tokenizers`` gives without special tokens, untruncated."""

    def __init__(
        self,
        vocab: dict[str, int],
        unk_token: str,
        prefix: str,
        max_chars: int,
        special: dict[str, int],
    ) -> None:
        self._vocab = vocab
        self._unk = vocab[unk_token]
        #: The id of the unknown-word token.
        self.unk_id = self._unk
        self._prefix = prefix
        self._max_chars = max_chars
        self._special = special
        self._split = (
            re.compile("|".join(re.escape(t) for t in sorted(special, key=len, reverse=True)))
            if special
            else None
        )

    @classmethod
    def from_config(cls, data: dict[str, Any]) -> WordPiece | None:
        """From a parsed ``tokenizer.json``; None for any configuration not reproduced here."""
        model = data.get("model") or {}
        normalizer = data.get("normalizer") or {}
        expected = {
            "type": "BertNormalizer",
            "clean_text": True,
            "handle_chinese_chars": True,
            "strip_accents": None,
            "lowercase": True,
        }
        if model.get("type") != "WordPiece" or normalizer != expected:
            return None
        if data.get("pre_tokenizer") != {"type": "BertPreTokenizer"}:
            return None
        special: dict[str, int] = {}
        for token in data.get("added_tokens") or []:
            plain = not (token["single_word"] or token["lstrip"] or token["rstrip"])
            if not (token["special"] and plain and not token["normalized"]):
                return None
            special[str(token["content"])] = int(token["id"])
        vocab = {str(k): int(v) for k, v in model["vocab"].items()}
        unk = str(model["unk_token"])
        if unk not in vocab:
            return None
        prefix = str(model["continuing_subword_prefix"])
        return cls(vocab, unk, prefix, int(model["max_input_chars_per_word"]), special)

    @staticmethod
    def handles(text: str) -> bool:
        """Whether :meth:`encode` agrees with ``tokenizers`` on ``text`` for certain.

        ``tokenizers`` classifies characters with Unicode tables older than Python's (a
        letter or punctuation mark added since is unassigned to it): only text of the blocks
        whose characters both classify alike is taken here (Latin, Greek, Cyrillic,
        general punctuation, currency, letter-like symbols, arrows, mathematical and
        technical symbols, box drawing, shapes, dingbats; tested character by character).
        """
        return text.isascii() or _BEYOND.search(text) is None

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``: special tokens found in it, then WordPiece of the rest."""
        if self._split is None:
            return self._encode_plain(text)
        ids: list[int] = []
        start = 0
        for match in self._split.finditer(text):
            ids += self._encode_plain(text[start : match.start()])
            ids.append(self._special[match.group()])
            start = match.end()
        ids += self._encode_plain(text[start:])
        return ids

    def _encode_plain(self, text: str) -> list[int]:
        ids: list[int] = []
        for word in _pre_tokenize(_normalize(text)):
            ids += self._word(word)
        return ids

    def _word(self, word: str) -> list[int]:
        if len(word) > self._max_chars:
            return [self._unk]
        vocab = self._vocab
        found = vocab.get(word)
        if found is not None:
            return [found]
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while start < end:
                piece = word[start:end] if start == 0 else self._prefix + word[start:end]
                token = vocab.get(piece)
                if token is not None:
                    ids.append(token)
                    break
                end -= 1
            else:
                return [self._unk]  # no piece of the rest is known: the whole word is
            start = end
        return ids


def _normalize(text: str) -> str:
    """``BertNormalizer``: clean, space CJK ideographs, strip accents, lowercase."""
    cleaned = []
    for c in text:
        # Control characters go first: vertical tab, form feed and NEL are whitespace, but
        # Cc too, so they are dropped, not made spaces; tab, newline and return are kept.
        if (
            c == "\x00"
            or c == "\ufffd"
            or (c not in "\t\n\r" and unicodedata.category(c) in _OTHER)
        ):
            continue
        if c in _WHITESPACE:
            cleaned.append(" ")
        elif _is_cjk(c):
            cleaned.append(f" {c} ")
        else:
            cleaned.append(c)
    decomposed = unicodedata.normalize("NFD", "".join(cleaned))
    stripped = "".join(c for c in decomposed if unicodedata.category(c) != "Mn")
    # Rust lowercases each character alone: no final-sigma rule, as str.lower() has.
    if "\u03a3" in stripped:
        return "".join(c.lower() for c in stripped)
    return stripped.lower()


def _is_cjk(c: str) -> bool:
    code = ord(c)
    return code >= 0x3400 and any(low <= code <= high for low, high in _CJK)


def _pre_tokenize(text: str) -> list[str]:
    """``BertPreTokenizer``: split on whitespace (dropped) and punctuation (kept alone)."""
    words: list[str] = []
    for chunk in text.split(" "):  # _normalize made every whitespace character a space
        if not chunk:
            continue
        if chunk.isalnum():  # the common case: no punctuation inside
            words.append(chunk)
            continue
        current: list[str] = []
        for c in chunk:
            if c in _WHITESPACE:
                if current:
                    words.append("".join(current))
                    current = []
            elif c in _ASCII_PUNCTUATION or unicodedata.category(c).startswith("P"):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(c)
            else:
                current.append(c)
        if current:
            words.append("".join(current))
    return words
