"""Context assembly over a repository: index it, pick the strategies, run the pipeline.

``ContextAssembler`` keeps the plugin manager, registry, pipeline and open index between
calls, so repeated assemblies pay only for retrieval and fusion.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from contextfuse.backends import BackendSet
from contextfuse.config import ContextfuseConfig, load_config
from contextfuse.errors import ConfigError, KnowledgeBaseError
from contextfuse.models import ContextBudget, ContextPayload, ContextRequest, PlanContext
from contextfuse.pipeline import ACMSPipeline
from contextfuse.plugins import ContextfusePluginManager, make_plugin_manager
from contextfuse.registry import StrategyRegistry
from contextfuse.stores import choose_provider, store_config

__all__ = ["ContextAssembler", "assemble_context"]

ProgressCallback = Callable[[str, int, int], None]


class ContextAssembler:
    """Assembles context for queries about one repository.

    :param repo: the repository (its index lives in ``<repo>/.contextfuse/`` by default).
    :param index_dir: where the index lives, if not the default.
    :param config: configuration; default: the user's and the project's files.
    :param plugin_manager: default: a manager with the installed plugins loaded.
    """

    def __init__(
        self,
        repo: str | Path = ".",
        *,
        index_dir: str | Path | None = None,
        config: ContextfuseConfig | None = None,
        plugin_manager: ContextfusePluginManager | None = None,
    ) -> None:
        self.repo = Path(repo).resolve()
        if not self.repo.is_dir():
            raise KnowledgeBaseError(f"{repo}: not a directory")
        self.config = config or load_config(self.repo)
        configured_dir = self.config.index.get("dir")
        self.index_dir = (
            Path(index_dir)
            if index_dir
            else (self.repo / configured_dir if configured_dir else None)
        )
        self.plugin_manager = plugin_manager or make_plugin_manager(
            component_pins=self.config.components
        )
        # ``[index] store``: a backend provider's name or a URL (default: the SQLite file).
        self.store = choose_provider(self.plugin_manager, self.config.index.get("store"))
        self.registry = StrategyRegistry(self.plugin_manager, self.config)
        self.pipeline = ACMSPipeline(
            plugin_manager=self.plugin_manager, config=self.config.pipeline_config()
        )
        for entry in self.registry.entries():
            if entry.name not in self.pipeline.strategies:
                self.pipeline.register_strategy(entry.name, entry.strategy)
        self._backends: BackendSet | None = None
        self._lock = threading.Lock()

    @property
    def notices(self) -> list[str]:
        """What the registry decided that a user should hear about (skipped strategies...)."""
        return list(self.registry.notices)

    def _store_config(self) -> dict[str, Any]:
        return store_config(self.config.index.get("store"), self.index_dir)

    def refresh(self, progress: ProgressCallback | None = None) -> Any:
        """Build or refresh the index (incremental) and reopen it; returns the index stats."""
        stats = self.store.index(
            self.repo, self._store_config(), progress=progress, pm=self.plugin_manager
        )
        with self._lock:
            stale, self._backends = self._backends, None
        if stale is not None:  # a store's connections (a pool) are released now, not at exit
            stale.nodes.close()
        return stats

    def has_index(self) -> bool:
        """True when an index exists for the repository."""
        return bool(self.store.exists(self.repo, self._store_config()))

    @property
    def backends(self) -> BackendSet:
        """The open backends of the repository's index (opened on first use)."""
        with self._lock:
            if self._backends is None:
                self._backends = self.store.open(self.repo, self._store_config())
            return self._backends

    def assemble(
        self,
        query: str | ContextRequest,
        budget: int | ContextBudget = 8000,
        *,
        reserved: int = 0,
        strategies: Sequence[str] | None = None,
        plan_id: str | None = None,
        explain: bool = False,
        preamble: bool = True,
    ) -> ContextPayload:
        """Assemble context for ``query`` within ``budget`` tokens (``reserved`` kept free)."""
        if isinstance(budget, int):
            if budget - reserved < 1:
                raise ConfigError(
                    f"budget {budget} with {reserved} reserved leaves no tokens to fill"
                )
            budget = ContextBudget(max_tokens=budget, reserved_tokens=reserved)
        request = (
            query
            if isinstance(query, ContextRequest)
            else ContextRequest(
                query=query, plan_id=plan_id, preferred_strategies=tuple(strategies or ())
            )
        )
        backends = self.backends
        offered = self.registry.offered(backends, strategies)
        plan = None
        if request.plan_id and backends.plans is not None:
            plan = backends.plans.get_plan(request.plan_id)
        payload = self.pipeline.run(
            request,
            backends,
            budget,
            plan_context=plan or PlanContext(plan_id=request.plan_id or ""),
            strategies=[s.name for s in offered],
            preamble=preamble,
            explain=explain,
        )
        _promote(backends, payload)
        return payload


def _promote(backends: BackendSet, payload: ContextPayload) -> None:
    """The files an assembly delivered move to the hot tier (see ``contextfuse.kb.tiers``)."""
    from contextfuse.kb.tiers import file_paths, tier_store_of

    tiers = tier_store_of(backends)
    if tiers is not None and payload.fragments:
        uris = (f.provenance.resource_uri for f in payload.fragments)
        tiers.touch(file_paths(uris, backends.nodes.project))


def assemble_context(
    query: str,
    *,
    repo: str | Path = ".",
    budget: int | ContextBudget = 8000,
    reserved: int = 0,
    strategies: Sequence[str] | None = None,
    plan_id: str | None = None,
    explain: bool = False,
    refresh: bool = True,
) -> ContextPayload:
    """Index ``repo`` when needed and assemble context for ``query`` (one-shot convenience)."""
    assembler = ContextAssembler(repo)
    if refresh or not assembler.has_index():
        assembler.refresh()
    return assembler.assemble(
        query,
        budget,
        reserved=reserved,
        strategies=strategies,
        plan_id=plan_id,
        explain=explain,
    )
