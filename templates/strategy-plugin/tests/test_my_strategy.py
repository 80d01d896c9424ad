"""my-strategy's behaviour, with the fixtures of contextfuse's pytest plugin."""

from __future__ import annotations

from contextfuse_my_strategy import MyStrategy

from contextfuse import BackendSet, ContextRequest


def test_it_conforms_to_the_strategy_rules(contextfuse_conformance):
    contextfuse_conformance(MyStrategy())


def test_it_returns_the_code_that_matches_the_request(contextfuse_repo, contextfuse_assemble):
    backends = contextfuse_repo({"billing/invoice.py": "def total(lines):\n    return 0\n"})
    payload = contextfuse_assemble(MyStrategy(), backends, "invoice total", 500)
    assert any("billing/invoice.py" in f.uko_node for f in payload.fragments)


def test_it_declines_an_empty_request():
    assert MyStrategy().can_handle(ContextRequest(query=" "), BackendSet(text=object())) == 0.0
