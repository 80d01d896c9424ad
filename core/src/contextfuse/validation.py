"""The registry's validation rules for a strategy (spec/strategy-registry.md)."""

from __future__ import annotations

import re
from typing import Any

from contextfuse.errors import StrategyRegistrationError
from contextfuse.models import StrategyCapabilities

__all__ = ["STRATEGY_NAME_PATTERN", "validate_strategy"]

STRATEGY_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def validate_strategy(strategy: Any) -> None:
    """Check a strategy against the registry rules; raise naming the strategy and the rule.

    Rule 1 (every enabled strategy is registered) is the registry's own check. Here:
    the name is a slug, the capabilities are ``StrategyCapabilities`` that declare at least
    one backend (rule 2) and the supported resource types (rule 3).
    """
    name = getattr(strategy, "name", None)
    if not isinstance(name, str) or not STRATEGY_NAME_PATTERN.match(name):
        raise StrategyRegistrationError(
            f"strategy {name!r} ({type(strategy).__qualname__}): the name must be a lowercase "
            "slug of letters, digits, '.', '_' or '-' (at most 64 characters)"
        )
    caps = strategy.capabilities
    if not isinstance(caps, StrategyCapabilities):
        raise StrategyRegistrationError(
            f"strategy {name!r}: capabilities must be a StrategyCapabilities, "
            f"got {type(caps).__qualname__}"
        )
    if not caps.required_backends:
        raise StrategyRegistrationError(
            f"strategy {name!r} violates rule 2 (every strategy declares at least one backend "
            "capability): set uses_text, uses_vector, uses_graph, uses_temporal, uses_plans "
            "or uses_fragments"
        )
    if not caps.resource_types:
        raise StrategyRegistrationError(
            f"strategy {name!r} violates rule 3 (every strategy declares supported resource "
            "types): set resource_types, e.g. ('code',) or ('*',) for all"
        )
