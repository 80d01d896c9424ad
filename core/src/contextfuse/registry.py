"""The strategy registry: installed plugins plus configured custom strategies, in one place.

At load time it applies the spec's three validation rules, resolves the enabled list
(configured, or ``DEFAULT_ENABLED`` with the uninstalled ones noted once), reports strategies
whose required backends the configured store cannot provide, and, for assembly over a
repository, checks that the fallback chain (arce -> breadth-depth-navigator ->
semantic-embedding -> simple-keyword) reaches a text strategy. Per request it decides which
strategies are offered: a strategy whose backends the index lacks, or whose declared
``resource_types`` do not match the request's, is not offered, and the fallback chain
guarantees that some strategy produces context.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import attrs

from contextfuse.backends import BackendSet
from contextfuse.config import DEFAULT_ENABLED, FALLBACK_CHAIN, ContextfuseConfig
from contextfuse.errors import ConfigError, MissingStrategyError, StrategyRegistrationError
from contextfuse.models import ContextRequest
from contextfuse.plugin_manager import ContextfusePluginManager
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


#: The distribution that provides the last strategy of the fallback chain (text search).
TEXT_STRATEGY_DISTRIBUTION = "contextfuse-simple-keyword"
#: The strategy that brings a plan's context; by default it joins requests with a plan id.
PLAN_STRATEGY = "plan-decision-context"


class StrategyRegistry:
    """Strategies by name, validated once, with the enabled list resolved.

    :param plugin_manager: supplies the plugins' strategies.
    :param config: the enabled list, custom strategies and per-strategy settings (default:
        an empty configuration).
    :param provides: the backend kinds the configured store can provide (a backend
        provider's ``provides``); None when unknown (strategies over pre-fetched fragments).
    :param for_repository: this registry serves assembly over a repository: the fallback
        chain must reach a text strategy the store can serve, else ``MissingStrategyError``.
    """

    def __init__(
        self,
        plugin_manager: ContextfusePluginManager,
        config: ContextfuseConfig | None = None,
        *,
        provides: frozenset[str] | None = None,
        for_repository: bool = False,
    ) -> None:
        config = config or ContextfuseConfig()
        self.config = config
        self.provides = provides
        self._notices: dict[str, None] = {}
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
        self._check_store()
        if for_repository:
            self._check_text_reachable()

    @property
    def notices(self) -> list[str]:
        """What a user should hear about, each said once (skipped defaults, fallbacks...)."""
        return list(self._notices)

    def note(self, message: str) -> None:
        """Record a notice (a repeated one is kept once)."""
        self._notices.setdefault(message, None)

    def _store_lacks(self, strategy: ContextStrategy) -> frozenset[str]:
        if self.provides is None:
            return frozenset()
        return strategy.capabilities.required_backends - self.provides

    def _check_store(self) -> None:
        """Report enabled strategies that the configured store can never serve."""
        for entry in self._entries.values():
            lacking = self._store_lacks(entry.strategy)
            if entry.enabled and lacking:
                self.note(
                    f"strategy {entry.name!r} needs the {', '.join(sorted(lacking))} "
                    "backend(s), which the configured store cannot provide; it will not run"
                )

    def _check_text_reachable(self) -> None:
        """Raise unless some installed strategy can search text in the configured store."""
        for entry in self._entries.values():
            caps = entry.strategy.capabilities
            if caps.uses_text and not self._store_lacks(entry.strategy):
                return
        chain = " -> ".join(FALLBACK_CHAIN)
        installed = [n for n in FALLBACK_CHAIN if n in self._entries]
        raise MissingStrategyError(
            f"no installed strategy can search the repository's text, so the fallback chain "
            f"({chain}) ends nowhere (installed from it: {', '.join(installed) or 'none'}); "
            f"install {TEXT_STRATEGY_DISTRIBUTION}: pip install {TEXT_STRATEGY_DISTRIBUTION}"
        )

    def register(self, name: str, strategy: ContextStrategy, source: str = "code") -> None:
        """Add (or replace) ``strategy`` under ``name``, enabled; it is validated here."""
        validate_strategy(strategy)
        self._entries[name] = RegistryEntry(name, strategy, source, True)

    def _resolve_enabled(self, found: dict[str, tuple[ContextStrategy, str]]) -> set[str]:
        if self.config.enabled is None:
            missing = [n for n in DEFAULT_ENABLED if n not in found]
            self.missing_defaults = tuple(missing)
            for name in missing:
                self.note(
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
        """Why ``entry`` cannot run on ``backends`` ("" when it can).

        Without backends, only the configured store's declared backends are judged.
        """
        if backends is None:
            lacking = self._store_lacks(entry.strategy)
            if lacking:
                return f"the configured store cannot provide {', '.join(sorted(lacking))}"
            return ""
        missing = entry.strategy.capabilities.required_backends - backends.available()
        if missing:
            return f"the index has no {', '.join(sorted(missing))} backend"
        return ""

    def offered(
        self,
        backends: BackendSet,
        names: Sequence[str] | None = None,
        request: ContextRequest | None = None,
    ) -> list[ContextStrategy]:
        """The strategies to run on ``backends``: the named ones, else the enabled ones.

        With no configured enabled list (the defaults), only the best enabled strategy these
        backends can serve runs, in fallback-chain order: arce already fuses the signals of
        the others; a request inside a plan (``plan_id``) also gets ``plan-decision-context``
        when it is enabled. Strategies whose backends are missing, or whose declared
        ``resource_types`` share none with the request's (a strategy's empty or ``*`` list
        matches every request; a request without resource types matches every strategy), are
        not offered. When none is left, the fallback chain (arce -> breadth-depth-navigator ->
        semantic-embedding ->
        simple-keyword) supplies the best installed strategy these backends can serve.
        """
        if names:
            for name in names:
                self.get(name)  # raises UnknownStrategyError naming the known ones
            wanted = [self._entries[n] for n in names]
        else:
            wanted = [e for e in self._entries.values() if e.enabled]
        types = request.resource_types if request is not None else ()
        offered = []
        for entry in wanted:
            reason = self.unavailable_reason(entry, backends) or _type_mismatch(entry, types)
            if reason:
                self.note(f"strategy {entry.name!r} not offered: {reason}")
            else:
                offered.append(entry.strategy)
        if offered and not names and self.config.enabled is None:
            best = self._best_of_chain(offered)
            if best is not None:
                in_plan = request is not None and bool(request.plan_id)
                return [best, *(s for s in offered if in_plan and s.name == PLAN_STRATEGY)]
        if offered:
            return offered
        start = min(
            (FALLBACK_CHAIN.index(e.name) for e in wanted if e.name in FALLBACK_CHAIN),
            default=0,
        )
        for name in FALLBACK_CHAIN[start:]:
            fallback = self._entries.get(name)
            if fallback is not None and not self.unavailable_reason(fallback, backends):
                self.note(f"falling back to strategy {name!r}")
                return [fallback.strategy]
        raise MissingStrategyError(
            "no installed strategy can serve this index (available backends: "
            f"{', '.join(sorted(backends.available())) or 'none'}); install "
            f"{TEXT_STRATEGY_DISTRIBUTION}"
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


def _type_mismatch(entry: RegistryEntry, requested: Sequence[str]) -> str:
    """Why ``entry`` does not serve the request's resource types ("" when it does)."""
    declared = entry.strategy.capabilities.resource_types
    if not requested or not declared or "*" in declared or set(declared) & set(requested):
        return ""
    return (
        f"it serves resource types {', '.join(declared)}, the request asks for "
        f"{', '.join(requested)}"
    )


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
