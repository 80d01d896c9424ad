"""Node vectors computed while files are parsed, in the index's worker processes.

An index contributor that stores one vector per node text (the semantic-embedding plugin's)
would otherwise embed every node after the parse, in the indexer's process alone, while the
other cores wait. One that offers ``vectorizer()`` has its vectors computed by the worker
that parsed each file, normalised and quantised there (``vector.encoded``), and stored
with the file in the index's transaction. Its ``contribute`` runs after that as always and
finds them stored (``IndexSession.vectorized`` says how many); whatever the parse did not
store (a vectorizer that failed, a store without this path) it embeds itself.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from contextfuse.kb.render import NodeDraft
from contextfuse.kb.vector import VectorRow, encoded

__all__ = ["NodeVectorizer", "picklable", "vectorize", "vectorizers_of"]


@runtime_checkable
class NodeVectorizer(Protocol):
    """What an index contributor's optional ``vectorizer()`` returns.

    It runs in the indexer's worker processes (forked, or given a pickled copy where they are
    spawned: one that cannot be pickled then runs in the indexer's process only), once per
    batch of files. Vectors must depend on the node's text alone (not on the batch), so
    that a node gets the same vector whichever way it is computed.
    """

    @property
    def model(self) -> str:
        """The name the vectors are stored under (``VectorBackend.upsert``'s ``model``)."""
        ...

    @property
    def kinds(self) -> Sequence[str] | None:
        """The node kinds that get a vector; None: every kind."""
        ...

    def vectors(self, nodes: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        """One row per ``(uri, text)``: the node's URI and its full text (depth 9)."""
        ...


def vectorizers_of(contributors: Sequence[Any]) -> list[NodeVectorizer]:
    """The vectorizers the contributors offer; one that fails to give its own gives none
    (its ``contribute`` still runs and reports the failure)."""
    found: list[NodeVectorizer] = []
    for contributor in contributors:
        offer = getattr(contributor, "vectorizer", None)
        if not callable(offer):
            continue
        try:
            vectorizer = offer()
        except Exception:  # a plugin's failure must not cost the user the index
            continue
        if isinstance(vectorizer, NodeVectorizer):
            found.append(vectorizer)
    return found


def picklable(vectorizers: Sequence[NodeVectorizer]) -> list[NodeVectorizer]:
    """The vectorizers that can be sent to spawned worker processes."""
    kept = []
    for vectorizer in vectorizers:
        try:
            pickle.dumps(vectorizer)
        except Exception:  # e.g. a lock or an open model inside
            continue
        kept.append(vectorizer)
    return kept


def vectorize(
    vectorizers: list[NodeVectorizer], files: Sequence[Sequence[NodeDraft]]
) -> list[list[VectorRow]]:
    """The vector rows of each file's nodes (one list per file, in order), one call per
    vectorizer for all the files.

    A vectorizer that raises or answers with the wrong shape is dropped from
    ``vectorizers`` (for the rest of the process's run): its nodes stay without vectors here
    and its contributor embeds them after the parse.
    """
    out: list[list[VectorRow]] = [[] for _ in files]
    for vectorizer in list(vectorizers):
        kinds = None if vectorizer.kinds is None else frozenset(vectorizer.kinds)
        chosen = [
            (position, draft)
            for position, drafts in enumerate(files)
            for draft in drafts
            if kinds is None or draft.kind in kinds
        ]
        if not chosen:
            continue
        try:
            model = vectorizer.model
            matrix = np.asarray(
                vectorizer.vectors([(draft.uri, draft.texts[0]) for _, draft in chosen]),
                dtype=np.float32,
            )
            if matrix.ndim != 2 or matrix.shape[0] != len(chosen):
                raise ValueError(f"{matrix.shape} vectors for {len(chosen)} nodes")
        except Exception:  # its contribute() embeds these nodes, and reports what fails
            vectorizers.remove(vectorizer)
            continue
        for (position, draft), row in zip(chosen, encoded(matrix), strict=True):
            out[position].append((model, draft.content_hash, *row))
    return out
