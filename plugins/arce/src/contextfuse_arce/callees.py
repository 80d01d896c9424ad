"""The functions the best matches call: where a dispatcher's real work is done.

A question in plain words finds the function whose name and body share its words (the
dispatcher, the entry point) more easily than the helpers that do the work, whose names
share none (``exec`` finds ``getPlugin``; ``Find`` calls ``findNext``). The helpers a best
match calls are evidence in their own right: this ranks them by how high their callers rank.

A callee is found two ways: a ``calls`` edge of the code graph out of the caller, and, since
the graph resolves only some calls (a method called on ``this`` in Java, on a receiver in
Go), a name the caller's source calls (``name(``) that is a function of the caller's own
file or a method of the caller's own type there. Methods of other types are left to the
graph: a name such as ``append`` or ``render`` would match every type's method of that name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from contextfuse.plugin import BackendSet, Node, is_test_path

__all__ = ["CALLABLE_KINDS", "callee_ranking"]

#: Kinds of node that do work when called (a class is shown by its methods instead).
CALLABLE_KINDS = frozenset({"function", "method"})
#: A name followed by an opening parenthesis: a call in every language the index parses.
_CALL = re.compile(r"\b([A-Za-z_$][\w$]*)\s*\(")
_FULL_SOURCE = 9
#: Rank damping of a caller's contribution, as in reciprocal rank fusion.
_K = 10


def _owner(node: Node) -> str:
    """The qualified name of the type a method belongs to, ``""`` for a top-level function."""
    return node.qualname.rpartition(".")[0]


def _callables_by_name(backends: BackendSet, container: str, owner: str) -> dict[str, list[str]]:
    """Name -> URIs of the functions or methods in ``container`` that belong to ``owner``."""
    found: dict[str, list[str]] = {}
    for node in backends.nodes.children(container):
        if node.kind in CALLABLE_KINDS and _owner(node) == owner:
            found.setdefault(node.name, []).append(node.uri)
    return found


def _called_by(
    callers: Mapping[str, float],
    backends: BackendSet,
    local: dict[tuple[str, str], dict[str, list[str]]],
) -> dict[str, float]:
    """Each callee of ``callers`` with the sum of its callers' weights."""
    nodes = backends.nodes.get_nodes(list(callers))
    uris = [u for u in callers if u in nodes and nodes[u].kind in CALLABLE_KINDS]
    sources = backends.nodes.get_renderings(uris, depths=(_FULL_SOURCE,)) if uris else {}
    scores: dict[str, float] = {}
    for uri in uris:
        found: set[str] = set()
        if backends.graph is not None:
            found.update(e.target for e in backends.graph.neighbors(uri, ("calls",), "out"))
        rendering = sources.get(uri, {}).get(_FULL_SOURCE)
        if rendering is not None:
            node = nodes[uri]
            scopes = {(node.file_uri, ""), (node.parent or node.file_uri, _owner(node))}
            called = set(_CALL.findall(rendering.content))
            for scope in scopes:
                if scope not in local:
                    local[scope] = _callables_by_name(backends, *scope)
                for name in called:
                    found.update(local[scope].get(name, ()))
        found.discard(uri)
        for callee in found:
            scores[callee] = scores.get(callee, 0.0) + callers[uri]
    return scores


def callee_ranking(
    callers: Sequence[str], backends: BackendSet, limit: int, second: int = 0
) -> list[str]:
    """Functions and methods called by ``callers`` (best first), best-called first.

    A callee scores ``1 / (K + rank)`` for each caller that calls it, so the helpers of the
    best caller come first and a helper several of them call gains from each. The ``second``
    best callees' own callees follow (a dispatcher's helper often hands the work on), each
    scoring half its caller's score. Callers that are not functions or methods, and callees
    in test files, are left out.
    """
    # Each container's callables, read once: the file's functions and each type's methods.
    local: dict[tuple[str, str], dict[str, list[str]]] = {}
    weights = {uri: 1.0 / (_K + rank) for rank, uri in enumerate(callers, start=1)}
    scores = _called_by(weights, backends, local)
    if second > 0 and scores:
        best = sorted((u for u in scores if u not in weights), key=lambda u: (-scores[u], u))
        hop = {u: scores[u] / 2 for u in best[:second]}
        for callee, score in _called_by(hop, backends, local).items():
            if callee not in weights:
                scores[callee] = scores.get(callee, 0.0) + score
    if not scores:
        return []
    kinds = backends.nodes.get_nodes(list(scores))
    kept = [
        u
        for u in scores
        if u in kinds and kinds[u].kind in CALLABLE_KINDS and not is_test_path(kinds[u].path)
    ]
    return sorted(kept, key=lambda u: (-scores[u], u))[:limit]
