"""Per-strategy circuit breakers: a strategy that keeps failing is rested for a while."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Literal

import attrs

from contextfuse.components.coordination.config import CoordinatorConfig

__all__ = ["CircuitBreaker", "CircuitState"]

#: State of a strategy's circuit breaker.
CircuitState = Literal["closed", "open", "half_open"]


@attrs.define(slots=True)
class _Circuit:
    failures: int = 0
    opened_at: float | None = None
    trial_in_flight: bool = False


class CircuitBreaker:
    """Circuits by strategy name, thread-safe.

    After ``threshold_for(name)`` consecutive failures the circuit opens and the strategy is
    not called for ``circuit_breaker_cooldown`` seconds (by ``clock``); then one trial call
    goes through (half-open): success closes the circuit, failure re-opens it.
    """

    def __init__(self, config: CoordinatorConfig, clock: Callable[[], float]) -> None:
        self._config = config
        self._clock = clock
        self._lock = threading.Lock()
        self._circuits: dict[str, _Circuit] = {}

    def state(self, name: str) -> CircuitState:
        """``closed``, ``open`` (cooling down) or ``half_open`` (a trial call may go through)."""
        with self._lock:
            circuit = self._circuits.get(name)
            if circuit is None or circuit.opened_at is None:
                return "closed"
            if self._clock() - circuit.opened_at >= self._config.circuit_breaker_cooldown:
                return "half_open"
            return "open"

    def consecutive_failures(self, name: str) -> int:
        """Failures of ``name`` since its last success."""
        with self._lock:
            circuit = self._circuits.get(name)
            return 0 if circuit is None else circuit.failures

    def is_blocked(self, name: str) -> bool:
        """True when a call to ``name`` would not go through now (open, or its trial running)."""
        with self._lock:
            circuit = self._circuits.get(name)
            if circuit is None or circuit.opened_at is None:
                return False
            if circuit.trial_in_flight:
                return True
            return self._clock() - circuit.opened_at < self._config.circuit_breaker_cooldown

    def reset(self) -> None:
        """Close every circuit and forget all failures."""
        with self._lock:
            self._circuits.clear()

    def admit(self, name: str) -> tuple[bool, bool]:
        """(may run, is the half-open trial)."""
        with self._lock:
            circuit = self._circuits.get(name)
            if circuit is None or circuit.opened_at is None:
                return True, False
            if circuit.trial_in_flight:
                return False, False
            if self._clock() - circuit.opened_at >= self._config.circuit_breaker_cooldown:
                circuit.trial_in_flight = True
                return True, True
            return False, False

    def record(self, name: str, *, failed: bool | None, trial: bool) -> str | None:
        """Record a run (``failed=None``: did not run). Returns a message when the circuit opens."""
        with self._lock:
            circuit = self._circuits.get(name)
            if failed is None:
                if trial and circuit is not None:
                    circuit.trial_in_flight = False
                return None
            if not failed:
                self._circuits.pop(name, None)
                return None
            if circuit is None:
                circuit = self._circuits[name] = _Circuit()
            circuit.failures += 1
            cooldown = self._config.circuit_breaker_cooldown
            if trial:
                circuit.trial_in_flight = False
                circuit.opened_at = self._clock()
                return f"trial call failed: circuit re-opened for {cooldown:g} s"
            threshold = self._config.threshold_for(name)
            if circuit.opened_at is None and circuit.failures >= threshold:
                circuit.opened_at = self._clock()
                return (
                    f"circuit opened after {circuit.failures} consecutive failures "
                    f"for {cooldown:g} s"
                )
            return None

    def open_message(self, name: str) -> str:
        """Why a call to ``name`` does not go through now."""
        with self._lock:
            circuit = self._circuits.get(name)
            if circuit is None or circuit.opened_at is None:
                return "circuit open"
            if circuit.trial_in_flight:
                return "circuit half-open: a trial call is already running"
            left = self._config.circuit_breaker_cooldown - (self._clock() - circuit.opened_at)
            return (
                f"circuit open after {circuit.failures} consecutive failures; "
                f"next trial in {max(0.0, left):.1f} s"
            )
