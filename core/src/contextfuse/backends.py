"""Backend protocols, the records they return, and the ``BackendSet`` strategies receive.

A knowledge base is served to strategies as a ``BackendSet``: a node store (nodes and their
renderings at several detail depths) plus optional text, vector, graph, temporal and plan
backends. Strategies declare in their capabilities which of these they need; the
``StrategySelector`` drops strategies whose backends are absent.

Pre-fetched fragments (the v1 API) are served as ``FragmentBackend``, so one strategy
protocol covers both uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
from pydantic import BaseModel, ConfigDict

from contextfuse.models import ContextFragment, Decision, Plan, PlanContext

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "BACKEND_KINDS",
    "SYMBOL_KINDS",
    "BackendSet",
    "Commit",
    "Edge",
    "FileChange",
    "FragmentBackend",
    "GraphBackend",
    "Node",
    "NodeStore",
    "PhraseSearch",
    "PlanStore",
    "RegexSearch",
    "Rendering",
    "SearchHit",
    "TemporalBackend",
    "TextBackend",
    "VectorBackend",
]

BACKEND_KINDS = ("nodes", "text", "vector", "graph", "temporal", "plans", "fragments")

#: Node kinds that are declarations of code, in every language the index parses (a Python
#: class, a Go struct, a Rust trait, impl block or macro, a Java record...): what an agent reads
#: or edits. Values bound to names (``variable``) and blocks of a large file's top-level
#: statements (``block``) are code too, but not declarations.
SYMBOL_KINDS = frozenset(
    {
        "annotation",
        "class",
        "enum",
        "function",
        "impl",
        "interface",
        "macro",
        "method",
        "module",
        "namespace",
        "record",
        "struct",
        "trait",
        "type",
        "union",
    }
)


# ---- records (attrs: created in bulk on the hot path) -----------------------------------------


@attrs.frozen(slots=True)
class Node:
    """A knowledge-base node: a file, a symbol in it, a document section, a commit, a plan.

    ``uri`` is ``project://<project>/<path>`` for a file and ``...#<qualname>`` for a symbol.
    ``line_start``/``line_end`` are 1-based and inclusive (0 for nodes without lines).
    """

    uri: str
    path: str
    kind: str  # file | module | class | function | method | section | commit | plan | decision
    name: str
    qualname: str = ""
    parent: str | None = None
    language: str = ""
    line_start: int = 0
    line_end: int = 0
    resource_type: str = "code"
    summary: str = ""

    @property
    def file_uri(self) -> str:
        """The URI of the file this node belongs to."""
        return self.uri.split("#", 1)[0]

    @property
    def location(self) -> str:
        """``L<first>-L<last>`` or ``""`` for nodes without lines."""
        return f"L{self.line_start}-L{self.line_end}" if self.line_start else ""


@attrs.frozen(slots=True)
class Rendering:
    """One rendering of a node at one detail depth, with its real token count."""

    depth: int
    content: str
    token_count: int
    line_start: int = 0
    line_end: int = 0

    @property
    def location(self) -> str:
        return f"L{self.line_start}-L{self.line_end}" if self.line_start else ""


@attrs.frozen(slots=True)
class SearchHit:
    """A node found by a search, with the backend's score (higher is better)."""

    uri: str
    score: float


@attrs.frozen(slots=True)
class Edge:
    """A directed graph edge. ``kind``: contains, imports, calls, references, inherits."""

    source: str
    target: str
    kind: str
    weight: float = 1.0


@attrs.frozen(slots=True)
class FileChange:
    """What one commit did to one file: lines added and removed, symbols whose code changed.

    ``symbols`` are the names git's hunk headers give (the enclosing function or class).
    """

    path: str
    added: int = 0
    removed: int = 0
    symbols: tuple[str, ...] = ()


@attrs.frozen(slots=True)
class Commit:
    """A commit of the repository's history. ``changes`` is filled where it was asked for."""

    sha: str
    timestamp: int  # seconds since the epoch, UTC
    author: str
    message: str
    files: tuple[str, ...] = ()
    changes: tuple[FileChange, ...] = ()

    @property
    def subject(self) -> str:
        """The first line of the message."""
        return self.message.split("\n", 1)[0]


# ---- protocols --------------------------------------------------------------------------------


@runtime_checkable
class NodeStore(Protocol):
    """Nodes and their renderings. Every knowledge base has one."""

    @property
    def project(self) -> str:
        """The project name used in ``project://<project>/...`` URIs."""
        ...

    def get_nodes(self, uris: Sequence[str]) -> dict[str, Node]:
        """The nodes with these URIs (missing ones are left out)."""
        ...

    def get_renderings(
        self,
        uris: Sequence[str],
        depths: Sequence[int] | None = None,
        max_tokens: int | None = None,
    ) -> dict[str, dict[int, Rendering]]:
        """``{uri: {depth: rendering}}`` for these nodes; all depths when ``depths`` is None.

        ``max_tokens``: renderings of more tokens are left out (never read).
        """
        ...

    def children(self, uri: str) -> list[Node]:
        """Nodes directly contained in ``uri`` (a file's top-level symbols, a class's methods)."""
        ...

    def files(self) -> list[Node]:
        """Every file node, ordered by path."""
        ...

    def find_symbols(self, name: str, limit: int = 20) -> list[Node]:
        """Nodes whose name or dotted qualname equals ``name`` (exact, case-sensitive)."""
        ...

    def find_paths(self, fragment: str, limit: int = 20) -> list[Node]:
        """File nodes whose path ends with ``fragment`` (``a/b.py`` matches ``x/a/b.py``)."""
        ...


@runtime_checkable
class TextBackend(Protocol):
    """Full-text search (BM25 over code-aware terms)."""

    def search(
        self, query: str, limit: int = 50, kinds: Sequence[str] | None = None
    ) -> list[SearchHit]:
        """Best-matching nodes for a free-text query, best first."""
        ...


@runtime_checkable
class RegexSearch(Protocol):
    """Optional extension of a :class:`TextBackend`: regular-expression search.

    A text backend that also has ``search_regex`` offers it (check with
    ``isinstance(backend, RegexSearch)``); one without it is still a complete TextBackend.
    """

    def search_regex(
        self,
        pattern: str,
        limit: int = 50,
        kinds: Sequence[str] | None = None,
        ignore_case: bool = False,
    ) -> list[SearchHit]:
        """Nodes whose own text matches ``pattern``, most matching lines first.

        RE2 syntax, matched in time linear in the text (no backreferences or look-around);
        ``^`` and ``$`` match at line boundaries. A match counts for the innermost node (of
        ``kinds``, if given) holding the line it starts on; the score is that node's number
        of matching lines. Raises ``contextfuse.errors.InvalidPatternError``, naming what is
        wrong, for a pattern that cannot be searched.
        """
        ...


@runtime_checkable
class PhraseSearch(Protocol):
    """Optional extension of a :class:`TextBackend`: search for words written in a row.

    A text backend that also has ``search_phrase`` offers it (check with
    ``isinstance(backend, PhraseSearch)``); one without it is still a complete TextBackend.
    """

    def search_phrase(
        self, words: Sequence[str], limit: int = 50, kinds: Sequence[str] | None = None
    ) -> list[SearchHit]:
        """Nodes whose own text holds ``words`` one after the other, best first.

        Words are compared as the text backend compares terms (case ignored); any characters
        other than word characters may separate them in the text (``--collect-only`` holds
        ``collect``, ``only``).
        """
        ...


@runtime_checkable
class VectorBackend(Protocol):
    """Vectors of nodes, computed at index time by an index contributor."""

    def models(self) -> list[str]:
        """Names of the embedding models that have vectors stored."""
        ...

    def search(
        self, model: str, vector: npt.NDArray[np.float32], limit: int = 50
    ) -> list[SearchHit]:
        """Nearest nodes by cosine similarity for vectors of ``model``, best first."""
        ...

    def missing(self, model: str, items: Mapping[str, str]) -> list[str]:
        """Of ``{uri: content_hash}``, the URIs with no vector cached for that hash."""
        ...

    def upsert(
        self,
        model: str,
        uris: Sequence[str],
        content_hashes: Sequence[str],
        vectors: npt.NDArray[np.float32],
    ) -> None:
        """Store vectors (normalised at insert) for these nodes."""
        ...


@runtime_checkable
class GraphBackend(Protocol):
    """The code graph: containment, imports, calls, references and inheritance."""

    def neighbors(
        self, uri: str, kinds: Sequence[str] | None = None, direction: str = "both"
    ) -> list[Edge]:
        """Edges touching ``uri`` (``direction``: out, in or both)."""
        ...

    def personalized_pagerank(
        self,
        seeds: Mapping[str, float],
        limit: int = 50,
        kinds: Sequence[str] | None = None,
        damping: float = 0.85,
    ) -> list[SearchHit]:
        """Nodes ranked by personalized PageRank from weighted seed nodes, best first."""
        ...


@runtime_checkable
class TemporalBackend(Protocol):
    """The repository's history."""

    def commits(self, limit: int = 50, path: str | None = None) -> list[Commit]:
        """Most recent commits first, optionally only those touching ``path``."""
        ...

    def co_changed(self, path: str, limit: int = 20) -> list[tuple[str, int]]:
        """Files changed together with ``path``, with how often, most often first."""
        ...

    def search(self, query: str, limit: int = 50) -> list[SearchHit]:
        """Commits whose message, paths or changed code match ``query``, best first.

        Hit URIs are ``commit://<project>/<sha>``.
        """
        ...

    def get_commits(self, shas: Sequence[str]) -> dict[str, Commit]:
        """These commits with their files and changes (missing ones are left out)."""
        ...

    def current_path(self, path: str) -> str:
        """Where ``path`` lives now, following the renames of the history (itself if none)."""
        ...


@runtime_checkable
class PlanStore(Protocol):
    """Plans and the decisions taken under them (URIs ``plan://`` and ``decision://``)."""

    def get_plan(self, plan_id: str) -> PlanContext | None:
        """The plan with its ancestors and their decisions, nearest first; None if unknown."""
        ...

    def search(self, query: str, limit: int = 50) -> list[SearchHit]:
        """Plans and decisions whose title or body match ``query``, best first."""
        ...

    def get_records(self, uris: Sequence[str]) -> dict[str, Plan | Decision]:
        """The plans and decisions with these URIs (missing ones are left out)."""
        ...

    def get_renderings(
        self, uris: Sequence[str], depths: Sequence[int] | None = None
    ) -> dict[str, dict[int, Rendering]]:
        """``{uri: {depth: rendering}}`` of plans and decisions (depths 9, 4, 0)."""
        ...


class FragmentBackend:
    """Pre-fetched fragments served as a backend (the v1 ``assemble(fragments, ...)`` API)."""

    def __init__(self, fragments: Sequence[ContextFragment]) -> None:
        self._fragments = tuple(fragments)

    @property
    def fragments(self) -> tuple[ContextFragment, ...]:
        """The fragments, in the order they were given."""
        return self._fragments

    def __len__(self) -> int:
        return len(self._fragments)


class BackendSet(BaseModel):
    """The backends available to strategies for one request. Absent backends are None."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, extra="forbid")

    nodes: Any = None
    text: Any = None
    vector: Any = None
    graph: Any = None
    temporal: Any = None
    plans: Any = None
    fragments: FragmentBackend | None = None
    tokenizer: Any = None

    def available(self) -> frozenset[str]:
        """Names of the backends present (see ``BACKEND_KINDS``)."""
        return frozenset(k for k in BACKEND_KINDS if getattr(self, k) is not None)

    def has(self, *kinds: str) -> bool:
        """True when every named backend is present."""
        return all(getattr(self, k, None) is not None for k in kinds)

    def close(self) -> None:
        """Close every backend that can be closed (each once); the set is unusable after."""
        seen: set[int] = set()
        for kind in (*BACKEND_KINDS, "tokenizer"):
            backend = getattr(self, kind, None)
            close = getattr(backend, "close", None)
            if backend is None or id(backend) in seen or not callable(close):
                continue
            seen.add(id(backend))
            close()

    def reading(self) -> AbstractContextManager[object]:
        """One consistent view of the index for the reads this thread makes inside, where the
        node store's database offers one (``snapshot()``, an SQLite read transaction); else a
        context that does nothing.

        A strategy's many reads then see one state of the index and share one transaction
        instead of opening one each.
        """
        database = getattr(self.nodes, "database", None)
        snapshot = getattr(database, "snapshot", None)
        return snapshot() if callable(snapshot) else nullcontext()

    def __enter__(self) -> BackendSet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @classmethod
    def coerce(cls, value: BackendSet | Mapping[str, Any] | None) -> BackendSet:
        """Accept a backend set or a mapping ``{kind: backend}``.

        A mapping value of ``True`` (the spec's ``{"vector": True}`` example) marks a backend
        as present without an implementation; strategies that query it get a placeholder
        that raises on use.
        """
        if isinstance(value, BackendSet):
            return value
        if value is None:
            return cls()
        unknown = set(value) - set(BACKEND_KINDS) - {"tokenizer"}
        if unknown:
            raise ValueError(
                f"unknown backend kind(s) {sorted(unknown)}; known: {list(BACKEND_KINDS)}"
            )
        fields = {k: (_Declared(k) if v is True else v) for k, v in value.items() if v}
        return cls.model_validate(fields)


class _Declared:
    """A backend declared present (``{"graph": True}``) but with no implementation behind it."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __getattr__(self, item: str) -> Any:
        raise AttributeError(
            f"the {self.kind!r} backend was declared present but has no implementation "
            f"(tried to use {item!r})"
        )
