"""``CoordinationResult``: what one coordination round produced."""

from __future__ import annotations

from operator import itemgetter

from pydantic import BaseModel, ConfigDict, Field

from contextfuse.models import ContextFragment, ContextStrategyResult

__all__ = [
    "CIRCUIT_OPEN",
    "ERROR",
    "NOT_STARTED",
    "OK",
    "SKIPPED",
    "TIMEOUT",
    "CoordinationResult",
    "in_strategy_order",
    "succeeded",
]

# Values of ``ContextStrategyResult.stats["status"]`` written by the executor.
OK = "ok"
ERROR = "error"
TIMEOUT = "timeout"
NOT_STARTED = "not_started"
CIRCUIT_OPEN = "circuit_open"
SKIPPED = "skipped"


class CoordinationResult(BaseModel):
    """The outcome of one coordination round (``StrategyCoordinator.coordinate``).

    ``fragments``: the fragments of every successful run, concatenated in allocation order,
    each run's fragments in the strategy's own order (not re-sorted). ``strategies_used``: the
    strategies that ran successfully and contributed at least one fragment. ``allocations``:
    ``(name, confidence, tokens)`` per strategy given tokens. ``circuit_broken``: strategies
    skipped because their circuit was open. ``results``: one result per allocation.
    ``errors``: ``"<strategy>: <message>"`` for selection failures, failed runs and trims.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    fragments: list[ContextFragment] = Field(default_factory=list)
    strategies_used: list[str] = Field(default_factory=list)
    allocations: list[tuple[str, float, int]] = Field(default_factory=list)
    circuit_broken: list[str] = Field(default_factory=list)
    results: list[ContextStrategyResult] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    total_budget: int = Field(default=0, ge=0)

    @property
    def tokens_used(self) -> int:
        """Tokens of all the fragments (before any fusion)."""
        return sum(f.token_count for f in self.fragments)

    def ranks(self) -> dict[str, dict[str, int]]:
        """strategy -> {uko_node: rank in that strategy's own order} (``FragmentScorer``)."""
        ranks: dict[str, dict[str, int]] = {}
        for result in self.results:
            order = result.stats.get("rank_order")
            if not isinstance(order, list) or not succeeded(result):
                continue
            ranks[result.strategy_name] = {node: rank for rank, node in enumerate(order)}
        return ranks

    def sources(self) -> dict[str, list[str]]:
        """uko_node -> the strategies that returned it, in allocation order."""
        sources: dict[str, list[str]] = {}
        for result in self.results:
            for node in dict.fromkeys(f.uko_node for f in result.fragments):
                sources.setdefault(node, []).append(result.strategy_name)
        return sources


def succeeded(result: ContextStrategyResult) -> bool:
    status = result.stats.get("status")
    if status is not None:
        return bool(status == OK)
    return bool(result.fragments) or not result.errors


def in_strategy_order(result: ContextStrategyResult) -> list[ContextFragment]:
    """The result's fragments in the order the strategy returned them."""
    fragments = list(result.fragments)
    order = result.stats.get("fragment_order")
    if isinstance(order, list) and len(order) == len(fragments):
        # Each id's first position, in one pass (hundreds of fragments a request).
        position = dict(zip(reversed(order), range(len(order) - 1, -1, -1), strict=True))
        places = [position.get(f.fragment_id, -1) for f in fragments]
        if -1 not in places:
            ordered = sorted(zip(places, fragments, strict=True), key=itemgetter(0))
            return [fragment for _, fragment in ordered]
    ranks = result.stats.get("rank_order")
    if isinstance(ranks, list):
        rank = {node: i for i, node in reversed(list(enumerate(ranks)))}
        return sorted(fragments, key=lambda f: rank.get(f.uko_node, len(rank)))
    return fragments
