"""Tokenizers come from the `contextfuse_tokenizers` hook, chosen by `[tokenizer] name`."""

from __future__ import annotations

import pytest

from contextfuse import ConfigError
from contextfuse.config import load_config
from contextfuse.plugin import hookimpl
from contextfuse.tokenizer import resolve_tokenizer


class WordCounter:
    name = "words"

    def count(self, text):
        return len(text.split())

    def count_many(self, texts):
        return [self.count(t) for t in texts]


class WordPlugin:
    @hookimpl
    def contextfuse_tokenizers(self):
        return [WordCounter()]


def test_the_configured_tokenizer_is_the_one_a_plugin_contributes(pm):
    pm.register_plugin(WordPlugin(), "words")
    assert resolve_tokenizer(pm, "words").count("three small words") == 3


def test_without_a_name_the_default_tokenizer_counts(pm):
    assert resolve_tokenizer(pm, None).name == "tiktoken:cl100k_base"


def test_the_core_contributes_the_o200k_encoding(pm):
    assert resolve_tokenizer(pm, "tiktoken:o200k_base").name == "tiktoken:o200k_base"


def test_an_unknown_tokenizer_is_a_config_error_naming_the_known_ones(pm):
    with pytest.raises(ConfigError, match="'nope'.*tiktoken:cl100k_base"):
        resolve_tokenizer(pm, "nope")


def test_the_tokenizer_section_is_read_from_a_config_file(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    path.write_text('[tokenizer]\nname = "words"\n', encoding="utf-8")
    monkeypatch.setenv("CONTEXTFUSE_CONFIG", str(path))
    assert load_config(tmp_path).tokenizer.name == "words"
