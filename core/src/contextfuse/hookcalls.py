"""One pluggy call per collecting hook, knowing which plugin gave what.

A collecting hook (strategies, backend providers, tokenizers...) is called once through
``pm.hook.<name>(register=...)``, so pluggy's ``wrapper=True``, ``tryfirst``/``trylast``,
hook-call monitoring and tracing see one call with every plugin's contribution. An
implementation either calls ``register(item)`` for each item (the form ``llm`` uses) or returns
a sequence of items (the older form; it need not accept ``register``, pluggy's opt-in
arguments).

pluggy's result is one entry per implementation and does not say whose it is, so each
implementation of these hooks is wrapped once, when its plugin is registered
(``attribute_implementations``): during a call made here, the wrapper records what its
plugin gave and returns it as the implementation's result (registered items first, then
returned ones). A ``wrapper=True`` hookimpl therefore receives every plugin's items and may
change the list; the items it adds are attributed to it. During a direct ``pm.hook`` call
the wrapper steps aside.

For observer hooks (``contextfuse_assembly_finished``) the same wrapper catches an
implementation's exception and records it against the plugin, so one failing observer does
not keep the others from being called, and a wrapper still sees one call.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import pluggy

__all__ = [
    "Contribution",
    "ObserverFailure",
    "attribute_implementations",
    "collect",
    "collect_from",
    "is_wrapper",
    "notify",
    "wrapper_names",
]

#: Called by an implementation once per item it contributes.
Register = Callable[[Any], None]


@attrs.frozen
class Contribution:
    """An item a collecting hook returned, and the plugin that gave it."""

    item: Any
    plugin: str


@attrs.frozen
class ObserverFailure:
    """An observer that raised during a notification."""

    plugin: str
    error: Exception


class _Call:
    """What one collecting or notifying call gathers, implementation by implementation."""

    def __init__(self, hook_name: str, *, isolate: bool) -> None:
        self.hook_name = hook_name
        self.isolate = isolate
        self.given: list[Contribution] = []
        self.failures: list[ObserverFailure] = []
        self.unattributed: list[Any] = []  # registered where no wrapper knew the plugin
        self._plugin: str | None = None
        self._registered: list[Any] = []

    def register(self, item: Any) -> None:
        if self._plugin is None:  # a manager that is not a ContextfusePluginManager
            self.unattributed.append(item)
        else:
            self._registered.append(item)

    def run(self, plugin_name: str, function: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        self._plugin, self._registered = plugin_name, []
        try:
            returned = function(*args, **kwargs)
        except Exception as exc:
            if not self.isolate:
                raise
            self.failures.append(ObserverFailure(plugin_name, exc))
            return None
        finally:
            registered, self._plugin = self._registered, None
        if self.isolate:
            return returned
        items = [*registered, *_items(returned, plugin_name, self.hook_name)]
        self.given.extend(Contribution(item, plugin_name) for item in items)
        return items or None


_ACTIVE: contextvars.ContextVar[_Call | None] = contextvars.ContextVar(
    "contextfuse_hook_call", default=None
)


def _items(returned: Any, plugin_name: str, hook_name: str) -> list[Any]:
    if returned is None:
        return []
    if isinstance(returned, (str, bytes)) or not isinstance(returned, Iterable):
        raise TypeError(
            f"plugin {plugin_name!r}: {hook_name} must call register(item) or return a sequence "
            f"of items, not {type(returned).__qualname__}"
        )
    return list(returned)


def _attributed(hook_name: str, plugin_name: str, function: Callable[..., Any]) -> Any:
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        active = _ACTIVE.get()
        if active is None or active.hook_name != hook_name:
            return function(*args, **kwargs)
        return active.run(plugin_name, function, args, kwargs)

    call.__contextfuse_attributed__ = True  # type: ignore[attr-defined]
    return call


def is_wrapper(impl: Any) -> bool:
    """True for a ``wrapper=True`` or old-style ``hookwrapper=True`` implementation."""
    return bool(getattr(impl, "wrapper", False) or getattr(impl, "hookwrapper", False))


def attribute_implementations(
    pm: pluggy.PluginManager, plugin: object, hook_names: Iterable[str]
) -> None:
    """Wrap ``plugin``'s implementations of ``hook_names`` so calls made here attribute them.

    pluggy has already parsed the implementation (its argument names come from the original
    function), so only the function it calls is replaced.
    """
    wanted = set(hook_names)
    for caller in pm.get_hookcallers(plugin) or ():
        if caller.name not in wanted:
            continue
        for impl in caller.get_hookimpls():
            if impl.plugin is plugin and not is_wrapper(impl):
                if getattr(impl.function, "__contextfuse_attributed__", False):
                    continue
                # HookImpl.function is Final for type checkers only: pluggy calls whatever it
                # holds with the arguments it parsed from the original.
                object.__setattr__(
                    impl, "function", _attributed(caller.name, impl.plugin_name, impl.function)
                )


def wrapper_names(pm: pluggy.PluginManager, hook_name: str) -> str:
    """The plugins wrapping ``hook_name``, comma-separated (what wrappers add is theirs)."""
    caller = getattr(pm.hook, hook_name)
    return ", ".join(i.plugin_name for i in caller.get_hookimpls() if is_wrapper(i)) or "?"


def collect(pm: pluggy.PluginManager, hook_name: str, **kwargs: Any) -> list[Contribution]:
    """Call collecting hook ``hook_name`` once; every item with the plugin that gave it.

    The items are those of pluggy's final result (after any wrapper), in call order. Any
    pluggy manager works; only one whose implementations were wrapped on registration (a
    ``ContextfusePluginManager``) knows every item's plugin (``"?"`` otherwise).
    """
    call = _Call(hook_name, isolate=False)
    token = _ACTIVE.set(call)
    try:
        results = getattr(pm.hook, hook_name)(register=call.register, **kwargs)
    finally:
        _ACTIVE.reset(token)
    owner = {id(c.item): c.plugin for c in call.given}
    found: list[Contribution] = []
    for result in results or ():
        for item in _items(result, "a wrapper", hook_name):
            plugin = owner.get(id(item))
            found.append(Contribution(item, plugin or wrapper_names(pm, hook_name)))
    found.extend(Contribution(item, "?") for item in call.unattributed)
    return found


def collect_from(impl: Any, hook_name: str, **kwargs: Any) -> list[Any]:
    """What one implementation of collecting hook ``hook_name`` gives, called directly.

    Used to validate a plugin's own contributions when it is registered.
    """
    call = _Call(hook_name, isolate=False)
    given = {"register": call.register, **kwargs}
    args = [given[name] for name in impl.argnames]
    token = _ACTIVE.set(call)
    try:
        impl.function(*args)
    finally:
        _ACTIVE.reset(token)
    return [c.item for c in call.given]


def notify(pm: pluggy.PluginManager, hook_name: str, **kwargs: Any) -> list[ObserverFailure]:
    """Call observer hook ``hook_name`` once; each implementation's exception is caught and
    returned with its plugin's name, so the other observers are still called."""
    call = _Call(hook_name, isolate=True)
    token = _ACTIVE.set(call)
    try:
        getattr(pm.hook, hook_name)(**kwargs)
    finally:
        _ACTIVE.reset(token)
    return call.failures
