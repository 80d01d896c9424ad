"""The temporal-archaeology strategy: why code is the way it is, from the commits that made it.

1. The commits whose message, paths or changed identifiers match the request (BM25 over the
   history's full-text table, so tens of thousands of commits cost one indexed query).
2. Their renderings, cold tier: message, author date, files with lines added and removed,
   and the functions the hunks touched (depth 9), the subject and files (4), one line (0).
3. The code they point to: the symbols named by their hunk headers, the files they touched
   (followed through later renames), those files' co-change neighbours, and the graph
   neighbours (callers, callees, imports, bases) of the best of them.

Commits and code form one ranking; the pipeline renders the code and spends the budget.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone

from contextfuse.plugin import (
    BackendSet,
    Commit,
    ContextRequest,
    DetailDepth,
    PlanContext,
    Ranked,
    Rendering,
    SearchHit,
    StrategyCapabilities,
    Tokenizer,
    default_tokenizer,
)

__all__ = ["TemporalArchaeologyStrategy"]

#: Commits matched at most.
COMMIT_HITS = 40
#: Commits ranked at most: beyond a dozen, matching commits say little more.
MAX_COMMITS = 12
#: The code's scores relative to the best commit's: the best commit comes first.
CODE_WEIGHT = 0.9
#: Files and symbols of a commit weigh 1/sqrt(files): a small commit says more per file.
SYMBOL_WEIGHT = 1.5
#: What a co-change neighbour inherits from the file it changes with.
COCHANGE_WEIGHT = 0.3
#: What a graph neighbour (caller, callee, import, base) of the best code inherits from it.
GRAPH_WEIGHT = 0.3
#: Commits touching more files than this are bulk changes (a release, a reformatting): they
#: are shown, but say nothing about which code matters.
BULK_FILES = 50
_COCHANGE_FILES = 5  # files whose co-change neighbours are looked up
_GRAPH_SEEDS = 8  # best nodes whose graph neighbours are looked up
_GRAPH_KINDS = ("calls", "references", "inherits", "imports")
_SYMBOLS = 60  # distinct changed symbols resolved to nodes, at most
_MESSAGE_LINES = 30
_LISTED_FILES = 15
#: Words of a question about history.
_HISTORY_WORDS = re.compile(
    r"\b(why|when|history|histor\w*|commit\w*|chang\w*|introduc\w*|regress\w*|revert\w*|"
    r"broke|broken|used to|originally|rename\w*|moved)\b",
    re.IGNORECASE,
)


class TemporalArchaeologyStrategy:
    """Commits matching the request, and the code they changed."""

    name = "temporal-archaeology"
    capabilities = StrategyCapabilities(
        uses_graph=True,
        uses_temporal=True,
        resource_types=("commit", "code"),
        uko_levels=(0, 2, 4, 9),
        quality_score=0.5,
        supports_temporal=True,
    )

    def can_handle(self, request: ContextRequest, backends: BackendSet) -> float:
        if backends.temporal is None or backends.nodes is None or not request.query.strip():
            return 0.0
        if not backends.temporal.search(request.query, limit=1):
            return 0.0
        return 0.7 if _HISTORY_WORDS.search(request.query) else 0.4

    def rank(
        self, request: ContextRequest, backends: BackendSet, plan_context: PlanContext
    ) -> list[Ranked]:
        """The matching commits, with their renderings, and the code they point to."""
        temporal = backends.temporal
        if temporal is None or backends.nodes is None:
            return []
        hits: list[SearchHit] = temporal.search(request.query, limit=COMMIT_HITS)
        if not hits:
            return []
        found: dict[str, Commit] = temporal.get_commits([h.uri for h in hits])
        best = hits[0].score or 1.0
        ranked = [
            (found[sha], hit.score / best)
            for hit in hits
            if (sha := hit.uri.rsplit("/", 1)[-1]) in found
        ]
        tokenizer = backends.tokenizer or default_tokenizer()
        prefix = f"commit://{backends.nodes.project}/"
        commits = [
            Ranked(
                prefix + commit.sha,
                relevance,
                {"history": position},
                renderings=_renderings(commit, tokenizer),
                resource_type="commit",
                tier="cold",
                metadata={"sha": commit.sha},
            )
            for position, (commit, relevance) in enumerate(ranked[:MAX_COMMITS], start=1)
        ]
        scores = self.code_scores(ranked, backends)
        strongest = max(scores.values(), default=0.0) or 1.0
        code = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return sorted(
            [
                *commits,
                *(
                    Ranked(uri, CODE_WEIGHT * value / strongest, {"changed code": position})
                    for position, (uri, value) in enumerate(code, start=1)
                ),
            ],
            key=lambda r: (-r.score, r.uri),
        )

    def code_scores(
        self, ranked: Sequence[tuple[Commit, float]], backends: BackendSet
    ) -> dict[str, float]:
        """Node URI -> score: changed symbols, touched files, co-change and graph neighbours."""
        temporal, nodes = backends.temporal, backends.nodes
        prefix = f"project://{nodes.project}/"
        current: dict[str, str] = {}
        files: dict[str, float] = {}
        symbols: dict[tuple[str, str], float] = {}
        for commit, relevance in ranked:
            if len(commit.changes) > BULK_FILES:
                continue
            weight = relevance / max(1, len(commit.changes)) ** 0.5
            for change in commit.changes:
                path = current.get(change.path)
                if path is None:
                    path = current[change.path] = temporal.current_path(change.path)
                files[path] = files.get(path, 0.0) + weight
                for name in change.symbols:
                    key = (path, name)
                    symbols[key] = symbols.get(key, 0.0) + weight
        scores: dict[str, float] = {prefix + path: value for path, value in files.items()}
        strongest = sorted(symbols.items(), key=lambda kv: -kv[1])[:_SYMBOLS]
        for (path, name), value in strongest:
            for node in nodes.find_symbols(name.rsplit(".", 1)[-1], limit=20):
                if node.path == path:
                    scores[node.uri] = scores.get(node.uri, 0.0) + SYMBOL_WEIGHT * value
        top_files = sorted(files.items(), key=lambda kv: -kv[1])[:_COCHANGE_FILES]
        for path, value in top_files:
            neighbours = temporal.co_changed(path, limit=5)
            most = max((count for _, count in neighbours), default=1)
            for other, count in neighbours:
                uri = prefix + temporal.current_path(other)
                bonus = COCHANGE_WEIGHT * value * count / most
                scores[uri] = scores.get(uri, 0.0) + bonus
        known = nodes.get_nodes(list(scores))
        scores = {uri: value for uri, value in scores.items() if uri in known}
        if backends.graph is not None:
            seeds = sorted(scores.items(), key=lambda kv: -kv[1])[:_GRAPH_SEEDS]
            for uri, value in seeds:
                for edge in backends.graph.neighbors(uri, kinds=_GRAPH_KINDS):
                    other = edge.target if edge.source == uri else edge.source
                    scores[other] = scores.get(other, 0.0) + GRAPH_WEIGHT * value
        return scores

    def explain(self) -> str:
        return (
            "Commits whose message, paths or changed identifiers match the request (message, "
            "author date, files and a short diff summary, cold tier), then the code they "
            "point to: the changed symbols, the files touched (through renames), their "
            "co-change neighbours and the graph neighbours of the best of them."
        )


def _date(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%d")


def render_commit(commit: Commit, depth: int) -> str:
    """A commit at ``depth``: 9 message and files with changes, 4 subject and files, 0 a line."""
    head = f"commit {commit.sha[:12]} {_date(commit.timestamp)} {commit.author}"
    if depth <= DetailDepth.MODULE_LISTING:
        return f"commit {commit.sha[:12]} {_date(commit.timestamp)} {commit.subject}"
    if depth < DetailDepth.FULL_SOURCE:
        names = ", ".join(c.path for c in commit.changes[:_LISTED_FILES])
        more = len(commit.changes) - _LISTED_FILES
        extra = f" and {more} more" if more > 0 else ""
        return (
            f"{head}\n{commit.subject}\nfiles: {names}{extra}"
            if names
            else f"{head}\n{commit.subject}"
        )
    lines = commit.message.splitlines()
    message = "\n".join(lines[:_MESSAGE_LINES])
    if len(lines) > _MESSAGE_LINES:
        message += f"\n[... {len(lines) - _MESSAGE_LINES} more lines]"
    listed = []
    for change in commit.changes[:_LISTED_FILES]:
        where = f" ({', '.join(change.symbols)})" if change.symbols else ""
        listed.append(f"  {change.path} +{change.added} -{change.removed}{where}")
    if len(commit.changes) > _LISTED_FILES:
        listed.append(f"  ... and {len(commit.changes) - _LISTED_FILES} more files")
    files = "\nfiles:\n" + "\n".join(listed) if listed else ""
    return f"{head}\n{message}\n{files}".rstrip()


def _renderings(commit: Commit, tokenizer: Tokenizer) -> dict[int, Rendering]:
    """The commit at depths 9, 4 and 0, with their token counts."""
    depths = (DetailDepth.FULL_SOURCE, DetailDepth.SIGNATURES, DetailDepth.MODULE_LISTING)
    texts = [render_commit(commit, depth) for depth in depths]
    counts = tokenizer.count_many(texts)
    return {
        depth: Rendering(depth, text, count)
        for depth, text, count in zip(depths, texts, counts, strict=True)
    }
