"""Declarations that do no work: where a question's words meet a contract, not its code.

An interface's method, an abstract method or a base class's default hook (``return null;``,
``pass``, ``raise NotImplementedError``) is documented with the very words a question uses,
so it ranks among the best matches; but the code that does what is asked is elsewhere: in
the methods that override it, and in the dispatchers that call it (a plugin manager asking
each plugin's ``shouldAllowRequest`` before it applies its own default policy). This finds
the stubs among the best matches and ranks the code they stand for: their **delegates**.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from contextfuse.plugin import BackendSet, Node, is_test_path

__all__ = ["MAX_OVERRIDING_TYPES", "Delegation", "delegation", "is_stub_source"]

_CALLABLE_KINDS = frozenset({"function", "method"})
_FULL_SOURCE = 9
#: Rank damping of a stub's contribution, as in reciprocal rank fusion.
_K = 10
#: At most this many inheriting types are searched for a stub's overrides: a base class of
#: thousands of subclasses costs a bounded number of reads.
MAX_OVERRIDING_TYPES = 50

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
#: A whole-line comment (``//`` or ``#``, not a Rust ``#[attribute]`` or ``#!``).
_LINE_COMMENT = re.compile(r"(?m)^\s*(?://|#(?![\[!])).*$")
_DOCSTRING = re.compile(r"(?s)\"\"\".*?\"\"\"|'''.*?'''")
_PYTHON_DEF = re.compile(r"(?:async\s+)?def\s")
#: The colon that opens a Python function's body (after its parameters and return type).
_PYTHON_BODY = re.compile(r"\)\s*(?:->[^:\n]*)?:(?=\s*(?:\n|$)|\s*(?:pass|\.\.\.)\s*$)")
_PUNCTUATION = re.compile(r"[{}(),;]+")
#: A statement that does nothing: returns a constant (or is one, as a Rust function's last
#: expression), or says it is not implemented.
_IDLE = re.compile(
    r"(?:return\s+)?(?:null|nil|None|undefined|false|true|False|True|0|-1|\"\"|''|\{\}|\[\]"
    r"|Ok\(\(\)\))"
    r"|return|pass|\.\.\."
    r"|raise\s+NotImplementedError\b.*"
    r"|throw\s+new\s+\w*(?:Unsupported|NotImplemented)\w*\(.*\)"
    r"|(?:todo|unimplemented)!\(.*\)"
)


def is_stub_source(source: str) -> bool:
    """True when a function's source declares it without doing any work.

    Comments and docstrings aside, a stub is a signature alone (an interface's or an
    abstract method, ending in ``;``) or a signature whose body is at most one idle
    statement: a constant returned, ``pass``, ``...``, "not implemented".
    """
    code = _LINE_COMMENT.sub("", _DOCSTRING.sub("", _BLOCK_COMMENT.sub("", source)))
    lines = [line.strip() for line in code.splitlines()]
    lines = [line for line in lines if line and not line.startswith("@")]  # annotations
    if not lines:
        return False
    text = "\n".join(lines)
    brace = text.find("{")
    colon = _PYTHON_BODY.search(text) if _PYTHON_DEF.match(text) else None
    if colon is not None:
        body = text[colon.end() :]
    elif brace >= 0:
        body = text[brace + 1 : text.rfind("}")]
    else:  # no body: a declaration ends with ``;`` (a field initialised with ``=`` is none)
        return text.endswith(";") and "=" not in text.split("(", 1)[0]
    statements = [s.strip() for s in re.split(r";|\n", body)]
    statements = [s for s in statements if s and not _PUNCTUATION.fullmatch(s)]
    return len(statements) <= 1 and all(_IDLE.fullmatch(s) for s in statements)


@attrs.frozen
class Delegation:
    """The stubs among the best matches, and the code they stand for (best first)."""

    stubs: frozenset[str] = frozenset()
    delegates: tuple[str, ...] = ()


def delegation(
    best: Sequence[str], backends: BackendSet, limit: int, considered: int = 30
) -> Delegation:
    """The stubs among the first ``considered`` of ``best`` (URIs, best first), and their
    delegates: the functions and methods that call them, and the methods of the same name
    in the types that inherit theirs.

    A stub contributes ``1 / (K + rank)`` to each of its delegates, so the delegates of the
    best stubs come first and one that stands for several stubs gains from each. Delegates
    in test files are left out.
    """
    graph = backends.graph
    window = list(best[:considered])
    if graph is None or not window:
        return Delegation()
    nodes = backends.nodes.get_nodes(window)
    callables = [u for u in window if u in nodes and nodes[u].kind in _CALLABLE_KINDS]
    sources = backends.nodes.get_renderings(callables, depths=(_FULL_SOURCE,)) if callables else {}
    stubs: list[str] = []
    scores: dict[str, float] = {}
    for rank, uri in enumerate(window, start=1):
        rendering = sources.get(uri, {}).get(_FULL_SOURCE)
        if rendering is None or not is_stub_source(rendering.content):
            continue
        stubs.append(uri)
        for delegate in _delegates(nodes[uri], backends):
            scores[delegate] = scores.get(delegate, 0.0) + 1.0 / (_K + rank)
    for uri in stubs:
        scores.pop(uri, None)
    found = backends.nodes.get_nodes(list(scores)) if scores else {}
    kept = [
        u
        for u in scores
        if u in found and found[u].kind in _CALLABLE_KINDS and not is_test_path(found[u].path)
    ]
    ranked = sorted(kept, key=lambda u: (-scores[u], u))[:limit]
    return Delegation(frozenset(stubs), tuple(ranked))


def _delegates(stub: Node, backends: BackendSet) -> set[str]:
    """The callers of ``stub`` and its overrides in the types that inherit its own."""
    graph = backends.graph
    if graph is None:
        return set()
    found = {edge.source for edge in graph.neighbors(stub.uri, ("calls",), "in")}
    owner = stub.parent
    if owner and owner != stub.file_uri:  # a method: look for its overrides
        for edge in graph.neighbors(owner, ("inherits",), "in")[:MAX_OVERRIDING_TYPES]:
            for child in backends.nodes.children(edge.source):
                if child.name == stub.name and child.kind in _CALLABLE_KINDS:
                    found.add(child.uri)
    found.discard(stub.uri)
    return found
