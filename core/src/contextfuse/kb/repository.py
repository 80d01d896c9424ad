"""A repository's knowledge base with the installed plugins: build it, open its store.

``index`` runs the index contributors the plugins offer (``contextfuse_index_contributors``)
and ``open_backends`` opens the store a backend provider serves. The embedded SQLite store is
opened without building a plugin manager.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contextfuse.backends import BackendSet
from contextfuse.kb.api import resolve_root
from contextfuse.kb.files import DEFAULT_MAX_FILE_SIZE
from contextfuse.kb.indexer import IndexStats, ProgressCallback
from contextfuse.kb.refresh import run_index
from contextfuse.tokenizer import Tokenizer

__all__ = ["index", "open_backends"]

PathLike = str | os.PathLike[str]


def index(
    path: PathLike = ".",
    *,
    index_dir: PathLike | None = None,
    rebuild: bool = False,
    progress: ProgressCallback | None = None,
    pm: Any = None,
    contributors: Sequence[Any] | None = None,
    tokenizer: Tokenizer | None = None,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    workers: int | None = None,
    project: str | None = None,
) -> IndexStats:
    """Build or refresh the index of a repository and return what was done.

    :param path: the repository (default: the current one).
    :param index_dir: where the index lives (default ``<repo>/.contextfuse``).
    :param rebuild: start from scratch; also replaces a corrupt or foreign index file.
    :param progress: called as ``progress(description, done, total)``.
    :param pm: the pluggy manager whose ``contextfuse_index_contributors`` hook supplies index
        contributors (default: the installed plugins).
    :param contributors: index contributors to run instead of asking ``pm``.
    :param tokenizer: counts the renderings' tokens (default: tiktoken ``cl100k_base``).
    :param max_file_size: larger files are skipped, in bytes.
    :param workers: processes that parse files. Default: one per CPU (at most 4) for large
        runs where processes can fork (Linux, no other thread running), else this process.
        A number above 1 forces worker processes; where they are spawned, the calling script
        needs the usual ``if __name__ == "__main__":`` guard.
    :param project: the project name of the URIs (``project://<project>/...``). Default: the
        name the index has, else the folder's; another name renames the index.
    :raises KnowledgeBaseError: the index cannot be built or its file is corrupt or foreign.
    """
    root = resolve_root(path)
    return run_index(
        root,
        index_dir=Path(index_dir).expanduser() if index_dir else None,
        rebuild=rebuild,
        progress=progress,
        contributors=_contributors(pm) if contributors is None else list(contributors),
        tokenizer=tokenizer,
        max_file_size=max_file_size,
        workers=workers,
        project=project,
    )


def _contributors(pm: Any) -> list[Any]:
    from contextfuse.stores import index_contributors

    if pm is None:
        from contextfuse.plugin_manager import make_plugin_manager

        pm = make_plugin_manager(on_error="warn")
    return index_contributors(pm)


def open_backends(
    path: PathLike = ".",
    *,
    index_dir: PathLike | None = None,
    store: str | None = None,
    pm: Any = None,
) -> BackendSet:
    """The backends of a repository's store, from the backend provider ``store`` names.

    ``store`` is a provider name or a URL whose scheme names one (hook
    ``contextfuse_backend_providers``; ``pm`` is the plugin manager to ask); the default is
    the embedded SQLite store, see ``open_sqlite_backends``, opened without asking the
    plugins unless ``pm`` is given. Close with ``backends.close()``.
    """
    from contextfuse.stores import DEFAULT_STORE, SQLiteStoreProvider, choose_provider, store_config

    root = resolve_root(path)
    config = store_config(store, index_dir)
    if pm is None:
        if store is None or store == DEFAULT_STORE:
            return SQLiteStoreProvider().open(root, config)
        from contextfuse.plugin_manager import make_plugin_manager

        pm = make_plugin_manager(on_error="warn")
    return choose_provider(pm, store).open(root, config)  # type: ignore[no-any-return]
