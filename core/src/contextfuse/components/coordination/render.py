"""Rendering a strategy's ranking: each candidate at every depth the stores have for it.

A ranking strategy returns candidates; phase 2 needs fragments to deduplicate, resolve,
score and pack. For each candidate above the cut this renders the node at full source,
signatures and outline (a candidate's own renderings when it brings them), and adds what the
packer's policy may use around it: the outline (and, when small, the whole text) of each
candidate's file for the file map, and the lines before a file's first symbol (imports,
constants; not a licence notice they open with) for the files of the best code. Nothing is
chosen here: every depth goes to the depth resolver, which picks one, and the packer, which
may fall back to another.

**The cut:** a strategy's candidates are rendered down its list as far as the round's budget
can use: ``max(min_candidates, tokens // tokens_per_candidate)`` of them. The rest are below
the cut, counted and named in the result's stats (``--explain`` shows them).

Renderings larger than the budget are never read: they could not be packed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

import attrs

from contextfuse.backends import BackendSet, Node, Rendering
from contextfuse.models import ContextFragment, DetailDepth, Tier, build_fragment
from contextfuse.ranked import HEADER_SYMBOL, ROLE_CANDIDATE, ROLE_HEADER, ROLE_MAP, Ranked
from contextfuse.signals import uri_path
from contextfuse.tokenizer import default_tokenizer

__all__ = ["RENDER_DEPTHS", "RenderLimits", "Rendered", "render_ranking"]

#: Depths rendered for every candidate (the packer's fallback sequence without the listing).
RENDER_DEPTHS = (DetailDepth.FULL_SOURCE, DetailDepth.SIGNATURES, DetailDepth.OUTLINE)
#: Node kinds whose file gets a header fragment when they are among the best candidates.
_HEADED_KINDS = frozenset({"function", "method", "class", "module", "variable", "block", "macro"})
_STORE_SCHEME = "project://"
_PLAN_SCHEMES = ("plan://", "decision://")
_SHOWN_BELOW_CUT = 50
_HEADER_SHARE = 0.95


@attrs.frozen
class RenderLimits:
    """How far down a ranking the pipeline renders, and for how many files headers.

    :param min_candidates: candidates rendered whatever the allocation.
    :param tokens_per_candidate: one more candidate per this many tokens of allocation.
    :param header_files: headers are made for the files of the best code candidates, at
        most this many files.
    """

    min_candidates: int = 150
    tokens_per_candidate: int = 40
    header_files: int = 40

    def cut(self, tokens: int) -> int:
        """How many candidates an allocation of ``tokens`` renders."""
        return max(self.min_candidates, tokens // max(1, self.tokens_per_candidate))


@attrs.frozen
class Rendered:
    """A ranking rendered: its fragments and what the pipeline reports about it."""

    fragments: list[ContextFragment]
    order: list[str]  # the rendered candidates' URIs, best first (the strategy's rank order)
    below_cut: int = 0
    below_cut_shown: tuple[str, ...] = ()  # the first of them, best first
    unknown: tuple[str, ...] = ()  # candidates no store holds and that brought no renderings


def render_ranking(
    ranked: Sequence[Ranked],
    backends: BackendSet,
    *,
    strategy: str,
    tokens: int,
    limits: RenderLimits | None = None,
) -> Rendered:
    """The fragments of ``ranked`` (best first) for an allocation of ``tokens``."""
    limits = limits or RenderLimits()
    unique: dict[str, Ranked] = {}
    for item in ranked:
        unique.setdefault(item.uri, item)
    items = list(unique.values())
    cut = limits.cut(tokens)
    kept, below = items[:cut], items[cut:]
    top = max((item.score for item in kept), default=0.0)
    renderer = _Renderer(backends, strategy, tokens)
    fragments, order, unknown = renderer.candidates(kept, top)
    fragments.extend(renderer.map_files())
    fragments.extend(renderer.headers(limits.header_files))
    return Rendered(
        fragments=fragments,
        order=order,
        below_cut=len(below),
        below_cut_shown=tuple(item.uri for item in below[:_SHOWN_BELOW_CUT]),
        unknown=tuple(unknown),
    )


class _Renderer:
    """One ranking's rendering: the store queries, batched, and the fragments made of them."""

    def __init__(self, backends: BackendSet, strategy: str, tokens: int) -> None:
        self.backends = backends
        self.strategy = strategy
        self.tokens = max(0, tokens)
        self.nodes: dict[str, Node] = {}
        self.file_score: dict[str, float] = {}  # file URI -> best relevance of its candidates
        self.headed: list[str] = []  # files of the best code candidates, in rank order
        self.facts: dict[str, tuple[str, float]] = {}  # file path -> (tier, modified)
        self.stamps: dict[str, tuple[str, datetime | None]] = {}  # file URI -> its facts, made

    # ---- candidates ---------------------------------------------------------------------

    def candidates(
        self, items: Sequence[Ranked], top: float
    ) -> tuple[list[ContextFragment], list[str], list[str]]:
        store = self.backends.nodes
        in_store = [
            i.uri for i in items if i.renderings is None and i.uri.startswith(_STORE_SCHEME)
        ]
        if store is not None and in_store:
            self.nodes = store.get_nodes(in_store)
        stored = (
            store.get_renderings(list(self.nodes), RENDER_DEPTHS, max_tokens=self.tokens)
            if store is not None and self.nodes
            else {}
        )
        planned = self._plan_renderings(items)
        self._load_facts({node.file_uri for node in self.nodes.values()})
        fragments: list[ContextFragment] = []
        order: list[str] = []
        unknown: list[str] = []
        for item in items:
            relevance = _relevance(item.score, top)
            node = self.nodes.get(item.uri)
            renderings: Mapping[int, Rendering] | None = item.renderings
            if renderings is None:
                renderings = stored.get(item.uri) if node is not None else planned.get(item.uri)
            if not renderings:
                if node is None and item.uri not in planned:
                    unknown.append(item.uri)
                continue
            order.append(item.uri)
            fragments.extend(self._fragments(item, node, _distinct(renderings, node), relevance))
            if node is not None:
                file_uri = node.file_uri
                self.file_score[file_uri] = max(self.file_score.get(file_uri, 0.0), relevance)
                if node.kind in _HEADED_KINDS and file_uri not in self.headed:
                    self.headed.append(file_uri)
        return fragments, order, unknown

    def _plan_renderings(self, items: Sequence[Ranked]) -> dict[str, dict[int, Rendering]]:
        plans = self.backends.plans
        wanted = [i.uri for i in items if i.renderings is None and i.uri.startswith(_PLAN_SCHEMES)]
        if plans is None or not wanted:
            return {}
        found: dict[str, dict[int, Rendering]] = plans.get_renderings(wanted)
        return found

    def _fragments(
        self,
        item: Ranked,
        node: Node | None,
        renderings: Sequence[Rendering],
        relevance: float,
    ) -> list[ContextFragment]:
        """The candidate's fragments: one for each of its renderings that fits."""
        signals = ", ".join(f"{name} #{rank}" for name, rank in item.signals.items())
        fitting = [r for r in renderings if r.token_count <= self.tokens]
        if not fitting:
            return []
        metadata: dict[str, str] = {
            "strategy": self.strategy,
            "kind": node.kind if node is not None else item.uri.partition("://")[0],
            "role": ROLE_CANDIDATE,
        }
        if signals:
            metadata["signals"] = signals
        metadata.update(item.metadata)
        file_uri = node.file_uri if node is not None else item.uri
        resource_uri = item.resource_uri or file_uri
        resource_type = item.resource_type or (node.resource_type if node else "unknown")
        return [
            self._make(
                uri=item.uri,
                rendering=rendering,
                relevance=relevance,
                resource_uri=resource_uri,
                resource_type=resource_type,
                tier=item.tier,
                file_uri=file_uri,
                metadata=metadata,
            )
            for rendering in fitting
        ]

    # ---- the files of the candidates ------------------------------------------------------

    def map_files(self) -> list[ContextFragment]:
        """The file of each stored candidate, where the strategy did not rank it itself."""
        store = self.backends.nodes
        missing = [f for f in self.file_score if f not in self.nodes]
        if store is None or not missing:
            return []
        files = store.get_nodes(missing)
        renderings = store.get_renderings(
            list(files), (DetailDepth.FULL_SOURCE, DetailDepth.OUTLINE), max_tokens=self.tokens
        )
        fragments: list[ContextFragment] = []
        for uri, node in files.items():
            for rendering in renderings.get(uri, {}).values():
                fragments.append(
                    self._make(
                        uri=uri,
                        rendering=rendering,
                        relevance=self.file_score[uri],
                        resource_uri=uri,
                        resource_type=node.resource_type,
                        tier="",
                        file_uri=uri,
                        metadata={
                            "strategy": self.strategy,
                            "kind": node.kind,
                            "role": ROLE_MAP,
                            "signals": "the file of ranked nodes",
                        },
                    )
                )
        return fragments

    def headers(self, limit: int) -> list[ContextFragment]:
        """For the files of the best code: the lines before the file's first symbol, less a
        licence or copyright notice they open with."""
        store = self.backends.nodes
        files = self.headed[:limit]
        if store is None or not files:
            return []
        whole = store.get_renderings(files, (DetailDepth.FULL_SOURCE,))
        texts: dict[str, str] = {}
        offsets: dict[str, int] = {}
        for file_uri in files:
            full = whole.get(file_uri, {}).get(DetailDepth.FULL_SOURCE)
            children = store.children(file_uri)
            starts = [child.line_start for child in children if child.line_start]
            if full is None or not starts:
                continue
            before = min(starts) - 1
            lines = full.content.split("\n", before)[:before]  # the first lines, not the file
            while lines and not lines[-1].strip():
                lines.pop()
            first = _after_licence(lines)  # a licence is not worth its tokens
            if lines[first:]:
                texts[file_uri] = "\n".join(lines[first:])
                offsets[file_uri] = first
        if not texts:
            return []
        tokenizer = self.backends.tokenizer or default_tokenizer()
        counts = tokenizer.count_many(list(texts.values()))
        fragments: list[ContextFragment] = []
        for (file_uri, text), count in zip(texts.items(), counts, strict=True):
            if count > self.tokens:
                continue
            file_node = self.nodes.get(file_uri)
            skip = offsets.get(file_uri, 0)
            rendering = Rendering(
                DetailDepth.FULL_SOURCE, text, count, 1 + skip, skip + text.count("\n") + 1
            )
            fragments.append(
                self._make(
                    uri=f"{file_uri}#{HEADER_SYMBOL}",
                    rendering=rendering,
                    # Just below the file's best candidate: it is read with that code.
                    relevance=_HEADER_SHARE * self.file_score.get(file_uri, 0.0),
                    resource_uri=file_uri,
                    resource_type=file_node.resource_type if file_node else "code",
                    tier="",
                    file_uri=file_uri,
                    metadata={"strategy": self.strategy, "kind": "header", "role": ROLE_HEADER},
                )
            )
        return fragments

    # ---- shared -------------------------------------------------------------------------

    def _load_facts(self, file_uris: set[str]) -> None:
        from contextfuse.kb.tiers import file_paths, tier_store_of

        tiers = tier_store_of(self.backends)
        store = self.backends.nodes
        if tiers is None or store is None or not file_uris:
            return
        self.facts = tiers.tiers_of(file_paths(file_uris, store.project))

    def _make(
        self,
        *,
        uri: str,
        rendering: Rendering,
        relevance: float,
        resource_uri: str,
        resource_type: str,
        tier: str,
        file_uri: str,
        metadata: dict[str, str],
    ) -> ContextFragment:
        redacted = rendering.content.count("[REDACTED:")
        if redacted:
            # The agent should know the text was altered, and why.
            metadata = {**metadata, "redacted": str(redacted)}
        stored_tier, modified = self._stamp(file_uri)
        # Hundreds of fragments a request, from the strategy's and the stores' data: built
        # without validation where every value is of the model's type and bounds.
        return build_fragment(
            uko_node=uri,
            content=rendering.content,
            detail_depth=rendering.depth,
            token_count=rendering.token_count,
            relevance_score=relevance,
            resource_uri=resource_uri,
            location=rendering.location,
            resource_type=resource_type,
            tier=_tier(tier or stored_tier),
            metadata=metadata,
            created_at=modified,
        )

    def _stamp(self, file_uri: str) -> tuple[str, datetime | None]:
        """The stored tier and the modification time of the file ``file_uri`` (its
        fragments' tier and time), made once for all the file's fragments."""
        stamp = self.stamps.get(file_uri)
        if stamp is None:
            facts = self.facts.get(uri_path(file_uri))
            stamp = (
                ("", None)
                if facts is None
                else (facts[0], datetime.fromtimestamp(facts[1], timezone.utc))
            )
            self.stamps[file_uri] = stamp
        return stamp


_TIERS: dict[str, Tier] = {"hot": "hot", "warm": "warm", "cold": "cold"}


def _tier(value: str) -> Tier:
    """A valid tier (``warm``, the default, for anything else)."""
    return _TIERS.get(value, "warm")


def _relevance(score: float, top: float) -> float:
    """The candidate's score relative to the strategy's best, within [0, 1]."""
    if top <= 0:
        return 1.0 if score >= top else 0.0
    return max(0.0, min(1.0, score / top))


def _distinct(renderings: Mapping[int, Rendering], node: Node | None) -> list[Rendering]:
    """The renderings, less a symbol's shallower ones whose text is its full source.

    A small function's signatures are its whole source: it is shown at full source, not as a
    second, shallower copy that deduplication (which keeps either) might pick instead. A
    file's outline stays whatever its text: the file map shows files by their outline.
    """
    full = renderings.get(DetailDepth.FULL_SOURCE)
    if full is None or node is None or node.kind == "file":
        return list(renderings.values())
    return [r for r in renderings.values() if r is full or r.content != full.content]


#: How a line of comment starts, in the languages the index parses and their config files.
_COMMENT_STARTS = ("/*", "*", "//", "#", "--", ";")
#: A leading comment block with one of these (lowercased) is a licence or copyright notice.
_LICENCE_WORDS = ("licen", "copyright")


def _after_licence(lines: list[str]) -> int:
    """The index of a header's first line after a leading comment block that is a licence or
    copyright notice (0: the header does not start with one)."""
    end = 0
    while end < len(lines):
        line = lines[end].strip()
        if line.startswith("/*"):
            # A block comment: through the line that closes it.
            while end < len(lines) and "*/" not in lines[end]:
                end += 1
        elif line and not line.startswith(_COMMENT_STARTS):
            break
        end += 1
    block = "\n".join(lines[:end]).lower()
    if not any(word in block for word in _LICENCE_WORDS):
        return 0
    return end
