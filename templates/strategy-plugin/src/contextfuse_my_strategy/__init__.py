"""my-strategy: <what it retrieves> (a contextfuse strategy plugin)."""

from __future__ import annotations

from contextfuse.plugin import (
    BackendSet,
    ContextRequest,
    NodeScoringStrategy,
    StrategyCapabilities,
    hookimpl,
)


class MyStrategy(NodeScoringStrategy):
    """Scores the nodes that full-text search finds, best first."""

    name = "my-strategy"
    capabilities = StrategyCapabilities(uses_text=True, resource_types=("*",), quality_score=0.3)

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        if backends.text is None or not request.query.strip():
            return 0.0
        return 0.5

    def scores(self, request: ContextRequest, backends: BackendSet) -> dict[str, float]:
        hits = backends.text.search(request.query, limit=30)
        return {hit.uri: 1.0 / (1 + rank) for rank, hit in enumerate(hits)}

    def explain(self) -> str:
        return "Nodes that full-text search finds for the request, best first."


@hookimpl
def contextfuse_strategies() -> list[MyStrategy]:
    return [MyStrategy()]
