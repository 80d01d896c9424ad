"""The temporal-archaeology strategy: why code is the way it is, from the commits that made it.

1. The commits whose message, paths or changed identifiers match the request (BM25 over the
   history's full-text table, so tens of thousands of commits cost one indexed query).
2. Their fragments, cold tier: message, author date, files with lines added and removed,
   and the functions the hunks touched; the best at full text, the rest shallower.
3. The code they point to: the symbols named by their hunk headers, the files they touched
   (followed through later renames), those files' co-change neighbours, and the graph
   neighbours (callers, callees, imports, bases) of the best of them; selected like any code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone

import attrs

from contextfuse.backends import BackendSet, Commit, Rendering, SearchHit
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextRequest,
    DetailDepth,
    FragmentProvenance,
    PlanContext,
    StrategyCapabilities,
)
from contextfuse.selection import SelectionPolicy, select_fragments
from contextfuse.tokenizer import Tokenizer, default_tokenizer

__all__ = ["TemporalArchaeologyStrategy"]

#: Commits matched at most.
COMMIT_HITS = 40
#: Commits shown at most.
MAX_COMMITS = 12
#: Share of the budget for commit fragments; what they leave goes to code.
COMMIT_SHARE = 0.35
#: The largest share one commit may take at full text.
MAX_COMMIT_SHARE = 0.12
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
    #: How the code the commits point to is selected (see ``contextfuse.selection``).
    policy = SelectionPolicy()
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

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[ContextFragment]:
        temporal = backends.temporal
        available = budget.available_tokens
        if temporal is None or backends.nodes is None or available <= 0:
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
        commits = _commit_fragments(
            ranked[: min(MAX_COMMITS, self.policy.max_fragments)],
            tokenizer,
            int(available * COMMIT_SHARE),
            available,
            f"commit://{backends.nodes.project}/",
            self.name,
        )
        used = sum(f.token_count for f in commits)
        # Commits and code together stay within the registry's fragments per strategy.
        left = self.policy.max_fragments - len(commits)
        if left <= 0:
            return commits
        scores = self.code_scores(ranked, backends)
        policy = attrs.evolve(self.policy, max_fragments=left)
        code = select_fragments(
            scores, backends, available - used, strategy=self.name, policy=policy
        )
        return commits + code

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


def _commit_fragments(
    ranked: Sequence[tuple[Commit, float]],
    tokenizer: Tokenizer,
    share: int,
    available: int,
    prefix: str,
    strategy: str,
) -> list[ContextFragment]:
    """The best commits, each at the deepest rendering that fits its share of the budget."""
    fragments: list[ContextFragment] = []
    used = 0
    max_piece = max(1, int(available * MAX_COMMIT_SHARE))
    for commit, relevance in ranked:
        texts = [render_commit(commit, d) for d in (9, 4, 0)]
        counts = tokenizer.count_many(texts)
        for depth, text, tokens in zip((9, 4, 0), texts, counts, strict=True):
            if (tokens <= max_piece or depth == 0) and used + tokens <= share:
                fragments.append(
                    _fragment(commit, Rendering(depth, text, tokens), relevance, prefix, strategy)
                )
                used += tokens
                break
    return fragments


def _fragment(
    commit: Commit, rendering: Rendering, relevance: float, prefix: str, strategy: str
) -> ContextFragment:
    return ContextFragment(
        uko_node=prefix + commit.sha,
        content=rendering.content,
        detail_depth=rendering.depth,
        token_count=rendering.token_count,
        relevance_score=max(0.0, min(1.0, relevance)),
        provenance=FragmentProvenance(resource_uri=prefix + commit.sha, resource_type="commit"),
        tier="cold",
        metadata={"strategy": strategy, "kind": "commit", "sha": commit.sha},
    )
