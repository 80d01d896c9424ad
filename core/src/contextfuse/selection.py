"""Turning a strategy's ranked nodes into fragments at the right depths, within a budget.

A toolkit for strategy authors, not a strategy: given node scores, it spends the budget in
passes. Full source of the best code nodes (what an agent needs to edit) up to the code share;
a map of the next best files at outline depth (what it needs to find its way); code again
with whatever the map left; and, when the fragment cap is reached with budget to spare, the
files with the most evidence whole in place of their parts. No line is shown twice at full
source; a class shown by its signatures may still have a method shown in full, and a mapped
file may still have code shown. Each fragment says why it got its depth
(``metadata["depth_reason"]``) and whether secrets were redacted from it
(``metadata["redacted"]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from contextfuse.backends import BackendSet, Node, Rendering
from contextfuse.models import (
    ContextBudget,
    ContextFragment,
    ContextRequest,
    DetailDepth,
    FragmentProvenance,
    PlanContext,
)
from contextfuse.signals import annotate_signals
from contextfuse.tokenizer import default_tokenizer

__all__ = ["HEADER_SYMBOL", "NodeScoringStrategy", "SelectionPolicy", "select_fragments"]

#: Symbol part of the URI of a file's header fragment (``project://p/a.py#<header>``).
HEADER_SYMBOL = "<header>"

# Code the packer shows at full source: declarations, values bound to names (a TypeScript
# ``export const X = make(...)``), blocks of a large file's top-level code, document sections.
_CODE_KINDS = frozenset(
    {"function", "method", "class", "section", "module", "variable", "block", "macro"}
)


@attrs.frozen
class SelectionPolicy:
    """How a budget is split between code and the file map.

    :param map_share: share of the budget for the file map (depth 2 outlines); the rest
        goes to full-source (depth 9) fragments, and whatever code leaves unused to the map.
    :param max_map_tokens: the map never takes more than this, so large budgets buy code.
    :param max_code_share: the largest share one full-source fragment may take; a bigger
        node is shown at signature depth (4) instead.
    :param whole_file_tokens: files at most this big are shown whole rather than by symbol.
    :param whole_file_share: ... or at most this share of the budget, when that is more: a
        large budget buys whole files, which also keeps the fragment count down.
    :param max_outline_share: the largest share one file outline (depth 2) may take.
    :param map_files: at most this many files in the map.
    :param map_slot_share: the share of ``max_fragments`` that code may not take in its first
        pass, kept for the map. Many small code fragments would otherwise use up the fragment
        cap at large budgets, and the map would show few files.
    :param max_header_share: the largest share a file's header (its lines before the first
        symbol: imports, constants) may take; it is shown with the file's first full-source
        symbol, since an edit often starts there.
    :param file_evidence_weight: how much a node's file's evidence (the sum of its best
        five node scores) counts against the node's own score when choosing code.
    :param spend_target: when the fragment cap is reached below this share of the budget
        spent, the files with the most evidence are shown whole in place of their parts (at
        large budgets the cap, not the budget, would otherwise end the selection).
    :param max_fragments: at most this many fragments in all (the registry's default
        ``max_fragments`` per strategy).
    """

    map_share: float = 0.4
    max_map_tokens: int = 8000
    max_code_share: float = 0.3
    whole_file_tokens: int = 700
    whole_file_share: float = 0.03
    spend_target: float = 0.9
    max_outline_share: float = 0.08
    map_files: int = 60
    map_slot_share: float = 1 / 3
    max_fragments: int = 100
    max_header_share: float = 0.05
    file_evidence_weight: float = 0.5


def _span(rendering: Rendering) -> tuple[int, int]:
    return (rendering.line_start, rendering.line_end)


def _covered(spans: list[tuple[int, int]], span: tuple[int, int]) -> bool:
    return any(a <= span[0] and span[1] <= b for a, b in spans)


def _overlaps(spans: list[tuple[int, int]], span: tuple[int, int]) -> bool:
    return any(not (span[1] < a or b < span[0]) for a, b in spans)


class _LazyRenderings:
    """Renderings fetched in batches along the order they will be needed in.

    Selection usually stops long before the end of the ranking; fetching every candidate's
    full source up front would cost more than the rest of the assembly.
    """

    BATCH = 24
    DEPTHS = (DetailDepth.FULL_SOURCE, DetailDepth.SIGNATURES, DetailDepth.OUTLINE)

    def __init__(self, store: Any, order: list[str]) -> None:
        self._store = store
        self._cache: dict[str, dict[int, Rendering]] = {}
        self.order = order

    @property
    def order(self) -> list[str]:
        """The URIs in the order they will be asked for."""
        return self._order

    @order.setter
    def order(self, uris: list[str]) -> None:
        self._order = uris
        self._position = {uri: i for i, uri in enumerate(uris)}

    def get(self, uri: str) -> dict[int, Rendering]:
        if uri not in self._cache:
            start = self._position.get(uri, len(self._order))
            batch = [uri]
            for candidate in self._order[start + 1 :]:
                if len(batch) >= self.BATCH:
                    break
                if candidate not in self._cache:
                    batch.append(candidate)
            fetched = self._store.get_renderings(batch, self.DEPTHS)
            for key in batch:
                self._cache[key] = fetched.get(key, {})
        return self._cache[uri]


def select_fragments(
    scores: Mapping[str, float],
    backends: BackendSet,
    available: int,
    *,
    strategy: str,
    policy: SelectionPolicy | None = None,
) -> list[ContextFragment]:
    """Fragments for the nodes in ``scores`` (uri -> score >= 0), best first, within budget.

    Scores are normalised so the best node has relevance 1.0. The result never exceeds
    ``available`` tokens and holds at most one fragment per node.
    """
    policy = policy or SelectionPolicy()
    store = backends.nodes
    if store is None or not scores or available <= 0:
        return []
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    top = ranked[0][1] or 1.0
    nodes: dict[str, Node] = store.get_nodes([uri for uri, _ in ranked])
    # Files of the scored nodes: a file is as good as its best node.
    file_score: dict[str, float] = {}
    for uri, score in ranked:
        node = nodes.get(uri)
        if node is not None:
            file_uri = node.file_uri
            file_score[file_uri] = max(file_score.get(file_uri, 0.0), score)
    missing_files = [f for f in file_score if f not in nodes]
    nodes.update(store.get_nodes(missing_files))
    renderings = _LazyRenderings(store, [uri for uri, _ in ranked])

    chosen: list[tuple[float, ContextFragment]] = []
    spans: dict[str, list[tuple[int, int]]] = {}
    taken: set[str] = set()
    mapped_files: set[str] = set()
    signature_spans: dict[str, list[tuple[int, int]]] = {}
    used = 0

    def take(node: Node, rendering: Rendering, score: float, reason: str) -> None:
        nonlocal used
        chosen.append((score, _fragment(node, rendering, score / top, strategy, reason)))
        if rendering.depth == DetailDepth.OUTLINE:
            # An outline maps the file; code of the file may still be shown beside it.
            mapped_files.add(node.file_uri)
        elif rendering.depth == DetailDepth.FULL_SOURCE:
            spans.setdefault(node.file_uri, []).append(_span(rendering))
        else:
            # A class's signatures map it; its methods may still be shown in full.
            signature_spans.setdefault(node.file_uri, []).append(_span(rendering))
        taken.add(node.uri)
        used += rendering.token_count

    # Code: full source of the best nodes (small files whole). A node in a file with much
    # evidence (several good nodes) ranks above an equally good stray node, so the code
    # concentrates in the files most likely to matter.
    evidence: dict[str, list[float]] = {}
    for uri, score in ranked:
        node = nodes.get(uri)
        if node is not None:
            evidence.setdefault(node.file_uri, []).append(score)
    file_evidence = {f: sum(sorted(v, reverse=True)[:5]) for f, v in evidence.items()}
    strongest = max(file_evidence.values(), default=0.0) or 1.0
    weight = policy.file_evidence_weight

    def code_rank(item: tuple[str, float]) -> tuple[float, str]:
        uri, score = item
        node = nodes.get(uri)
        strength = file_evidence.get(node.file_uri, 0.0) / strongest if node else 0.0
        return (-((1 - weight) * score / top + weight * strength), uri)

    code_order = sorted(ranked, key=code_rank)
    max_piece = max(1, int(available * policy.max_code_share))
    header_limit = max(1, int(available * policy.max_header_share))
    whole_file = max(policy.whole_file_tokens, int(available * policy.whole_file_share))

    # A file's header costs a query and a token count; several of its nodes may ask for it.
    headers: dict[str, Rendering | None] = {}

    def spend_on_code(limit: int, slots: int) -> None:
        for position, (uri, score) in enumerate(code_order, start=1):
            if used >= limit or len(chosen) >= slots:
                return
            node = nodes.get(uri)
            if node is None or uri in taken:
                continue
            by_depth = renderings.get(uri)
            full = by_depth.get(DetailDepth.FULL_SOURCE)
            if full is None:
                continue
            if node.kind == "file":
                if full.token_count > whole_file:
                    continue  # big files are shown by their symbols and in the map
            elif node.kind not in _CODE_KINDS:
                continue
            file_spans = spans.get(node.file_uri, [])
            if _covered(file_spans, _span(full)):
                continue
            choice, reason = full, f"full source: code rank {position}"
            if full.token_count > max_piece or _overlaps(file_spans, _span(full)):
                choice = by_depth.get(DetailDepth.SIGNATURES, full)
                reason = (
                    f"signatures: its full source ({full.token_count} tokens) is more than "
                    f"one piece may take ({max_piece})"
                    if full.token_count > max_piece
                    else "signatures: part of its source is already shown"
                )
                if (
                    choice.token_count > max_piece
                    or _overlaps(file_spans, _span(choice))
                    or _overlaps(signature_spans.get(node.file_uri, []), _span(choice))
                ):
                    continue
            if used + choice.token_count > limit:
                continue
            take(node, choice, score, reason)
            header_uri = f"{node.file_uri}#{HEADER_SYMBOL}"
            if (
                choice.depth == DetailDepth.FULL_SOURCE
                and node.kind != "file"
                and header_uri not in taken
                and len(chosen) < slots
            ):
                if node.file_uri not in headers:
                    headers[node.file_uri] = _module_header(
                        store, backends, nodes, renderings, node.file_uri
                    )
                header = headers[node.file_uri]
                if (
                    header is not None
                    and header.token_count <= header_limit
                    and used + header.token_count <= limit
                    and not _overlaps(spans.get(node.file_uri, []), _span(header))
                ):
                    header_node = attrs.evolve(nodes[node.file_uri], uri=header_uri)
                    take(
                        header_node,
                        header,
                        score * 0.95,
                        "full source: the file's imports and constants, with its code",
                    )

    def spend_on_map(limit: int) -> None:
        mapped = 0
        for file_uri, score in files_ranked:
            if mapped >= policy.map_files or used >= limit or len(chosen) >= policy.max_fragments:
                return
            if file_uri in spans or file_uri in mapped_files:
                continue
            node = nodes.get(file_uri)
            outline = renderings.get(file_uri).get(DetailDepth.OUTLINE)
            if node is None or outline is None or outline.token_count > max_outline:
                continue
            if used + outline.token_count <= limit:
                take(node, outline, score * 0.9, "outline: file map (breadth)")
                mapped += 1

    def upgrade_to_whole_files(limit: int) -> None:
        nonlocal used, chosen
        for file_uri, _ in sorted(file_evidence.items(), key=lambda kv: (-kv[1], kv[0])):
            if used >= limit * policy.spend_target:
                return
            if file_uri not in spans or file_uri not in nodes:
                continue
            whole = renderings.get(file_uri).get(DetailDepth.FULL_SOURCE)
            parts = [sf for sf in chosen if sf[1].provenance.resource_uri == file_uri]
            shown = sum(sf[1].token_count for sf in parts)
            if whole is None or whole.token_count > max_piece:
                continue
            if used - shown + whole.token_count > limit:
                continue
            chosen = [sf for sf in chosen if sf[1].provenance.resource_uri != file_uri]
            used -= shown
            spans.pop(file_uri, None)
            signature_spans.pop(file_uri, None)
            mapped_files.discard(file_uri)
            reason = f"full source: the whole file, in place of {len(parts)} of its parts"
            take(nodes[file_uri], whole, max(sf[0] for sf in parts), reason)

    code_budget = available - min(int(available * policy.map_share), policy.max_map_tokens)
    # Code may not take every fragment slot: the map's files are how the agent finds its way,
    # and at large budgets many small code fragments would otherwise crowd them out.
    map_slots = min(policy.map_files, int(policy.max_fragments * policy.map_slot_share))
    spend_on_code(code_budget, policy.max_fragments - map_slots)
    # A map of the best files not shown yet, at outline depth.
    max_outline = max(1, int(available * policy.max_outline_share))
    files_ranked = sorted(file_score.items(), key=lambda kv: (-kv[1], kv[0]))
    renderings.order = [uri for uri, _ in files_ranked]
    spend_on_map(available)
    # What the map left unused goes to more code, so the budget is spent.
    renderings.order = [uri for uri, _ in code_order]
    spend_on_code(available, policy.max_fragments)
    # Still unspent (the fragment cap binds at large budgets): the files with the most
    # evidence are shown whole in place of their parts, then what is left goes to code.
    if used < available * policy.spend_target and len(chosen) >= policy.max_fragments:
        upgrade_to_whole_files(available)
        spend_on_code(available, policy.max_fragments)

    chosen.sort(key=lambda sf: (-sf[0], -sf[1].detail_depth, sf[1].uko_node))
    return [fragment for _, fragment in chosen]


def _module_header(
    store: Any,
    backends: BackendSet,
    nodes: Mapping[str, Node],
    renderings: _LazyRenderings,
    file_uri: str,
) -> Rendering | None:
    """The file's lines before its first symbol (imports, constants), as full source."""
    if file_uri not in nodes:
        return None
    full = renderings.get(file_uri).get(DetailDepth.FULL_SOURCE)
    children = store.children(file_uri)
    if full is None or not children:
        return None
    first = min(child.line_start for child in children if child.line_start) - 1
    lines = full.content.split("\n")[:first]
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return None
    text = "\n".join(lines)
    tokenizer = backends.tokenizer or default_tokenizer()
    return Rendering(DetailDepth.FULL_SOURCE, text, tokenizer.count(text), 1, len(lines))


def _fragment(
    node: Node, rendering: Rendering, relevance: float, strategy: str, reason: str
) -> ContextFragment:
    metadata: dict[str, Any] = {"strategy": strategy, "kind": node.kind, "depth_reason": reason}
    redacted = rendering.content.count("[REDACTED:")
    if redacted:
        # The agent should know the text was altered, and why.
        metadata["redacted"] = str(redacted)
    return ContextFragment(
        uko_node=node.uri,
        content=rendering.content,
        detail_depth=rendering.depth,
        token_count=rendering.token_count,
        relevance_score=max(0.0, min(1.0, relevance)),
        provenance=FragmentProvenance(
            resource_uri=node.file_uri,
            location=rendering.location,
            resource_type=node.resource_type,
        ),
        metadata=metadata,
    )


class NodeScoringStrategy:
    """Base of strategies that score knowledge-base nodes: ``assemble`` selects fragments.

    Subclasses set ``name`` and ``capabilities`` and implement ``can_handle``, ``scores``
    (node URI -> score) and ``explain``. A strategy that fuses several ranked lists
    overrides ``scored_signals`` instead, so each fragment says which list found it
    (``metadata["signals"]``).
    """

    name: str
    policy: SelectionPolicy = SelectionPolicy()

    def scores(self, request: ContextRequest, backends: BackendSet) -> dict[str, float]:
        """Node URI -> score (higher is better) for ``request``."""
        raise NotImplementedError

    def scored_signals(
        self, request: ContextRequest, backends: BackendSet
    ) -> tuple[dict[str, float], dict[str, list[str]]]:
        """The scores and the ranked lists (best first) they came from; default: no lists."""
        return self.scores(request, backends), {}

    def assemble(
        self,
        request: ContextRequest,
        backends: BackendSet,
        budget: ContextBudget,
        plan_context: PlanContext,
    ) -> list[ContextFragment]:
        scores, rankings = self.scored_signals(request, backends)
        fragments = select_fragments(
            scores, backends, budget.available_tokens, strategy=self.name, policy=self.policy
        )
        return annotate_signals(fragments, rankings) if rankings else fragments
