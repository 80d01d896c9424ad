"""The strategy registry: installed plugins plus configured custom strategies.

It applies the spec's three validation rules at load time, resolves the enabled list
(configured, or the spec's defaults with the uninstalled ones skipped), and decides which
strategies are offered for a given index: a strategy whose backends the index lacks is not
offered, and the fallback chain guarantees that some strategy produces context.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import attrs

from contextfuse.backends import BackendSet
from contextfuse.config import DEFAULT_ENABLED, FALLBACK_CHAIN, ContextfuseConfig
from contextfuse.errors import ConfigError, StrategyRegistrationError
from contextfuse.plugins import ContextfusePluginManager
from contextfuse.strategy import ContextStrategy, as_strategy
from contextfuse.validation import validate_strategy

__all__ = ["RegistryEntry", "StrategyRegistry"]


@attrs.frozen
class RegistryEntry:
    """A strategy the registry knows, where it came from and whether it is enabled."""

    name: str
    strategy: ContextStrategy
    source: str  # plugin name, or "custom: module:Class"
    enabled: bool
    reason: str = ""  # why it is disabled, when it is


class StrategyRegistry:
    """Strategies by name, validated, with the enabled list resolved."""

    def __init__(self, plugin_manager: ContextfusePluginManager, config: ContextfuseConfig) -> None:
        self.config = config
        self.notices: list[str] = []
        found: dict[str, tuple[ContextStrategy, str]] = {
            s.strategy.name: (s.strategy, s.plugin) for s in plugin_manager.strategy_sources()
        }
        for name, target in config.custom.items():
            if name in found:
                raise StrategyRegistrationError(
                    f"custom strategy {name!r} ({target}) clashes with the strategy of the same "
                    f"name from plugin {found[name][1]!r}"
                )
            found[name] = (_load_custom(name, target), f"custom: {target}")
        self.missing_defaults: tuple[str, ...] = ()
        enabled = self._resolve_enabled(found)
        self._entries: dict[str, RegistryEntry] = {}
        for name, (strategy, source) in sorted(found.items()):
            settings = config.settings_for(name)
            reason = ""
            if name not in enabled:
                reason = "not in context.strategies.enabled"
            elif not settings.enabled:
                reason = f"disabled by context.strategies.{name}.enabled = false"
            self._entries[name] = RegistryEntry(name, strategy, source, not reason, reason)

    def _resolve_enabled(self, found: dict[str, tuple[ContextStrategy, str]]) -> set[str]:
        if self.config.enabled is None:
            missing = [n for n in DEFAULT_ENABLED if n not in found]
            self.missing_defaults = tuple(missing)
            for name in missing:
                self.notices.append(
                    f"default strategy {name!r} is not installed; skipped "
                    f"(pip install contextfuse-{name})"
                )
            return {n for n in DEFAULT_ENABLED if n in found}
        unknown = [n for n in self.config.enabled if n not in found]
        if unknown:
            raise ConfigError(
                f"{self.config.enabled_source}: context.strategies.enabled names "
                f"{', '.join(repr(n) for n in unknown)}, which no installed plugin or custom "
                f"entry provides (rule 1: every enabled strategy is registered); installed: "
                f"{', '.join(sorted(found)) or '(none)'}"
            )
        return set(self.config.enabled)

    # ---- queries ----------------------------------------------------------------------------

    def entries(self) -> list[RegistryEntry]:
        """Every known strategy, by name."""
        return list(self._entries.values())

    def get(self, name: str) -> ContextStrategy:
        """The strategy called ``name``; raise naming the known ones."""
        from contextfuse.errors import UnknownStrategyError

        entry = self._entries.get(name)
        if entry is None:
            raise UnknownStrategyError(name, list(self._entries))
        return entry.strategy

    def unavailable_reason(self, entry: RegistryEntry, backends: BackendSet | None) -> str:
        """Why ``entry`` cannot run on ``backends`` ("" when it can)."""
        if backends is None:
            return ""
        missing = entry.strategy.capabilities.required_backends - backends.available()
        if missing:
            return f"the index has no {', '.join(sorted(missing))} backend"
        return ""

    def offered(
        self, backends: BackendSet, names: Sequence[str] | None = None
    ) -> list[ContextStrategy]:
        """The strategies to run on ``backends``: the named ones, else the enabled ones.

        With no configured enabled list (the defaults), only the best enabled strategy these
        backends can serve runs, in fallback-chain order: arce already fuses the signals of
        the others. Strategies whose backends are missing are not offered. When none is left, the
        fallback chain (arce -> breadth-depth-navigator -> semantic-embedding ->
        simple-keyword) supplies the best installed strategy these backends can serve.
        """
        if names:
            for name in names:
                self.get(name)  # raises UnknownStrategyError naming the known ones
            wanted = [self._entries[n] for n in names]
        else:
            wanted = [e for e in self._entries.values() if e.enabled]
        offered = [e.strategy for e in wanted if not self.unavailable_reason(e, backends)]
        for entry in wanted:
            reason = self.unavailable_reason(entry, backends)
            if reason:
                self.notices.append(f"strategy {entry.name!r} not offered: {reason}")
        if offered and not names and self.config.enabled is None:
            best = self._best_of_chain(offered)
            if best is not None:
                return [best]
        if offered:
            return offered
        start = min(
            (FALLBACK_CHAIN.index(e.name) for e in wanted if e.name in FALLBACK_CHAIN),
            default=0,
        )
        for name in FALLBACK_CHAIN[start:]:
            fallback = self._entries.get(name)
            if fallback is not None and not self.unavailable_reason(fallback, backends):
                self.notices.append(f"falling back to strategy {name!r}")
                return [fallback.strategy]
        raise ConfigError(
            "no installed strategy can serve this index (available backends: "
            f"{', '.join(sorted(backends.available())) or 'none'}); install "
            "contextfuse-simple-keyword"
        )

    @staticmethod
    def _best_of_chain(strategies: Sequence[ContextStrategy]) -> ContextStrategy | None:
        """The first of ``strategies`` in fallback-chain order, or None when none is in it."""
        by_name = {s.name: s for s in strategies}
        for name in FALLBACK_CHAIN:
            if name in by_name:
                return by_name[name]
        return None

    def describe(self, backends: BackendSet | None = None) -> list[dict[str, Any]]:
        """Every strategy with its capabilities, quality and availability (for the CLI)."""
        rows: list[dict[str, Any]] = []
        for entry in self._entries.values():
            caps = entry.strategy.capabilities
            unavailable = self.unavailable_reason(entry, backends)
            rows.append(
                {
                    "name": entry.name,
                    "source": entry.source,
                    "quality_score": caps.quality_score,
                    "capabilities": caps.model_dump(),
                    "enabled": entry.enabled,
                    "available": entry.enabled and not unavailable,
                    "reason": entry.reason or unavailable,
                    "explain": entry.strategy.explain(),
                }
            )
        for name in self.missing_defaults:
            rows.append(
                {
                    "name": name,
                    "source": "",
                    "quality_score": None,
                    "capabilities": None,
                    "enabled": True,
                    "available": False,
                    "reason": f"not installed (pip install contextfuse-{name})",
                    "explain": "",
                }
            )
        return rows


def _load_custom(name: str, target: str) -> ContextStrategy:
    """Import and instantiate ``module:Class`` for custom strategy ``name``, validated."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(
            f"custom strategy {name!r}: {target!r} is not of the form 'package.module:Class'"
        )
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:
        raise ConfigError(
            f"custom strategy {name!r}: cannot import {target!r}: {type(exc).__name__}: {exc}"
        ) from exc
    try:
        instance = obj() if isinstance(obj, type) else obj
        strategy = as_strategy(instance, name)
        validate_strategy(strategy)
    except (TypeError, StrategyRegistrationError) as exc:
        raise ConfigError(f"custom strategy {name!r} ({target}): {exc}") from exc
    if strategy.name != name:
        raise ConfigError(
            f"custom strategy {name!r} ({target}) calls itself {strategy.name!r}; the "
            "configured name and the strategy's name must agree"
        )
    return strategy
