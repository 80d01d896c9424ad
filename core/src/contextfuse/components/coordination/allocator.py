"""``ProportionalBudgetAllocator``: the default BudgetAllocator (shares by confidence)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from contextfuse.components.coordination.config import CoordinatorConfig
from contextfuse.components.protocols import Allocation, Candidate
from contextfuse.models import ContextRequest

__all__ = ["ProportionalBudgetAllocator"]


def _integer_weights(values: Sequence[float]) -> list[int]:
    """Positive finite floats as integers in exactly the same proportions.

    A float is ``n / 2**k``; scaling all of them to the largest ``2**k`` makes them integers,
    so the shares below are computed exactly (and much faster than with ``Fraction``).
    """
    ratios = [float(value).as_integer_ratio() for value in values]
    shift = max(d.bit_length() for _, d in ratios)
    return [n << (shift - d.bit_length()) for n, d in ratios]


def _largest_remainder(weights: Sequence[int], names: Sequence[str], total: int) -> list[int]:
    """Integer shares of ``total`` proportional to ``weights`` (all > 0), summing to ``total``.

    Exact integer arithmetic; the tokens left after flooring go to the largest remainders,
    ties broken by name, then position.
    """
    denominator = sum(weights)
    shares: list[int] = []
    remainders: list[int] = []
    for weight in weights:
        share, remainder = divmod(total * weight, denominator)
        shares.append(share)
        remainders.append(remainder)
    leftover = total - sum(shares)
    if leftover:
        order = sorted(range(len(shares)), key=lambda i: (-remainders[i], names[i], i))
        for i in order[:leftover]:
            shares[i] += 1
    return shares


def _capped_shares(
    weights: Sequence[int], names: Sequence[str], total: int, cap: int | None
) -> list[int]:
    """Proportional shares where no share exceeds ``cap``; excess goes to the uncapped ones.

    Re-sharing the remaining tokens among the uncapped strategies is the same as
    redistributing the excess in proportion to confidence; it is repeated until no share
    exceeds the cap. When every share is capped the rest is left unallocated.
    """
    shares = [0] * len(weights)
    free = list(range(len(weights)))
    remaining = total
    while free and remaining > 0:
        split = _largest_remainder([weights[i] for i in free], [names[i] for i in free], remaining)
        over = {i for i, s in zip(free, split, strict=True) if cap is not None and s > cap}
        if not over:
            for i, s in zip(free, split, strict=True):
                shares[i] = s
            break
        assert cap is not None
        for i in over:
            shares[i] = cap
        remaining -= cap * len(over)
        free = [i for i in free if i not in over]
    return shares


class ProportionalBudgetAllocator:
    """Shares the budget in proportion to confidence (largest-remainder rounding).

    * The shares sum exactly to ``total_budget``, except when every strategy is held at
      ``per_strategy_max_cap``: the rest is then left unallocated.
    * A strategy whose share would fall below ``min_useful_budget`` is excluded and the shares
      are recomputed among the others, weakest first (lowest confidence, then the later name),
      until every remaining share is useful. The best strategy is never excluded: if even the
      whole budget is below ``min_useful_budget`` it gets all of it (context is always produced).
    * ``per_strategy_max_cap`` clamps each share; the excess is re-shared, in proportion, among
      the uncapped strategies, and capped again, until stable.

    Allocations come in confidence desc, name order, each with at least one token.
    """

    def __init__(self, config: CoordinatorConfig | None = None) -> None:
        self._config = config or CoordinatorConfig()

    @property
    def config(self) -> CoordinatorConfig:
        return self._config

    def allocate(
        self, candidates: Sequence[Candidate], total_budget: int, request: ContextRequest
    ) -> list[Allocation]:
        """Allocations whose tokens sum to at most ``total_budget``."""
        if total_budget <= 0:
            return []
        usable: list[tuple[float, str, int, Candidate]] = []
        seen: set[str] = set()
        for index, candidate in enumerate(candidates):
            confidence = candidate.confidence
            if candidate.name in seen or not math.isfinite(confidence) or confidence <= 0.0:
                continue
            seen.add(candidate.name)
            usable.append((-confidence, candidate.name, index, candidate))
        if not usable:
            return []
        usable.sort(key=lambda entry: entry[:3])
        ranked = [entry[3] for entry in usable]
        weights = _integer_weights([c.confidence for c in ranked])
        names = [c.name for c in ranked]
        cap = self._config.per_strategy_max_cap
        minimum = self._config.min_useful_budget
        kept = len(ranked)
        while True:
            shares = _capped_shares(weights[:kept], names[:kept], total_budget, cap)
            # Shares never increase down the ranking, so the last one is the smallest.
            if kept == 1 or shares[-1] >= minimum:
                break
            kept -= 1
        return [
            Allocation(strategy=c.strategy, confidence=c.confidence, tokens=s)
            for c, s in zip(ranked[:kept], shares, strict=True)
            if s > 0
        ]
