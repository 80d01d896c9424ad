"""Node vectors computed while files are parsed, in the index's worker processes.

An index contributor that stores one vector per node text (the semantic-embedding plugin's)
would otherwise embed every node after the parse, in the indexer's process alone, while the
other cores wait. One that offers ``vectorizer()`` has its vectors computed by the worker
that parsed each file, normalised and quantised there (``vector.encoded``), and stored
with the file in the index's transaction (:class:`ParsedVectors`). Its ``contribute`` runs
after that as always and finds them stored (``IndexSession.vectorized`` says how many);
whatever the parse did not store (a vectorizer that failed, a store without this path) it
embeds itself.

Nodes of the same content share one vector, and what a node's vector depends on may be more
than its content (the semantic-embedding plugin embeds the node's path too): which node's
vector the content keeps follows the contributor's own rule (``NodeVectorizer.batch``), so
that the index is the same whichever way its vectors were computed.
"""

from __future__ import annotations

import pickle
import sqlite3
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from contextfuse.kb.nodes import chunked
from contextfuse.kb.render import NodeDraft
from contextfuse.kb.vector import NodeVector, VectorRow, encoded

__all__ = ["NodeVectorizer", "ParsedVectors", "picklable", "vectorize", "vectorizers_of"]


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

    @property
    def batch(self) -> int | None:
        """Which node's vector a content of several nodes keeps: with a number, the
        contributor's when it embeds the nodes (of ``kinds``) in index order that many at a
        time, storing the last one of a batch: the last such node of the first batch that
        holds one; None: the first such node in index order."""
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
) -> list[list[NodeVector]]:
    """The vector rows of each file's nodes (one list per file, in order), one call per
    vectorizer for all the files.

    A vectorizer that raises or answers with the wrong shape is dropped from
    ``vectorizers`` (for the rest of the process's run): its nodes stay without vectors here
    and its contributor embeds them after the parse.
    """
    out: list[list[NodeVector]] = [[] for _ in files]
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
            out[position].append((draft.uri, (model, draft.content_hash, *row)))
    return out


class ParsedVectors:
    """Stores the vectors the workers computed, as their files are written, in the index's
    transaction; :meth:`settle` then gives each content the vector of the node its
    contributor's rule picks (``NodeVectorizer.batch``).

    A content that already had a vector keeps it (as ``VectorBackend.missing`` would have
    it). Of a content new in this run the first node written has its vector stored at once;
    the other nodes' are kept until :meth:`settle` (few: identical functions or files).
    """

    def __init__(self, conn: sqlite3.Connection, vectorizers: Sequence[NodeVectorizer]) -> None:
        self.conn = conn
        self.rules = {v.model: (v.kinds, v.batch) for v in vectorizers}
        self.added: Counter[str] = Counter()  # model -> vectors stored in this run
        # Where the index held vectors of a model before the run, the contents stored in
        # this run are told from those (a cold index has none: nothing to remember).
        self.before = {
            model
            for model in self.rules
            if conn.execute("SELECT 1 FROM vectors WHERE model = ? LIMIT 1", (model,)).fetchone()
        }
        self.stored: set[tuple[str, str]] = set()  # (model, content hash), where ``before``
        self.waiting: dict[tuple[str, str], dict[int, VectorRow]] = {}  # node id -> row

    def write(self, vectors: Sequence[tuple[int, VectorRow]]) -> None:
        """Store ``(node id, row)`` of newly written nodes, in index order."""
        by_model: dict[str, list[tuple[int, VectorRow]]] = {}
        for node_id, row in vectors:
            if row[0] in self.rules:
                by_model.setdefault(row[0], []).append((node_id, row))
        for model, rows in by_model.items():
            present: set[str] = set()
            for chunk in chunked(sorted({row[1] for _, row in rows})):
                marks = ",".join("?" * len(chunk))
                present.update(
                    digest
                    for (digest,) in self.conn.execute(
                        "SELECT content_hash FROM vectors WHERE model = ? AND content_hash IN"
                        f" ({marks})",
                        [model, *chunk],
                    )
                )
            new: dict[str, VectorRow] = {}
            for node_id, row in rows:
                key = (model, row[1])
                if row[1] in new or (
                    row[1] in present and (model not in self.before or key in self.stored)
                ):
                    self.waiting.setdefault(key, {})[node_id] = row  # stored in this run
                elif row[1] not in present:
                    new[row[1]] = row
            self.conn.executemany(
                "INSERT INTO vectors (model, content_hash, scale, codes, vector)"
                " VALUES (?, ?, ?, ?, ?)",
                list(new.values()),
            )
            self.added[model] += len(new)
            if model in self.before:
                self.stored.update((model, digest) for digest in new)

    def settle(self) -> None:
        """Give each content stored in this run with several nodes the vector of the node
        its contributor's rule picks (once every file is written)."""
        by_model: dict[str, list[str]] = {}
        for model, digest in self.waiting:
            by_model.setdefault(model, []).append(digest)
        for model, digests in by_model.items():
            kinds, batch = self.rules[model]
            kind_filter = f" AND kind IN ({','.join('?' * len(kinds))})" if kinds else ""
            order: list[int] = []
            if batch:  # positions in index order of every node that gets a vector
                order = [
                    node_id
                    for (node_id,) in self.conn.execute(
                        f"SELECT id FROM nodes WHERE 1{kind_filter} ORDER BY id", list(kinds or ())
                    )
                ]
            nodes: dict[str, list[int]] = {}
            for chunk in chunked(sorted(digests)):
                marks = ",".join("?" * len(chunk))
                for digest, node_id in self.conn.execute(
                    f"SELECT content_hash, id FROM nodes WHERE content_hash IN ({marks})"
                    f"{kind_filter} ORDER BY id",
                    [*chunk, *(kinds or ())],
                ):
                    nodes.setdefault(digest, []).append(node_id)
            replaced = []
            for digest in digests:
                ids = nodes.get(digest, [])
                if not ids:
                    continue
                chosen = ids[0]
                if batch:
                    first = bisect_left(order, ids[0]) // batch
                    chosen = max(i for i in ids if bisect_left(order, i) // batch == first)
                row = self.waiting[model, digest].get(chosen)
                if row is not None:  # else the stored row is the chosen node's already
                    replaced.append(row)
            self.conn.executemany(
                "INSERT OR REPLACE INTO vectors (model, content_hash, scale, codes, vector)"
                " VALUES (?, ?, ?, ?, ?)",
                replaced,
            )
        self.waiting.clear()
