"""Knowledge-base stores come from backend providers (hook ``contextfuse_backend_providers``).

A provider has a ``name``, the backend kinds it ``provides`` and ``open(root, config) ->
BackendSet``; it may also ``index(root, config, progress=..., pm=...)`` to build or refresh
the store, say whether one ``exists(root, config)`` and whether an ``index`` run would change
nothing (``unchanged(root, config, pm=..., tokenizer=...)``, from file-system stats). The
core's provider is the embedded SQLite store (``sqlite``), which
``contextfuse.kb.open_backends`` opens without building a plugin manager.
Configuration picks one with ``[index] store = "<name>"`` or a URL whose scheme is a
provider's name (``store = "postgresql://host/db"``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from contextfuse.backends import BackendSet
from contextfuse.errors import ConfigError

__all__ = [
    "DEFAULT_STORE",
    "BackendProvider",
    "SQLiteStoreProvider",
    "backend_providers",
    "choose_provider",
    "index_contributors",
    "store_config",
]

log = logging.getLogger(__name__)

#: The store used when configuration names none.
DEFAULT_STORE = "sqlite"


@runtime_checkable
class BackendProvider(Protocol):
    """Opens a repository's knowledge base as a ``BackendSet``."""

    @property
    def name(self) -> str:
        """The provider's name; also the URL scheme that selects it."""
        ...

    @property
    def provides(self) -> frozenset[str]:
        """The backend kinds this store can provide (``text``, ``vector``, ``graph``...)."""
        ...

    def open(self, root: Path, config: Mapping[str, Any]) -> BackendSet:
        """The backends of ``root``'s store; ``config`` is the ``[index]`` section."""
        ...


class SQLiteStoreProvider:
    """The embedded store: one SQLite file per repository (``<repo>/.contextfuse/index.db``)."""

    name = DEFAULT_STORE
    provides: frozenset[str] = frozenset({"nodes", "text", "vector", "graph", "temporal", "plans"})

    def open(self, root: Path, config: Mapping[str, Any]) -> BackendSet:
        from contextfuse.kb.api import open_sqlite_backends

        return open_sqlite_backends(root, index_dir=_index_dir(root, config))

    def index(
        self,
        root: Path,
        config: Mapping[str, Any],
        *,
        pm: Any = None,
        contributors: Sequence[Any] | None = None,
        **options: Any,
    ) -> Any:
        """Build or refresh the index; the index contributors are ``pm``'s (none without)."""
        from contextfuse.kb.api import resolve_root
        from contextfuse.kb.refresh import run_index

        if contributors is None:
            contributors = index_contributors(pm) if pm is not None else []
        return run_index(
            resolve_root(root),
            index_dir=_index_dir(root, config),
            contributors=list(contributors),
            project=config.get("project"),
            **options,
        )

    def exists(self, root: Path, config: Mapping[str, Any]) -> bool:
        from contextfuse.kb.api import index_exists

        return bool(index_exists(root, index_dir=_index_dir(root, config)))

    def unchanged(
        self, root: Path, config: Mapping[str, Any], *, pm: Any = None, **options: Any
    ) -> bool:
        """True when an ``index`` run with the same arguments would change nothing."""
        from contextfuse.kb.api import index_unchanged

        contributors = index_contributors(pm) if pm is not None else []
        return index_unchanged(
            root,
            index_dir=_index_dir(root, config),
            contributors=contributors,
            project=config.get("project"),
            **options,
        )


def _index_dir(root: Path, config: Mapping[str, Any]) -> Path | None:
    configured = config.get("dir")
    return root / str(configured) if configured else None


def backend_providers(pm: Any) -> dict[str, Any]:
    """Every provider the plugins contribute, by name (the first of a name wins)."""
    found: dict[str, Any] = {}
    for given in pm.collect("contextfuse_backend_providers"):
        provider = given.item
        if provider.name in found:
            log.warning(
                "backend provider %r of plugin %s ignored: the name is taken",
                provider.name,
                given.plugin,
            )
            continue
        found[provider.name] = provider
    return found


def index_contributors(pm: Any) -> list[Any]:
    """The index contributors the plugins of ``pm`` offer (any pluggy manager)."""
    from contextfuse.hookcalls import collect

    return [given.item for given in collect(pm, "contextfuse_index_contributors")]


def choose_provider(pm: Any, store: str | None) -> Any:
    """The provider that ``store`` (a provider name or a URL) names; default: SQLite."""
    wanted = store or DEFAULT_STORE
    scheme = wanted.partition("://")[0] if "://" in wanted else wanted
    providers = backend_providers(pm)
    provider = providers.get(scheme)
    if provider is None:
        # Only the scheme of a URL: it may carry credentials, which are never printed.
        shown = f"{scheme}://..." if "://" in wanted else repr(wanted)
        raise ConfigError(
            f"no backend provider {scheme!r} is installed (store {shown}); installed: "
            f"{', '.join(sorted(providers)) or '(none)'}",
            section="index",
            key="store",
        )
    return provider


def store_config(
    store: str | None,
    index_dir: str | os.PathLike[str] | None = None,
    project: str | None = None,
) -> dict[str, Any]:
    """What a provider's ``open``/``index``/``exists`` receive: ``dir``, ``url`` and
    ``project`` (the name of the project's URIs; absent: the store's own, else the folder's)."""
    config: dict[str, Any] = {"dir": str(index_dir)} if index_dir else {}
    if store and "://" in store:
        config["url"] = store
    if project is not None:
        config["project"] = project
    return config
