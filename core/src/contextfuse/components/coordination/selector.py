"""``ConfidenceWeightedSelector``: the default StrategySelector (polls ``can_handle``)."""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence

import attrs

from contextfuse.backends import BackendSet
from contextfuse.components.coordination.config import CoordinatorConfig
from contextfuse.components.protocols import Candidate
from contextfuse.models import ContextRequest
from contextfuse.strategy import AnyStrategy

__all__ = [
    "ConfidenceWeightedSelector",
    "Selection",
    "as_confidence",
    "describe_error",
    "short_repr",
]

logger = logging.getLogger(__name__)


@attrs.frozen(slots=True)
class Selection:
    """What the selector decided: the candidates, the strategies that failed, those left out."""

    candidates: tuple[Candidate, ...]
    errors: Mapping[str, str] = attrs.field(factory=dict)  # strategy -> what went wrong
    dropped: Mapping[str, str] = attrs.field(factory=dict)  # strategy -> why it was left out


def describe_error(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def as_confidence(value: object) -> float | None:
    """``value`` as a float in [0, 1], or None when it is not a number or is NaN."""
    if not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if math.isnan(number):
        return None
    return min(1.0, max(0.0, number))


class ConfidenceWeightedSelector:
    """Keeps the strategies that can run and want to, weighted by their ``can_handle`` confidence.

    A strategy is left out when a backend of its ``capabilities.required_backends`` is missing
    (``can_handle`` is then not called), when its confidence is 0, or when its name repeats an
    earlier strategy's. A strategy whose ``name``, ``capabilities`` or ``can_handle`` raises, or
    whose ``can_handle`` returns something other than a number (or NaN), is left out and
    recorded in ``last_errors``. Confidences are clamped to ``[0, 1]``; those of the request's
    ``preferred_strategies`` are then multiplied by ``preference_boost`` and may exceed 1.0.
    """

    def __init__(self, config: CoordinatorConfig | None = None) -> None:
        self._config = config or CoordinatorConfig()
        #: strategy -> what went wrong, for the last ``select`` call.
        self.last_errors: Mapping[str, str] = {}
        #: strategy -> why it was left out (missing backend, confidence 0), last call.
        self.last_dropped: Mapping[str, str] = {}

    @property
    def config(self) -> CoordinatorConfig:
        return self._config

    def select(
        self,
        strategies: Sequence[AnyStrategy],
        request: ContextRequest,
        backends: BackendSet,
    ) -> list[Candidate]:
        """Candidates ordered by confidence desc, then name."""
        return list(self.evaluate(strategies, request, backends).candidates)

    def evaluate(
        self,
        strategies: Iterable[AnyStrategy],
        request: ContextRequest,
        backends: BackendSet,
    ) -> Selection:
        """Like ``select``, also returning the errors and the reasons strategies were left out."""
        available = backends.available()
        preferred = frozenset(request.preferred_strategies)
        boost = self._config.preference_boost
        seen: set[str] = set()
        candidates: list[Candidate] = []
        errors: dict[str, str] = {}
        dropped: dict[str, str] = {}
        for strategy in strategies:
            try:
                name = strategy.name
            except Exception as exc:
                errors[f"<{type(strategy).__qualname__}>"] = f"name raised {describe_error(exc)}"
                continue
            if not isinstance(name, str) or not name:
                errors[f"<{type(strategy).__qualname__}>"] = (
                    f"name is {name!r}, expected a non-empty str"
                )
                continue
            if name in seen:
                errors[name] = "another strategy has the same name; only the first one is used"
                continue
            seen.add(name)
            try:
                required = strategy.capabilities.required_backends
            except Exception as exc:
                errors[name] = f"capabilities raised {describe_error(exc)}"
                continue
            missing = required - available
            if missing:
                dropped[name] = f"missing backend(s): {', '.join(sorted(missing))}"
                continue
            try:
                raw = strategy.can_handle(request, backends)
            except Exception as exc:
                errors[name] = f"can_handle raised {describe_error(exc)}"
                continue
            confidence = as_confidence(raw)
            if confidence is None:
                errors[name] = (
                    f"can_handle returned {short_repr(raw)} ({type(raw).__name__}), "
                    "expected a number in [0, 1]"
                )
                continue
            if confidence <= 0.0:
                dropped[name] = "confidence 0"
                continue
            if name in preferred:
                confidence *= boost
            candidates.append(Candidate(strategy=strategy, confidence=confidence))
        candidates.sort(key=lambda c: (-c.confidence, c.name))
        for name, message in errors.items():
            logger.warning("strategy %s left out: %s", name, message)
        self.last_errors = errors
        self.last_dropped = dropped
        return Selection(candidates=tuple(candidates), errors=errors, dropped=dropped)


def short_repr(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
