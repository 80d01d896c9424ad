"""Context assembly over a repository: index it, pick the strategies, run the pipeline.

``ContextAssembler`` keeps the plugin manager, registry, pipeline and open store between
calls, so repeated assemblies pay only for retrieval and fusion. It is a context manager:
``close()`` (or leaving the ``with`` block) closes the store's connections and the executor's
worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from contextfuse.backends import BackendSet
from contextfuse.config import ContextfuseConfig, load_config
from contextfuse.errors import ConfigError, KnowledgeBaseError, UnknownPlanError
from contextfuse.models import ContextBudget, ContextPayload, ContextRequest, PlanContext
from contextfuse.pipeline import ACMSPipeline
from contextfuse.plugin_manager import ContextfusePluginManager, make_plugin_manager
from contextfuse.registry import StrategyRegistry
from contextfuse.stores import choose_provider, store_config
from contextfuse.tokenizer import resolve_tokenizer

__all__ = ["ContextAssembler", "assemble_context"]

ProgressCallback = Callable[[str, int, int], None]


class ContextAssembler:
    """Assembles context for queries about one repository.

    :param repo: the repository (its index lives in ``<repo>/.contextfuse/`` by default).
    :param index_dir: where the index lives, if not the default.
    :param config: configuration; default: the user's and the project's files.
    :param plugin_manager: default: a manager with the installed plugins loaded.
    :param project: the project name of the URIs (``project://<project>/...``); default: the
        name the index has, else the folder's. Another name renames the index at the next
        :meth:`refresh`.
    """

    def __init__(
        self,
        repo: str | Path = ".",
        *,
        index_dir: str | Path | None = None,
        config: ContextfuseConfig | None = None,
        plugin_manager: ContextfusePluginManager | None = None,
        project: str | None = None,
    ) -> None:
        self.repo = Path(repo).resolve()
        self.project = project
        if not self.repo.is_dir():
            raise KnowledgeBaseError(f"{repo}: not a directory")
        self.config = config or load_config(self.repo)
        configured_dir = self.config.index.dir
        self.index_dir = (
            Path(index_dir)
            if index_dir
            else (self.repo / configured_dir if configured_dir else None)
        )
        self.plugin_manager = plugin_manager or make_plugin_manager(
            component_pins=self.config.components
        )
        self.store = choose_provider(self.plugin_manager, self.config.index.store)
        self.tokenizer = resolve_tokenizer(self.plugin_manager, self.config.tokenizer.name)
        self.registry = StrategyRegistry(
            self.plugin_manager,
            self.config,
            provides=frozenset(self.store.provides),
            for_repository=True,
        )
        self.pipeline = ACMSPipeline(
            plugin_manager=self.plugin_manager,
            config=self.config.pipeline_config(),
            tokenizer=self.tokenizer,
            registry=self.registry,
        )
        self._backends: BackendSet | None = None
        self._lock = threading.Lock()

    @property
    def notices(self) -> list[str]:
        """What the registry decided that a user should hear about (skipped strategies...)."""
        return list(self.registry.notices)

    def _store_config(self) -> dict[str, Any]:
        return store_config(self.config.index.store, self.index_dir, self.project)

    def refresh(self, progress: ProgressCallback | None = None, *, force: bool = False) -> Any:
        """Build or refresh the store (incremental) and reopen it; returns what the store did.

        A store without an ``index`` method is kept up to date elsewhere: nothing is done.
        When the store can prove from file-system stats that an index run would change
        nothing, none runs and None is returned; ``force`` runs it regardless.
        """
        build = getattr(self.store, "index", None)
        if build is None:
            return None
        if not force and self.unchanged():
            return None
        self._close_backends()
        return build(
            self.repo,
            self._store_config(),
            progress=progress,
            pm=self.plugin_manager,
            tokenizer=self.tokenizer,
        )

    def unchanged(self) -> bool:
        """True when the store proves that an index run would change nothing."""
        check = getattr(self.store, "unchanged", None)
        if check is None:
            return False
        config = self._store_config()
        return bool(check(self.repo, config, pm=self.plugin_manager, tokenizer=self.tokenizer))

    def has_index(self) -> bool:
        """True when the store holds an index of the repository."""
        exists = getattr(self.store, "exists", None)
        return True if exists is None else bool(exists(self.repo, self._store_config()))

    @property
    def backends(self) -> BackendSet:
        """The open backends of the repository's store (opened on first use)."""
        with self._lock:
            if self._backends is None:
                opened: BackendSet = self.store.open(self.repo, self._store_config())
                if opened.tokenizer is not self.tokenizer:  # count with the configured one
                    opened = opened.model_copy(update={"tokenizer": self.tokenizer})
                self._backends = opened
            return self._backends

    def reopen(self) -> None:
        """Close the store's backends; the next use opens them on the index as it now is."""
        self._close_backends()

    def _close_backends(self) -> None:
        with self._lock:
            backends, self._backends = self._backends, None
        if backends is not None:
            backends.close()

    def close(self) -> None:
        """Close the store's connections and the pipeline's worker threads."""
        self._close_backends()
        self.pipeline.close()

    def __enter__(self) -> ContextAssembler:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

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
        promote: bool = True,
    ) -> ContextPayload:
        """Assemble context for ``query`` within ``budget`` tokens (``reserved`` kept free).

        ``promote=False`` leaves the storage tiers as they are (a warm-up that must leave no
        trace); by default the files delivered move to the hot tier.
        """
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
        offered = self.registry.offered(backends, strategies, request)
        plan = None
        if request.plan_id and backends.plans is not None:
            plan = backends.plans.get_plan(request.plan_id)
            if plan is None:  # as ``plan show`` says: a typo must not pass silently
                raise UnknownPlanError(
                    f"no plan {request.plan_id!r} in this project; `contextfuse plan list` "
                    "lists them"
                )
        payload = self.pipeline.run(
            request,
            backends,
            budget,
            plan_context=plan or PlanContext(plan_id=request.plan_id or ""),
            strategies=[s.name for s in offered],
            preamble=preamble,
            explain=explain,
        )
        if promote:
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
    with ContextAssembler(repo) as assembler:
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
