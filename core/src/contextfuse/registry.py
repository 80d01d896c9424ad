"""The strategy registry: installed plugins plus configured custom strategies, in one place.

At load time it applies the spec's three validation rules and resolves the enabled list (the
configured one, else every installed strategy the store can serve). It enforces the
degradation path there: a configured strategy whose backends the store can never provide is a
``ConfigError`` naming the strategy and the backend, and assembly over a repository needs a
strategy that searches text. The core names no strategy: the path and the default selection
come from what the strategies declare (``quality_score``, required backends,
``resource_types``) and from ``[context.strategies]`` (``config.StrategySelection``).

Per request it decides which strategies run: the named ones (each must be able to serve the
index, else an error naming it and the missing backend), the configured ones that can, or by
default the best strategy of the path that the index can serve plus the strategies of other
resource types that are confident about the request.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from typing import Any

import attrs

from contextfuse.backends import BackendSet
from contextfuse.config import ContextfuseConfig
from contextfuse.errors import ConfigError, MissingStrategyError, StrategyRegistrationError
from contextfuse.models import ContextRequest
from contextfuse.plugin_manager import ContextfusePluginManager
from contextfuse.strategy import AnyStrategy, as_strategy
from contextfuse.validation import validate_strategy

__all__ = ["RegistryEntry", "StrategyRegistry"]

log = logging.getLogger(__name__)


@attrs.frozen
class RegistryEntry:
    """A strategy the registry knows, where it came from and whether it is enabled."""

    name: str
    strategy: AnyStrategy
    source: str  # plugin name, or "custom: module:Class"
    enabled: bool
    reason: str = ""  # why it is disabled, when it is


class StrategyRegistry:
    """Strategies by name, validated once, with the enabled list and degradation path resolved.

    :param plugin_manager: supplies the plugins' strategies.
    :param config: the enabled list, custom strategies, per-strategy settings and the
        selection settings (default: an empty configuration).
    :param provides: the backend kinds the configured store can provide (a backend
        provider's ``provides``); None when unknown (strategies over pre-fetched fragments).
    :param for_repository: this registry serves assembly over a repository: some strategy the
        store can serve must search text, else ``MissingStrategyError``.
    :raises ConfigError: a configured strategy is not installed, or needs a backend the store
        cannot provide.
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
        found: dict[str, tuple[AnyStrategy, str]] = {
            s.strategy.name: (s.strategy, s.plugin) for s in plugin_manager.strategy_sources()
        }
        for name, target in config.custom.items():
            if name in found:
                raise StrategyRegistrationError(
                    f"custom strategy {name!r} ({target}) clashes with the strategy of the same "
                    f"name from plugin {found[name][1]!r}"
                )
            found[name] = (_load_custom(name, target), f"custom: {target}")
        self._check_configured(found)
        self._entries: dict[str, RegistryEntry] = {}
        for name, (strategy, source) in sorted(found.items()):
            reason = self._disabled_reason(name, strategy)
            self._entries[name] = RegistryEntry(name, strategy, source, not reason, reason)
        if for_repository:
            self._check_text_reachable()

    @property
    def notices(self) -> list[str]:
        """What a user should hear about, each said once (fallbacks...)."""
        return list(self._notices)

    def note(self, message: str) -> None:
        """Record a notice (a repeated one is kept once)."""
        self._notices.setdefault(message, None)

    def clear_notices(self) -> None:
        """Forget the notices so far (a long-lived registry says each request's own)."""
        self._notices.clear()

    # ---- load time --------------------------------------------------------------------------

    def _store_lacks(self, strategy: AnyStrategy) -> frozenset[str]:
        if self.provides is None:
            return frozenset()
        return strategy.capabilities.required_backends - self.provides

    def _store_listing(self) -> str:
        return ", ".join(sorted(self.provides or ())) or "none"

    def _check_configured(self, found: dict[str, tuple[AnyStrategy, str]]) -> None:
        """Rule 1, and every configured strategy can be served by the configured store."""
        if self.config.enabled is None:
            return
        source = self.config.enabled_source or "configuration"
        unknown = [n for n in self.config.enabled if n not in found]
        if unknown:
            raise ConfigError(
                f"{source}: context.strategies.enabled names "
                f"{', '.join(repr(n) for n in unknown)}, which no installed plugin or custom "
                f"entry provides (rule 1: every enabled strategy is registered); installed: "
                f"{', '.join(sorted(found)) or '(none)'}"
            )
        for name in self.config.enabled:
            lacking = self._store_lacks(found[name][0])
            if lacking and self.config.settings_for(name).enabled:
                raise ConfigError(
                    f"{source}: strategy {name!r} is enabled (context.strategies.enabled) but "
                    f"needs the {', '.join(sorted(lacking))} backend(s), which the configured "
                    f"store cannot provide (it provides: {self._store_listing()}); remove it "
                    "from the list or configure a store that provides them ([index] store)"
                )

    def _disabled_reason(self, name: str, strategy: AnyStrategy) -> str:
        if self.config.enabled is not None and name not in self.config.enabled:
            return "not in context.strategies.enabled"
        if not self.config.settings_for(name).enabled:
            return f"disabled by context.strategies.{name}.enabled = false"
        lacking = self._store_lacks(strategy)
        if lacking:
            return f"the configured store cannot provide {', '.join(sorted(lacking))}"
        return ""

    def _check_text_reachable(self) -> None:
        """Raise unless some installed strategy can search text in the configured store."""
        texts = [e for e in self._entries.values() if e.strategy.capabilities.uses_text]
        if any(not self._store_lacks(e.strategy) for e in texts):
            return
        path = " -> ".join(e.name for e in self.degradation_path()) or "empty"
        unserved = ", ".join(
            f"{e.name} (needs {', '.join(sorted(self._store_lacks(e.strategy)))})" for e in texts
        )
        hint = self.config.selection.install_hint
        raise MissingStrategyError(
            "no installed strategy can search the repository's text, so the degradation path "
            f"({path}) has no last resort; install a strategy that declares uses_text, such as "
            f"{hint}: pip install {hint}"
            + (f" (installed, but the store cannot serve them: {unserved})" if unserved else "")
        )

    def register(self, name: str, strategy: AnyStrategy, source: str = "code") -> None:
        """Add (or replace) ``strategy`` under ``name``, enabled; it is validated here."""
        validate_strategy(strategy)
        self._entries[name] = RegistryEntry(name, strategy, source, True)

    # ---- queries ----------------------------------------------------------------------------

    def entries(self) -> list[RegistryEntry]:
        """Every known strategy, by name."""
        return list(self._entries.values())

    def get(self, name: str) -> AnyStrategy:
        """The strategy called ``name``; raise naming the known ones."""
        from contextfuse.errors import UnknownStrategyError

        entry = self._entries.get(name)
        if entry is None:
            raise UnknownStrategyError(name, list(self._entries))
        return entry.strategy

    def degradation_path(self) -> list[RegistryEntry]:
        """The order in which requests degrade: every installed strategy that serves all the
        primary resource types, needs only backends the store provides and is not switched
        off in its settings, best declared quality first (then by name)."""
        primary = set(self.config.selection.primary_resource_types)
        on_path = [
            e
            for e in self._entries.values()
            if _serves_all(e.strategy.capabilities.resource_types, primary)
            and not self._store_lacks(e.strategy)
            and self.config.settings_for(e.name).enabled
        ]
        return sorted(on_path, key=lambda e: (-e.strategy.capabilities.quality_score, e.name))

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
    ) -> list[AnyStrategy]:
        """The strategies to run on ``backends`` for ``request``.

        * ``names`` (asked for by name): exactly those; one that cannot serve these backends
          or the request's resource types is a ``ConfigError`` naming it and why.
        * A configured enabled list: every enabled strategy that can serve them; when none
          can, the degradation path from the best of them on.
        * Otherwise (the default): the first strategy of the degradation path that serves the
          request (else the best enabled strategy of the request's resource types), plus every
          other enabled strategy whose ``can_handle`` reaches ``join_confidence`` (for example
          plan context for a request inside a plan).

        A strategy serves the request's resource types when it declares one of them (an empty
        or ``*`` list serves every request; a request without types is served by every one).
        """
        if names:
            return [self._named(name, backends, request) for name in names]
        types = request.resource_types if request is not None else ()
        enabled = [e for e in self._entries.values() if e.enabled]
        if self.config.enabled is not None:
            offered = []
            for entry in enabled:
                reason = self.unavailable_reason(entry, backends) or _type_mismatch(entry, types)
                if reason:
                    self.note(f"strategy {entry.name!r} not offered: {reason}")
                else:
                    offered.append(entry.strategy)
            return offered or [self._degrade(backends, enabled)]
        servable = [
            e
            for e in enabled
            if not self.unavailable_reason(e, backends) and not _type_mismatch(e, types)
        ]
        path = [e for e in self.degradation_path() if e in servable]  # enabled ones only
        best = path[0] if path else _best(servable)
        if best is None:
            return [self._degrade(backends, [])]
        self._note_degradation(best, backends)
        joining = [
            e.strategy
            for e in servable
            if e is not best
            and e not in path
            and request is not None
            and _confidence(e.strategy, request, backends) >= self.config.selection.join_confidence
        ]
        return [best.strategy, *joining]

    def _named(
        self, name: str, backends: BackendSet, request: ContextRequest | None
    ) -> AnyStrategy:
        strategy = self.get(name)  # raises UnknownStrategyError naming the known ones
        entry = self._entries[name]
        types = request.resource_types if request is not None else ()
        reason = self.unavailable_reason(entry, backends) or _type_mismatch(entry, types)
        if reason:
            raise ConfigError(
                f"strategy {name!r} was asked for but cannot serve this request: {reason} "
                f"(the index has: {', '.join(sorted(backends.available())) or 'nothing'})"
            )
        return strategy

    def _note_degradation(self, chosen: RegistryEntry, backends: BackendSet) -> None:
        path = self.degradation_path()
        if path and chosen is not path[0]:
            reason = self.unavailable_reason(path[0], backends) or "it does not serve the request"
            self.note(f"strategy {path[0].name!r} cannot run ({reason}); using {chosen.name!r}")

    def _degrade(self, backends: BackendSet, wanted: Sequence[RegistryEntry]) -> AnyStrategy:
        """The first strategy of the degradation path, from the best of ``wanted`` on, that
        these backends can serve."""
        path = self.degradation_path()
        quality = max((e.strategy.capabilities.quality_score for e in wanted), default=1.0)
        for entry in path:
            if entry.strategy.capabilities.quality_score > quality:
                continue
            if not self.unavailable_reason(entry, backends):
                self.note(f"falling back to strategy {entry.name!r}")
                return entry.strategy
        raise MissingStrategyError(
            "no installed strategy can serve this index (available backends: "
            f"{', '.join(sorted(backends.available())) or 'none'}; degradation path: "
            f"{' -> '.join(e.name for e in path) or 'empty'}); install a strategy that "
            f"declares uses_text, such as {self.config.selection.install_hint}"
        )

    def describe(self, backends: BackendSet | None = None) -> list[dict[str, Any]]:
        """Every strategy with its capabilities, quality and availability (for the CLI)."""
        path = [e.name for e in self.degradation_path()]
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
                    "degradation_rank": path.index(entry.name) + 1 if entry.name in path else None,
                    "explain": entry.strategy.explain(),
                }
            )
        return rows


def _serves_all(declared: Sequence[str], wanted: set[str]) -> bool:
    return "*" in declared or wanted <= set(declared)


def _best(entries: Sequence[RegistryEntry]) -> RegistryEntry | None:
    """The entry of highest declared quality (then by name), or None."""
    ranked = sorted(entries, key=lambda e: (-e.strategy.capabilities.quality_score, e.name))
    return ranked[0] if ranked else None


def _confidence(strategy: AnyStrategy, request: ContextRequest, backends: BackendSet) -> float:
    """``strategy.can_handle``; a strategy that fails to answer does not join (logged)."""
    try:
        return float(strategy.can_handle(request, backends))
    except Exception:
        log.warning("strategy %s failed in can_handle; it does not join", strategy.name)
        return 0.0


def _type_mismatch(entry: RegistryEntry, requested: Sequence[str]) -> str:
    """Why ``entry`` does not serve the request's resource types ("" when it does)."""
    declared = entry.strategy.capabilities.resource_types
    if not requested or not declared or "*" in declared or set(declared) & set(requested):
        return ""
    return (
        f"it serves resource types {', '.join(declared)}, the request asks for "
        f"{', '.join(requested)}"
    )


def _load_custom(name: str, target: str) -> AnyStrategy:
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
