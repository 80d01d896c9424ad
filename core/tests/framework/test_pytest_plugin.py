"""The pytest plugin's fixtures, used as a plugin author's tests would use them."""

from __future__ import annotations

from contextfuse import ACMSPipeline, ContextBudget, ContextRequest


def test_the_fresh_plugin_manager_holds_only_the_core(contextfuse_pm):
    assert [p.name for p in contextfuse_pm.loaded] == ["contextfuse.defaults"]


def test_a_built_strategy_passes_the_conformance_check(
    contextfuse_strategy, contextfuse_conformance
):
    assert contextfuse_conformance(contextfuse_strategy("mine")).name == "mine"


def test_a_built_strategy_runs_in_a_pipeline(
    contextfuse_pm, contextfuse_strategy, contextfuse_fragment
):
    pipeline = ACMSPipeline(plugin_manager=contextfuse_pm)
    strategy = contextfuse_strategy("mine", fragments=[contextfuse_fragment()], uses_text=True)
    pipeline.register_strategy("mine", strategy)
    payload = pipeline.run(
        ContextRequest(query="q"),
        {"text": True},
        ContextBudget(max_tokens=100, reserved_tokens=0),
        strategies=["mine"],
        preamble=False,
    )
    assert [f.uko_node for f in payload.fragments] == ["project://p/a.py"]


def test_an_indexed_repository_is_built_from_files_and_commits(contextfuse_repo):
    backends = contextfuse_repo(
        {"app.py": "def serve():\n    return 1\n"},
        commits=[("add the client", {"client.py": "def call():\n    return 2\n"})],
    )
    assert backends.text is not None and backends.temporal is not None
    assert len(backends.text.search("call", limit=5)) >= 1


def test_a_ranking_strategy_is_assembled_as_a_user_gets_it(contextfuse_repo, contextfuse_assemble):
    from contextfuse.plugin import Ranked, StrategyCapabilities

    class FirstHit:
        name = "first-hit"
        capabilities = StrategyCapabilities(uses_text=True, resource_types=("code",))

        def can_handle(self, request, backends):
            return 0.5

        def rank(self, request, backends, plan_context):
            return [Ranked(h.uri, h.score) for h in backends.text.search(request.query, limit=5)]

        def explain(self):
            return "the first full-text hits"

    backends = contextfuse_repo({"app.py": "def serve():\n    return 1\n"})
    payload = contextfuse_assemble(FirstHit(), backends, "serve", 200)
    assert any(f.detail_depth == 9 and "def serve" in f.content for f in payload.fragments)
    assert payload.total_tokens <= 200
