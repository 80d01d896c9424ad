"""An index run that leaves behind what makes the next command fast.

Every index run of the embedded store goes through :func:`run_index`: it stats the
repository's folders before the run (``contextfuse.kb.freshness``), runs
``contextfuse.kb.indexer.build_index``, then records the snapshot that lets the next refresh
prove the index current from stats alone, and writes the array files of the index's new
generation (``contextfuse.kb.arrays``) so that the first assembly after it maps them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb import freshness

if TYPE_CHECKING:
    from contextfuse.kb.indexer import IndexStats
    from contextfuse.tokenizer import Tokenizer

__all__ = ["run_index"]


def run_index(
    root: Path,
    *,
    index_dir: Path | None,
    contributors: Sequence[Any],
    tokenizer: Tokenizer | None = None,
    max_file_size: int | None = None,
    **options: Any,
) -> IndexStats:
    """``build_index`` of ``root`` (``options``: rebuild, progress, workers), recorded."""
    from contextfuse.kb.api import index_dir_of
    from contextfuse.kb.files import DEFAULT_MAX_FILE_SIZE
    from contextfuse.kb.indexer import build_index, prepare_index_dir
    from contextfuse.tokenizer import default_tokenizer

    directory = index_dir_of(root, index_dir)
    tokenizer = tokenizer or default_tokenizer()
    limit = DEFAULT_MAX_FILE_SIZE if max_file_size is None else max_file_size
    prepare_index_dir(directory, root)
    before = freshness.survey(root, directory)  # before the run: a change during it shows
    stats = build_index(
        root,
        index_dir=directory,
        contributors=list(contributors),
        tokenizer=tokenizer,
        max_file_size=limit,
        **options,
    )
    freshness.write_snapshot(
        directory, before, freshness.settings(tokenizer.name, limit, contributors)
    )
    _map_arrays(root, directory)
    return stats


def _map_arrays(root: Path, directory: Path) -> None:
    """Write the array files of the new generation now, not in the first assembly after it.

    The vector matrix of each model and the graph's arrays of every edge kind (what the
    built-in strategies read); a strategy asking for other kinds builds those on first use.
    """
    import numpy as np

    from contextfuse.kb.api import open_sqlite_backends

    try:
        backends = open_sqlite_backends(root, index_dir=directory)
    except KnowledgeBaseError:  # the first assembly will say what is wrong
        return
    try:
        if backends.vector is not None:
            for model in backends.vector.models():
                backends.vector.search(model, np.zeros(1, dtype=np.float32), limit=0)
        if backends.graph is not None:
            backends.graph.personalized_pagerank({}, limit=1)
    finally:
        backends.close()
