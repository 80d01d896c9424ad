"""The arce strategy: every retrieval signal fused by rank, then expanded through the graph.

Text (BM25 over every node, over whole files and over implementation code alone), vector
(embeddings), exact mentions and literal evidence (the options, setting names and quoted
messages of the request, found as phrases in implementation code) each rank the knowledge
base's nodes;
reciprocal rank fusion combines the ranks while they still exist, so agreement between
signals counts and no signal's score scale dominates. The best fused nodes seed a
personalized PageRank over the code graph (calls, references, inheritance, imports,
containment) and, when the repository has history, the files changed together with the best
files; both join the fusion as further ranked lists, and so do the functions the best nodes
call when the request names no code (``callees.py``). A prior by kind of node keeps
implementation code above its tests and above prose unless the request asks for those, and
a symbol repeated in sibling files (a locale's variant) counts once (``alternatives.py``).
A declaration that does no work (an interface's method, a default hook returning ``null``)
among the best matches counts for less, and the code it stands for, its callers and its
overrides, joins the fusion as one more list (``stubs.py``).
The result is a ranking; the pipeline renders it and spends the budget.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from contextfuse.plugin import (
    STOPWORDS,
    SYMBOL_KINDS,
    BackendSet,
    ContextRequest,
    NodeScoringStrategy,
    RequestIntent,
    StrategyCapabilities,
    is_test_path,
    reciprocal_rank_fusion,
    uri_path,
    weigh_by_prior,
)
from contextfuse_arce.alternatives import damp_alternatives
from contextfuse_arce.callees import callee_ranking
from contextfuse_arce.stubs import delegation
from contextfuse_semantic_embedding.strategy import shared_embedder
from contextfuse_simple_keyword.literals import literal_evidence
from contextfuse_simple_keyword.query import specific_mentions

__all__ = ["ArceStrategy", "ArceWeights", "embedded_query"]


@attrs.frozen
class ArceWeights:
    """How much each ranked list counts in the fusion, and how deep each list goes.

    :param text: BM25 over code-aware terms, every node.
    :param files: BM25 over whole files (a file that matches as a whole, not by one part).
    :param code: BM25 over implementation code alone (functions, methods, classes and the
        other symbols of code, outside tests): in a repository with much prose and many
        tests, the code that does the work would otherwise rank below them and never enter
        the fusion.
    :param vector: cosine similarity of embeddings: the one signal that finds code whose
        words are not the request's, so it counts a little more than one text list.
    :param mentions: files and symbols the request names exactly.
    :param literals: implementation code holding the options, setting names and quoted
        messages the request writes (``--collect-only``, ``ignore-paths``), found as phrases:
        a report names what the user typed or read, the code spells it as a string literal.
    :param focus: the request's focus nodes.
    :param graph: personalized PageRank from the best fused nodes.
    :param history: files changed together with the best files.
    :param callees: functions and methods the best fused nodes call (``callees.py``).
    :param delegates: the callers and overrides of the stubs among the best fused nodes
        (``stubs.py``): a question's words find the documented contract, an interface's or
        a base class's empty method, more easily than the code that does the work.
    :param stub_prior: multiplier of a stub's own score when the request is about code in
        plain words.
    :param seeds: how many of the best fused nodes seed the graph walk.
    :param callers: how many of the best fused nodes have their callees ranked.
    :param callee_hits: how deep the callee list goes.
    :param second_callers: how many of the best callees have their own callees ranked too.
    :param stubs_considered: how many of the best fused nodes are looked at for stubs.
    :param hits: how deep the text and vector lists go.
    """

    text: float = 1.0
    files: float = 1.0
    code: float = 1.0
    vector: float = 1.25
    mentions: float = 2.0
    literals: float = 2.0
    focus: float = 3.0
    graph: float = 0.6
    history: float = 0.3
    callees: float = 1.5
    delegates: float = 1.0
    stub_prior: float = 0.5
    seeds: int = 30
    callers: int = 20
    callee_hits: int = 30
    second_callers: int = 10
    stubs_considered: int = 30
    hits: int = 300


# Every kind of code symbol but containers of other symbols (a Rust ``mod`` block).
_SYMBOL_KINDS = tuple(sorted(SYMBOL_KINDS - {"module"}))


_GRAPH_KINDS = ("calls", "references", "inherits", "imports", "contains")

_WORD = re.compile(r"[\w']+")


def embedded_query(query: str) -> str:
    """The request as the vector signal embeds it: its words without English function words
    and punctuation (the whole request when nothing else is left).

    A static embedding sums one vector per token, so the ``how``, ``the`` and commas of a
    plain-English question pull every query toward the same direction; its content words
    are what tell one question from another.
    """
    words = [w for w in _WORD.findall(query) if w.lower() not in STOPWORDS]
    return " ".join(words) or query


class ArceStrategy(NodeScoringStrategy):
    """Text, vector, mention, graph and history signals fused by reciprocal rank."""

    name = "arce"
    capabilities = StrategyCapabilities(
        uses_text=True,
        uses_vector=True,
        uses_graph=True,
        resource_types=("code", "docs", "text"),
        uko_levels=(0, 2, 4, 9),
        quality_score=0.95,
        supports_depth_breadth=True,
    )

    def __init__(self, weights: ArceWeights | None = None, embedder: Any = None) -> None:
        self.weights = weights or ArceWeights()
        self._embedder = embedder

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            self._embedder = shared_embedder()
        return self._embedder

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        if not backends.has("nodes", "text", "graph"):
            return 0.0
        return 0.95 if request.query.strip() or request.focus_nodes else 0.0

    def rankings(self, request: ContextRequest, backends: BackendSet) -> dict[str, list[str]]:
        """The ranked lists (best first) of the request's signals, before graph expansion."""
        w = self.weights
        query = request.query
        lists: dict[str, list[str]] = {}
        if query.strip():
            lists["text"] = [h.uri for h in backends.text.search(query, limit=w.hits)]
            if self.weights.code > 0:
                lists["code"] = self._code_hits(query, backends)
            lists["files"] = [
                h.uri for h in backends.text.search(query, limit=w.hits // 3, kinds=("file",))
            ]
            lists["vector"] = self._vector_hits(query, backends)
            mentioned = specific_mentions(query, backends.nodes)
            lists["mentions"] = sorted(mentioned, key=lambda u: (-mentioned[u], u))
            if w.literals > 0:
                lists["literals"] = literal_evidence(query, backends)
        if request.focus_nodes:
            lists["focus"] = list(request.focus_nodes)
        return {name: ranking for name, ranking in lists.items() if ranking}

    def _code_hits(self, query: str, backends: BackendSet) -> list[str]:
        # Twice as deep, since the tests among the hits are dropped.
        hits = backends.text.search(query, limit=2 * self.weights.hits, kinds=_SYMBOL_KINDS)
        return [h.uri for h in hits if not is_test_path(uri_path(h.uri))][: self.weights.hits]

    def _vector_hits(self, query: str, backends: BackendSet) -> list[str]:
        vector = backends.vector
        if vector is None:
            return []
        embedder = self.embedder
        if embedder.name not in vector.models():
            return []
        vector_query = embedder.embed([embedded_query(query)])[0]
        hits = vector.search(embedder.name, vector_query, limit=self.weights.hits)
        return [h.uri for h in hits if h.score > 0]

    def signals(
        self, request: ContextRequest, backends: BackendSet
    ) -> tuple[dict[str, float], dict[str, list[str]]]:
        """Fused scores (URI -> score) and every ranked list that went into them."""
        w = self.weights
        weights = {
            "text": w.text,
            "files": w.files,
            "code": w.code,
            "vector": w.vector,
            "mentions": w.mentions,
            "literals": w.literals,
            "focus": w.focus,
            "graph": w.graph,
            "history": w.history,
            "callees": w.callees,
            "delegates": w.delegates,
        }
        lists = self.rankings(request, backends)
        fused = reciprocal_rank_fusion(lists, weights)
        seeds = dict(sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[: w.seeds])
        if seeds and backends.graph is not None:
            walk = backends.graph.personalized_pagerank(seeds, limit=w.hits, kinds=_GRAPH_KINDS)
            lists["graph"] = [h.uri for h in walk]
        if seeds and backends.temporal is not None:
            lists["history"] = self._co_changed(seeds, backends)
        # A request that names code is answered by what it names, one that asks for tests or
        # docs by those; one in plain words about the code finds the dispatcher whose words
        # it shares more easily than the helpers doing the work.
        intent = RequestIntent.of(request.query)
        asks_code = not (lists.get("mentions") or intent.wants_tests or intent.wants_docs)
        if seeds and w.callees > 0 and asks_code:
            callers = [u for u in seeds if not is_test_path(uri_path(u))][: w.callers]
            lists["callees"] = callee_ranking(callers, backends, w.callee_hits, w.second_callers)
        fused = reciprocal_rank_fusion({k: v for k, v in lists.items() if v}, weights)
        if seeds and w.delegates > 0 and asks_code:
            fused = self._delegate(fused, lists, weights, backends)
        return fused, lists

    def _delegate(
        self,
        fused: dict[str, float],
        lists: dict[str, list[str]],
        weights: Mapping[str, float],
        backends: BackendSet,
    ) -> dict[str, float]:
        """Fused again with the delegates of the best stubs, the stubs themselves damped."""
        w = self.weights
        best = [
            u for u in sorted(fused, key=lambda u: (-fused[u], u)) if not is_test_path(uri_path(u))
        ]
        found = delegation(best, backends, w.callee_hits, w.stubs_considered)
        if found.delegates:
            lists["delegates"] = list(found.delegates)
            fused = reciprocal_rank_fusion({k: v for k, v in lists.items() if v}, weights)
        for uri in found.stubs:
            fused[uri] *= w.stub_prior
        return fused

    def _co_changed(self, seeds: Mapping[str, float], backends: BackendSet) -> list[str]:
        project = backends.nodes.project
        prefix = f"project://{project}/"
        files: list[str] = []
        for uri in seeds:
            path = uri.split("#", 1)[0].removeprefix(prefix)
            if path not in files:
                files.append(path)
        ranked: dict[str, int] = {}
        for path in files[:5]:
            for other, count in backends.temporal.co_changed(path, limit=10):
                ranked[f"{prefix}{other}"] = ranked.get(f"{prefix}{other}", 0) + count
        return sorted(ranked, key=lambda u: (-ranked[u], u))

    def scores(self, request: ContextRequest, backends: BackendSet) -> dict[str, float]:
        """Node URI -> fused score, weighed by the node's kind (code above tests and prose)."""
        return self.scored_signals(request, backends)[0]

    def scored_signals(
        self, request: ContextRequest, backends: BackendSet
    ) -> tuple[dict[str, float], dict[str, list[str]]]:
        """Fused scores weighed by kind of node, and every ranked list behind them."""
        fused, lists = self.signals(request, backends)
        weighed = weigh_by_prior(fused, request.query, backends.nodes)
        return damp_alternatives(weighed, backends), lists

    def explain(self) -> str:
        return (
            "Text (BM25), vector (embeddings), exact mentions and literal evidence fused by "
            "reciprocal rank, "
            "expanded by personalized PageRank over the code graph and by files changed "
            "together; implementation code above tests and prose unless asked."
        )
