"""Parallel definitions (one symbol in several sibling files), on a repository indexed for real."""

from __future__ import annotations

from contextfuse import ContextRequest
from contextfuse.kb import index, open_backends
from contextfuse.plugin_manager import make_plugin_manager
from contextfuse_arce import ArceStrategy

LOCALE = """export function error(issue) {{
  // {language}: the message shown when a value has the wrong type
  return "invalid type: expected " + issue.expected + " received " + issue.received;
}}
"""


def test_a_symbol_repeated_in_sibling_files_keeps_one_copy_at_full_score(tmp_path):
    locales = tmp_path / "locales"
    locales.mkdir()
    for language in ("en", "de", "fr"):
        (locales / f"{language}.js").write_text(LOCALE.format(language=language), "utf-8")
    index(tmp_path, pm=make_plugin_manager(autoload=False))
    with open_backends(tmp_path) as backends:
        request = ContextRequest(query="message when a value has the wrong type")
        scores = ArceStrategy(embedder=None).scores(request, backends)
    copies = sorted(
        (score for uri, score in scores.items() if uri.endswith("#error")), reverse=True
    )
    assert len(copies) == 3
    assert copies[1] < copies[0] / 2
