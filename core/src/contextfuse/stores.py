"""Knowledge-base stores come from backend providers (hook ``contextfuse_backend_providers``).

A provider has a ``name``, the backend kinds it ``provides`` and ``open(root, config) ->
BackendSet``; it may also ``index(root, config, progress=..., pm=...)`` to build or refresh
the store and say whether one ``exists(root, config)``. The core's provider is the embedded
SQLite store (``sqlite``). A store is named by a provider's name or by a URL whose scheme is
a provider's name (``postgresql://host/db``); ``store_config`` is what the provider receives.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextfuse.errors import ConfigError

__all__ = [
    "DEFAULT_STORE",
    "SQLiteStoreProvider",
    "backend_providers",
    "choose_provider",
    "store_config",
]

log = logging.getLogger(__name__)

#: The store used when configuration names none.
DEFAULT_STORE = "sqlite"


class SQLiteStoreProvider:
    """The embedded store: one SQLite file per repository (``<repo>/.contextfuse/index.db``)."""

    name = DEFAULT_STORE
    provides: frozenset[str] = frozenset({"nodes", "text", "vector", "graph", "temporal"})

    def open(self, root: Path, config: Mapping[str, Any]) -> Any:
        """The backends of ``root``'s index file."""
        from contextfuse.kb import open_backends

        return open_backends(root, index_dir=config.get("dir"))

    def index(self, root: Path, config: Mapping[str, Any], **options: Any) -> Any:
        """Build or refresh ``root``'s index file."""
        from contextfuse.kb import index

        return index(root, index_dir=config.get("dir"), **options)

    def exists(self, root: Path, config: Mapping[str, Any]) -> bool:
        """True when ``root`` has an index file."""
        from contextfuse.kb import index_exists

        return bool(index_exists(root, index_dir=config.get("dir")))


def backend_providers(pm: Any) -> dict[str, Any]:
    """Every provider the plugins contribute, by name (the first of a name wins)."""
    found: dict[str, Any] = {DEFAULT_STORE: SQLiteStoreProvider()}
    for results in pm.hook.contextfuse_backend_providers():
        for provider in results or ():
            if provider.name in found:
                log.warning("backend provider %r ignored: the name is taken", provider.name)
                continue
            found[provider.name] = provider
    return found


def choose_provider(pm: Any, store: str | None) -> Any:
    """The provider that ``store`` (a provider name or a URL) names; default: SQLite.

    :raises ConfigError: no installed provider has that name (the message lists them; a
        URL is shown by its scheme only, never with its credentials).
    """
    wanted = store or DEFAULT_STORE
    scheme = wanted.partition("://")[0] if "://" in wanted else wanted
    providers = backend_providers(pm)
    provider = providers.get(scheme)
    if provider is None:
        raise ConfigError(
            f"no backend provider {scheme!r} is installed (store {scheme}://...); "
            f"installed: {', '.join(sorted(providers))}"
        )
    return provider


def store_config(store: str | None, index_dir: str | Path | None = None) -> dict[str, Any]:
    """What a provider's ``open``/``index``/``exists`` receive: ``dir`` and ``url``."""
    config: dict[str, Any] = {"dir": str(index_dir)} if index_dir else {}
    if store and "://" in store:
        config["url"] = store
    return config
