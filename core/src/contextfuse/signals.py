"""What a request and a node's place in the repository say about relevance.

A toolkit for strategy authors, not a strategy: reciprocal rank fusion of ranked lists, the
request's intent (does it ask about tests or documentation?) and the prior that follows from
it, so that implementation code ranks above its tests and above prose unless the request
asks for those.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

import attrs

from contextfuse.backends import Node, NodeStore

__all__ = [
    "RRF_K",
    "RequestIntent",
    "is_record_path",
    "is_test_path",
    "node_prior",
    "reciprocal_rank_fusion",
    "uri_path",
    "weigh_by_prior",
]

#: The usual RRF constant: a list's first items count, but not overwhelmingly.
RRF_K = 60

_TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "testdata"})
_TEST_NAME = re.compile(
    r"^(?:test_.*|.*_tests?\.\w+|.*[._-](?:test|spec)\.\w+|conftest\.py|.*Tests?\.(?:java|kt|cs))$"
)
_ASKS_TESTS = re.compile(
    r"\b(?:(?:write|writing|add|adds|adding|extend|improve)\s+"
    r"(?:a\s+|the\s+|some\s+|more\s+)?(?:unit\s+|regression\s+|integration\s+)?tests?\b"
    r"|test\s+coverage\b|how\s+(?:is|are)\s+[\w\s]{1,40}?\s+tested\b|where\s+are\s+the\s+tests)",
    re.IGNORECASE,
)
_ASKS_DOCS = re.compile(
    r"\b(?:documentation|docs|documented|readme|tutorial|changelog|docstrings?|user\s+guide)\b",
    re.IGNORECASE,
)
_PROSE = frozenset({"documentation", "text"})
#: The project's records about itself, not about how its code works: change logs, release
#: notes, licences, codes of conduct, contributing guides, authors, security policies.
_RECORD_NAME = re.compile(
    r"^(?:change(?:s|log)|history|news|releases?|release[-_]notes|licen[cs]e|copying|notice"
    r"|code[-_]of[-_]conduct|contributing|contributors|authors|security)"
    r"(?:\.(?:md|markdown|rst|txt|adoc|org))?$",
    re.IGNORECASE,
)
_RECORD_DIRS = frozenset({"changelog", "changelog.d", "changes", "newsfragments", "releasenotes"})


_STORE_SCHEME = "project://"


def uri_path(uri: str) -> str:
    """The repository path of a node or file URI (``project://<project>/<path>#<symbol>``),
    ``""`` for a URI of another scheme."""
    if not uri.startswith(_STORE_SCHEME):
        return ""
    return uri.split("#", 1)[0].split("/", 3)[-1]


@lru_cache(maxsize=65_536)  # a ranking asks about each of hundreds of nodes' paths
def is_test_path(path: str) -> bool:
    """True when ``path`` (repository-relative, ``/``-separated) looks like test code."""
    parts = path.split("/")
    if any(part.lower() in _TEST_DIRS for part in parts[:-1]):
        return True
    return bool(_TEST_NAME.match(parts[-1]))


@attrs.frozen
class RequestIntent:
    """What kind of material a request asks for, beyond implementation code."""

    wants_tests: bool = False
    wants_docs: bool = False

    @classmethod
    def of(cls, query: str) -> RequestIntent:
        """Read the intent from a request's text."""
        return cls(bool(_ASKS_TESTS.search(query)), bool(_ASKS_DOCS.search(query)))


#: Multipliers of a node's score by what it is, when the request does not ask for it.
TEST_PRIOR = 0.4
PROSE_PRIOR = 0.35
RECORD_PRIOR = 0.15
CONFIG_PRIOR = 0.6


@lru_cache(maxsize=65_536)
def is_record_path(path: str) -> bool:
    """True when ``path`` is one of the project's records about itself (a change log, a
    licence, a code of conduct, a contributing guide...) rather than about its code."""
    parts = path.split("/")
    if any(part.lower() in _RECORD_DIRS for part in parts[:-1]):
        return True
    return bool(_RECORD_NAME.match(parts[-1]))


def node_prior(node: Node, intent: RequestIntent) -> float:
    """Multiplier of a node's relevance: 1 for implementation code, less for tests and prose."""
    if is_test_path(node.path):
        return 1.0 if intent.wants_tests else TEST_PRIOR
    if node.resource_type in _PROSE:
        if intent.wants_docs:
            return 1.0
        return RECORD_PRIOR if is_record_path(node.path) else PROSE_PRIOR
    if node.resource_type == "config":
        return CONFIG_PRIOR
    return 1.0


#: Node kinds that are not repository content; strategies of their own serve them.
_NOT_CONTENT = frozenset({"commit", "plan", "decision"})


def weigh_by_prior(scores: Mapping[str, float], query: str, store: NodeStore) -> dict[str, float]:
    """``scores`` times each node's :func:`node_prior` for ``query``; unknown URIs dropped."""
    intent = RequestIntent.of(query)
    nodes = store.get_nodes(list(scores))
    return {
        uri: score * node_prior(nodes[uri], intent)
        for uri, score in scores.items()
        if uri in nodes and nodes[uri].kind not in _NOT_CONTENT
    }


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[str]],
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
) -> dict[str, float]:
    """Fuse ranked lists of URIs: ``sum(weight / (k + rank))`` over the lists holding a URI.

    A URI found by several lists gains from each, so agreement counts as evidence; ranks
    (not raw scores) are fused, so lists on different scales combine fairly.
    """
    fused: dict[str, float] = {}
    for name, ranking in rankings.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        if weight <= 0:
            continue
        for rank, uri in enumerate(ranking, start=1):
            fused[uri] = fused.get(uri, 0.0) + weight / (k + rank)
    return fused
