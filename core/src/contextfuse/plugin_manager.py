"""The plugin manager: loading plugins safely, collecting strategies, filling component slots.

No manager is built at import time: call ``make_plugin_manager()``. Plugins come from the
entry-point group ``contextfuse`` (each entry point names a module or object carrying
``@hookimpl`` functions) or are registered in code with ``pm.register(obj, name=...)``.
Every entry point is loaded under its own guard, so one broken plugin is reported with its
distribution, version, entry point and cause while the others still load.

Collecting hooks are called once each through ``pm.hook`` (``pm.collect(name)``), observer
hooks once each with every observer isolated (``pm.notify(name, ...)``); see
``contextfuse.hookcalls`` for how each item is attributed to its plugin.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs
import importlib_metadata
import pluggy

from contextfuse import hookcalls, hookspecs
from contextfuse.errors import PluginConflictError, PluginLoadError, StrategyRegistrationError
from contextfuse.hookcalls import Contribution, ObserverFailure, is_wrapper, wrapper_names
from contextfuse.hookspecs import COLLECTING_HOOKS, OBSERVER_HOOKS, PROJECT_NAME
from contextfuse.slots import SLOTS, slot

__all__ = [
    "DEFAULTS_PLUGIN_NAME",
    "ENTRY_POINT_GROUP",
    "TRACE_ENV",
    "ContextfusePluginManager",
    "Contribution",
    "LoadedPlugin",
    "PluginFailure",
    "StrategySource",
    "make_plugin_manager",
]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "contextfuse"
DEFAULTS_PLUGIN_NAME = "contextfuse.defaults"
#: Set to 1 to print every hook call (name, arguments, results) on standard error.
TRACE_ENV = "CONTEXTFUSE_TRACE_HOOKS"

OnError = Literal["warn", "raise"]


@attrs.frozen
class LoadedPlugin:
    """A plugin the manager holds, and where it came from."""

    name: str
    distribution: str = ""
    version: str = ""
    entry_point: str = ""
    hooks: tuple[str, ...] = ()


@attrs.frozen
class PluginFailure:
    """A plugin that could not be loaded, and why."""

    name: str
    distribution: str
    version: str
    entry_point: str
    cause: str

    def describe(self) -> str:
        """One line naming the plugin, its distribution and the cause."""
        origin = f"{self.distribution} {self.version}".strip() or "code"
        where = f" (entry point {self.entry_point})" if self.entry_point else ""
        return f"plugin {self.name!r} from {origin}{where}: {self.cause}"

    def error(self) -> PluginLoadError:
        """This failure as an exception."""
        return PluginLoadError(
            self.describe(),
            plugin=self.name,
            distribution=self.distribution,
            version=self.version,
            entry_point=self.entry_point,
            cause=self.cause,
        )


@attrs.frozen
class StrategySource:
    """A strategy and the plugin that contributed it."""

    strategy: Any
    plugin: str


class ContextfusePluginManager(pluggy.PluginManager):
    """A pluggy manager that records where plugins came from and what failed."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.add_hookspecs(hookspecs)
        self.loaded: list[LoadedPlugin] = []
        self.failures: list[PluginFailure] = []
        self.component_pins: dict[str, str] = {}
        self._strategy_owners: dict[str, str] = {}  # strategy name -> plugin, as validated

    # ---- registration ---------------------------------------------------------------------

    def register(self, plugin: object, name: str | None = None) -> str | None:
        """Register ``plugin`` (pluggy's ``register``), its collecting and observer hook
        implementations made attributable (``contextfuse.hookcalls``)."""
        plugin_name = super().register(plugin, name)
        if plugin_name is not None:
            hookcalls.attribute_implementations(self, plugin, (*COLLECTING_HOOKS, *OBSERVER_HOOKS))
        return plugin_name

    def register_plugin(
        self,
        plugin: object,
        name: str,
        *,
        distribution: str = "",
        version: str = "",
        entry_point: str = "",
    ) -> LoadedPlugin:
        """Register and validate ``plugin``; raise PluginLoadError naming it on any problem.

        On failure nothing of the plugin stays registered.
        """

        def fail(cause: str, exc: BaseException | None = None) -> PluginLoadError:
            error = PluginFailure(name, distribution, version, entry_point, cause).error()
            if exc is not None:
                error.__cause__ = exc
            return error

        if self.has_plugin(name) or self.is_blocked(name):
            raise fail(f"duplicate plugin name {name!r}: a plugin of that name is already loaded")
        try:
            self.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            raise fail(f"bad hook implementation: {exc}", exc) from exc
        except ValueError as exc:
            raise fail(str(exc), exc) from exc
        hooks = tuple(sorted(h.name for h in self.get_hookcallers(plugin) or ()))
        unknown = [h for h in hooks if getattr(self.hook, h).spec is None]
        if unknown:
            self.unregister(plugin)
            raise fail(f"implements unknown hook(s) {unknown}; see contextfuse.hookspecs")
        try:
            self._validate_strategies(plugin, name)
        except Exception as exc:
            self.unregister(plugin)
            raise fail(f"invalid strategy: {exc}", exc) from exc
        record = LoadedPlugin(name, distribution, version, entry_point, hooks)
        self.loaded.append(record)
        return record

    def unregister(self, plugin: Any = None, name: str | None = None) -> Any:
        """Unregister a plugin (pluggy's ``unregister``); its strategy names are free again."""
        removed = super().unregister(plugin, name)
        self._strategy_owners = {
            strategy: owner
            for strategy, owner in self._strategy_owners.items()
            if self.has_plugin(owner)
        }
        return removed

    def _validate_strategies(self, plugin: object, plugin_name: str) -> None:
        """Check the strategies ``plugin`` contributes, calling only its own implementation
        (so that wrappers of the hook run once per collection, not per registration)."""
        from contextfuse.strategy import as_strategy
        from contextfuse.validation import validate_strategy

        hook = self.hook.contextfuse_strategies
        own = [i for i in hook.get_hookimpls() if i.plugin is plugin and not is_wrapper(i)]
        if not own:
            return
        taken = dict(self._strategy_owners)
        for raw in hookcalls.collect_from(own[0], hook.name):
            strategy = as_strategy(raw)
            validate_strategy(strategy)
            if strategy.name in taken:
                raise StrategyRegistrationError(
                    f"strategy name {strategy.name!r} is already provided by plugin "
                    f"{taken[strategy.name]!r}"
                )
            taken[strategy.name] = plugin_name
        self._strategy_owners = taken

    def load_entry_points(
        self,
        *,
        on_error: OnError = "warn",
        block: Iterable[str] = (),
        only: Iterable[str] | None = None,
    ) -> None:
        """Load every plugin of the ``contextfuse`` entry-point group, each under a guard."""
        blocked = set(block)
        wanted = set(only) if only is not None else None
        eps = sorted(
            importlib_metadata.entry_points(group=ENTRY_POINT_GROUP),
            key=lambda e: (e.dist.name if e.dist else "", e.name),
        )
        for ep in eps:
            dist_name = ep.dist.name if ep.dist else ""
            version = ep.dist.version if ep.dist else ""
            if ep.name in blocked or dist_name in blocked:
                continue
            if wanted is not None and ep.name not in wanted and dist_name not in wanted:
                continue
            spec = f"{ep.name} = {ep.value}"
            try:
                try:
                    obj = ep.load()
                except Exception as exc:
                    cause = f"import failed: {type(exc).__name__}: {exc}"
                    raise PluginFailure(ep.name, dist_name, version, spec, cause).error() from exc
                self.register_plugin(
                    obj, ep.name, distribution=dist_name, version=version, entry_point=spec
                )
            except PluginLoadError as error:
                if on_error == "raise":
                    raise
                failure = PluginFailure(ep.name, dist_name, version, spec, error.cause)
                self.failures.append(failure)
                log.warning("skipped %s", failure.describe())

    # ---- calling hooks ----------------------------------------------------------------------

    def collect(self, hook_name: str, **kwargs: Any) -> list[Contribution]:
        """Call collecting hook ``hook_name`` once through ``pm.hook``; every item it gave,
        in call order, with the plugin that gave it (``Contribution(item, plugin)``)."""
        return hookcalls.collect(self, hook_name, **kwargs)

    def notify(self, hook_name: str, **kwargs: Any) -> list[ObserverFailure]:
        """Call observer hook ``hook_name`` once through ``pm.hook``.

        An observer that raises is logged with its plugin's name and the others are still
        called; the failures are returned. A wrapper that raises is logged the same way.
        """
        try:
            failures = hookcalls.notify(self, hook_name, **kwargs)
        except Exception as exc:
            failures = [ObserverFailure(wrapper_names(self, hook_name), exc)]
        for failure in failures:
            log.error(
                "observer %s failed in %s",
                failure.plugin,
                hook_name,
                exc_info=(type(failure.error), failure.error, failure.error.__traceback__),
            )
        return failures

    # ---- strategies -------------------------------------------------------------------------

    def strategy_sources(self) -> list[StrategySource]:
        """Every strategy contributed through ``contextfuse_strategies``, with its plugin.

        :raises StrategyRegistrationError: two plugins contribute strategies of one name.
        """
        from contextfuse.strategy import as_strategy

        found: dict[str, StrategySource] = {}
        for given in self.collect("contextfuse_strategies"):
            source = StrategySource(as_strategy(given.item), given.plugin)
            name = source.strategy.name
            if name in found:
                raise StrategyRegistrationError(
                    f"strategy name {name!r} is provided by plugins {found[name].plugin!r} and "
                    f"{source.plugin!r}"
                )
            found[name] = source
        return list(found.values())

    # ---- component slots ------------------------------------------------------------------

    def component_candidates(self, slot_name: str) -> list[str]:
        """Names of the non-default plugins implementing the component hook of ``slot_name``.

        Wrappers (``wrapper=True``) are not candidates: they wrap whichever plugin answers.
        """
        hook = getattr(self.hook, slot(slot_name).hook)
        return [
            impl.plugin_name
            for impl in hook.get_hookimpls()
            if impl.plugin_name != DEFAULTS_PLUGIN_NAME and not is_wrapper(impl)
        ]

    def component_wrappers(self, slot_name: str) -> list[str]:
        """Names of the plugins that wrap the component hook of ``slot_name``."""
        hook = getattr(self.hook, slot(slot_name).hook)
        return [impl.plugin_name for impl in hook.get_hookimpls() if is_wrapper(impl)]

    def component_provider(self, slot_name: str) -> str | None:
        """The plugin that fills ``slot_name`` (None: the core default); raises on a conflict."""
        candidates = self.component_candidates(slot_name)
        pin = self.component_pins.get(slot_name)
        if pin is not None:
            if pin == DEFAULTS_PLUGIN_NAME or pin == "default":
                return None
            if pin not in candidates:
                raise PluginConflictError(
                    f"configuration pins component {slot_name!r} to plugin {pin!r}, which does "
                    f"not implement it; candidates: {candidates or ['(none)']}"
                )
            return pin
        if len(candidates) > 1:
            raise PluginConflictError(
                f"plugins {sorted(candidates)} all provide the component {slot_name!r}; choose "
                f'one in configuration: [components] {slot_name} = "<plugin name>"'
            )
        return candidates[0] if candidates else None

    def make_component(self, slot_name: str, config: Mapping[str, Any]) -> Any:
        """Build the component of ``slot_name`` by calling its hook.

        The providing plugin answers first, then the core default; the other candidates are
        left out of the call (pluggy's subset hook caller), wrappers stay in.
        """
        hook_name = slot(slot_name).hook
        provider = self.component_provider(slot_name)
        hook = getattr(self.hook, hook_name)
        left_out = [
            impl.plugin
            for impl in hook.get_hookimpls()
            if not is_wrapper(impl) and impl.plugin_name not in (provider, DEFAULTS_PLUGIN_NAME)
        ]
        caller = self.subset_hook_caller(hook_name, remove_plugins=left_out) if left_out else hook
        component = caller(config=dict(config))
        if component is None:
            raise PluginConflictError(f"no plugin provides the component {slot_name!r}")
        return component

    def slot_table(self) -> dict[str, str]:
        """Which plugin fills each of the ten component slots (or why none can)."""
        table: dict[str, str] = {}
        for entry in SLOTS:
            try:
                table[entry.name] = self.component_provider(entry.name) or DEFAULTS_PLUGIN_NAME
            except PluginConflictError as exc:
                table[entry.name] = f"CONFLICT: {exc}"
        return table

    # ---- tracing ----------------------------------------------------------------------------

    def trace_hook_calls(self) -> None:
        """Print every hook call, its arguments and its results on standard error."""
        self.trace.root.setwriter(sys.stderr.write)
        self.enable_tracing()


def make_plugin_manager(
    *,
    autoload: bool | None = None,
    on_error: OnError = "warn",
    block: Sequence[str] = (),
    only: Sequence[str] | None = None,
    component_pins: Mapping[str, str] | None = None,
    defaults: bool = True,
) -> ContextfusePluginManager:
    """Build a fresh plugin manager.

    :param autoload: load the ``contextfuse`` entry points (default: yes, unless the
        environment sets ``CONTEXTFUSE_PLUGIN_AUTOLOAD=0``).
    :param on_error: ``"warn"`` logs and records broken plugins in ``pm.failures``;
        ``"raise"`` raises ``PluginLoadError`` for the first one.
    :param block: entry-point or distribution names not to load (also
        ``CONTEXTFUSE_DISABLE_PLUGINS=a,b``).
    :param only: load only these entry-point or distribution names.
    :param component_pins: ``{slot: plugin name}`` settling which plugin fills a slot.
    :param defaults: register the core's default components and ranking strategies.

    With ``CONTEXTFUSE_TRACE_HOOKS=1`` in the environment every hook call is printed on
    standard error.
    """
    pm = ContextfusePluginManager()
    if defaults:
        from contextfuse import defaults as default_plugin

        pm.register(default_plugin, name=DEFAULTS_PLUGIN_NAME)
        pm._validate_strategies(default_plugin, DEFAULTS_PLUGIN_NAME)
        pm.loaded.append(
            LoadedPlugin(
                DEFAULTS_PLUGIN_NAME,
                "contextfuse-core",
                _core_version(),
                "",
                tuple(sorted(h.name for h in pm.get_hookcallers(default_plugin) or ())),
            )
        )
    pm.component_pins.update(component_pins or {})
    if autoload is None:
        autoload = os.environ.get("CONTEXTFUSE_PLUGIN_AUTOLOAD", "1") != "0"
    env_block = [b for b in os.environ.get("CONTEXTFUSE_DISABLE_PLUGINS", "").split(",") if b]
    if os.environ.get(TRACE_ENV, "0") not in ("", "0"):
        pm.trace_hook_calls()
    if autoload:
        pm.load_entry_points(on_error=on_error, block=[*block, *env_block], only=only)
    return pm


def _core_version() -> str:
    try:
        return importlib_metadata.version("contextfuse-core")
    except importlib_metadata.PackageNotFoundError:
        return ""
