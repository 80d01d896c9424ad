"""The secret scanner on texts that have tripped it before."""

from __future__ import annotations

import pytest

from contextfuse.kb.secrets import redact


@pytest.mark.timeout(5)
def test_text_whose_lowercase_is_longer_is_scanned_and_redacted():
    # "İ".lower() is two code points: indices of the lowered text must not drift.
    text = "İstanbul İzmir " * 50 + '\napi_key = "k9Fq2ZxW8pLm4RtY7vBn3HsJ"\nİ\n'
    result = redact(text)
    assert "k9Fq2ZxW8pLm4RtY7vBn3HsJ" not in result.text
    assert result.text.count("\n") == text.count("\n")


@pytest.mark.timeout(5)
def test_a_key_block_without_an_end_line_terminates():
    text = "-----BEGIN RSA PRIVATE KEY-----\n" + "-----begin\n" * 3
    assert redact(text).text.count("\n") == text.count("\n")
