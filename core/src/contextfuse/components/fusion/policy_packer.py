"""``PolicyPacker``: the default BudgetPacker, which spends a budget by the ``PackingPolicy``.

For the candidates of ranking strategies (fragments with a ``role``, rendered by the pipeline
from the knowledge base) it spends the budget in passes:

0. **records**: every record of another store (a plan, a decision, a commit) in one line,
   best first: the breadth of records, as the file map is the breadth of code;
1. **code**: the best code candidates (``policy.code_kinds``, records of other stores such as
   commits and plans, and small files whole) at the depth the resolver chose, up to the code
   share of the budget and part of the fragment slots. A node in a file with much evidence
   (several good candidates) ranks above an equally good stray node, so the code
   concentrates in the files most likely to matter. The pass goes in that order of
   relevance for ``relevance_first_share`` of its room and for the ``relevance_first`` best
   candidates, whatever their sizes; then by **value per token** (relevance to the power
   ``relevance_power`` over tokens, a piece under ``density_floor_tokens`` counted as that
   big), so a big piece does not crowd out several smaller ones nearly as relevant, and a
   class's members that are candidates themselves come before the whole class. No line is
   shown twice at full source: a node whose source is partly shown already falls back to
   its signatures, one wholly shown is left out, and a class whose turn comes after some of
   its methods are shown is shown whole in their place when that fits. Signatures take at
   most what one outline may take (``max_outline_share``), else the outline (names only)
   stands in for them. The first full-source code of a file brings the file's header (its
   imports and constants) when it is small. A record listed in pass 0 is deepened to its
   resolved depth, or the deepest that fits;
2. **map**: the outline of the best files not shown yet (a file is as good as its best
   candidate), up to ``map_files`` and within the budget; a file whose outline is more than
   one outline may take is represented by the outline of its best candidate, which the
   code passes that follow may still show deeper in its place;
3. **code** again with what the map left;
4. **whole files**: when the selection ends below ``spend_target`` of the budget (the
   fragment cap reached, or no candidate left that fits), the files with the most evidence
   are shown whole in place of their parts, and code gets what is left.

Other fragments (the v1 API, fragment strategies) are packed as ``GreedyKnapsackPacker``
packs them: greedily in score order, falling back to shallower renderings.

Every depth other than the resolver's choice is recorded in ``fallbacks`` with its reason in
``notes``; ``stopped_by`` says what ended the selection.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence

from contextfuse.components.fusion.packer import GreedyKnapsackPacker, pack_order_key
from contextfuse.components.fusion.policy import PackingPolicy
from contextfuse.components.protocols import PackKey, PackResult, ScoredFragment
from contextfuse.models import ContextFragment, DetailDepth
from contextfuse.ranked import ROLE_CANDIDATE, ROLE_HEADER, ROLE_MAP
from contextfuse.signals import is_test_path, uri_path

__all__ = ["PolicyPacker"]

_LOCATION = re.compile(r"^L(\d+)-L(\d+)$")
_FULL = DetailDepth.FULL_SOURCE
_SIGNATURES = DetailDepth.SIGNATURES
_OUTLINE = DetailDepth.OUTLINE
_LISTING = DetailDepth.MODULE_LISTING
_STORE_SCHEME = "project://"
_EVIDENCE_NODES = 5  # a file's evidence: the sum of its best candidates' scores


class PolicyPacker(GreedyKnapsackPacker):
    """Packs knowledge-base candidates by the ``PackingPolicy``; anything else greedily.

    ``depth_fallback_steps`` and ``min_fragment_tokens`` are those of
    ``GreedyKnapsackPacker`` (the greedy route).
    """

    def __init__(
        self,
        depth_fallback_steps: Sequence[int] = DetailDepth.FALLBACK,
        min_fragment_tokens: int = 10,
        policy: PackingPolicy | None = None,
    ) -> None:
        super().__init__(depth_fallback_steps, min_fragment_tokens)
        self.policy = policy if policy is not None else PackingPolicy()

    def pack_keyed(
        self,
        items: Sequence[ScoredFragment],
        keys: Sequence[PackKey],
        budget: int,
        detail_level_maps: Mapping[str, Sequence[ContextFragment]],
    ) -> PackResult:
        if not any("role" in item.fragment.metadata for item in items):
            return super().pack_keyed(items, keys, budget, detail_level_maps)
        ordered = [items[key[4]] for key in keys]
        return _PolicyRun(self.policy, ordered, max(0, int(budget)), detail_level_maps).run()


class _PolicyRun:
    """One packing by the policy: the passes share what is chosen and what is shown."""

    def __init__(
        self,
        policy: PackingPolicy,
        ordered: list[ScoredFragment],
        available: int,
        alternatives: Mapping[str, Sequence[ContextFragment]],
    ) -> None:
        self.policy = policy
        self.available = available
        self.alternatives = alternatives
        self.items = ordered  # best first
        self.headers: dict[str, ScoredFragment] = {}
        self.files: dict[str, ScoredFragment] = {}  # file URI -> the file's own scored item
        self.by_node: dict[str, ScoredFragment] = {}
        candidates: list[ScoredFragment] = []
        for item in ordered:
            fragment = item.fragment
            self.by_node.setdefault(fragment.uko_node, item)
            role = fragment.metadata.get("role", ROLE_CANDIDATE)
            if role == ROLE_HEADER:
                self.headers[fragment.provenance.resource_uri] = item
                continue
            if fragment.metadata.get("kind") == "file":
                self.files[fragment.uko_node] = item
            if role != ROLE_MAP:
                candidates.append(item)
        self.candidates = candidates
        self.top = max((c.score for c in candidates), default=0.0) or 1.0
        # A file's score: its best candidate's; its evidence: the sum of its best five.
        self.file_score: dict[str, float] = {}
        evidence: dict[str, list[float]] = {}
        for item in candidates:
            file_uri = _file_of(item.fragment)
            if file_uri not in self.file_score:
                self.file_score[file_uri] = item.score
            evidence.setdefault(file_uri, []).append(item.score)
        # No candidate counts below zero: a node that only lower-quality strategies found
        # (the scorer puts it below every node the leading one found) adds no evidence.
        self.file_evidence = {
            f: sum(max(0.0, score) for score in v[:_EVIDENCE_NODES]) for f, v in evidence.items()
        }
        self.chosen: list[ScoredFragment] = []
        self.taken: set[str] = set()
        self.spans: dict[str, list[tuple[int, int]]] = {}  # file -> full-source spans shown
        self.signature_spans: dict[str, list[tuple[int, int]]] = {}
        self.mapped: set[str] = set()
        self.listed: set[str] = set()  # records shown in one line, to deepen
        self.used = 0
        self.fallbacks: dict[str, tuple[int, int]] = {}
        self.notes: dict[str, str] = {}
        self.left_out: dict[str, str] = {}  # node -> why the packer passed it over
        self.cap = policy.fragment_cap(available)
        self.capped = False
        self.wanted: set[str] | None = None  # the types of file shown (see _map_types)
        self.relevance = self._relevance()
        self.symbols: dict[str, list[ScoredFragment]] | None = None  # file -> its symbols
        self.stand_ins: dict[str, ScoredFragment] = {}  # node -> its outline in the map

    # ---- the passes -----------------------------------------------------------------------

    def run(self) -> PackResult:
        policy, available = self.policy, self.available
        code_budget = available - min(int(available * policy.map_share), policy.max_map_tokens)
        cap = self.cap
        map_slots = min(policy.map_files, int(cap * policy.map_slot_share)) if cap else 0
        first_slots = cap - map_slots if cap else None
        code_order = self._code_order()
        by_value = self._value_per_token_order()
        self.wanted = self._map_types()
        self._list_records(available, cap)
        # The best pieces first whatever their size, then the most relevance per token.
        self._spend_on_code(
            code_order, int(code_budget * policy.relevance_first_share), first_slots
        )
        self._spend_on_code(code_order[: policy.relevance_first], code_budget, first_slots)
        self._spend_on_code(by_value, code_budget, first_slots)
        self._spend_on_map(available)
        self._spend_on_code(by_value, available, cap)
        if self.used < available * policy.spend_target:
            # The cap or the candidates ended it early: whole files in place of their parts.
            self._upgrade_to_whole_files(available)
            self._spend_on_code(by_value, available, cap)
        if self.used < available * policy.spend_target and self.wanted is not None:
            # Nothing more of the kinds the request is about: the other kinds fill the rest.
            self.wanted = None
            self._spend_on_code(by_value, available, cap)
        return self._result()

    def _relevance(self) -> dict[str, float]:
        """Each candidate's relevance for the code passes: its score blended with its file's
        evidence (``file_evidence_weight``, scaled to the budget), both relative to the best."""
        weight = self.policy.file_evidence(self.available)
        strongest = max(self.file_evidence.values(), default=0.0) or 1.0
        top = self.top
        return {
            item.uko_node: (1 - weight) * item.score / top
            + weight * self.file_evidence.get(_file_of(item.fragment), 0.0) / strongest
            for item in self.candidates
        }

    def _code_order(self) -> list[ScoredFragment]:
        """The candidates by relevance, best first."""
        relevance = self.relevance
        return sorted(self.candidates, key=lambda item: (-relevance[item.uko_node], item.uko_node))

    def _value_per_token_order(self) -> list[ScoredFragment]:
        """The candidates by value per token: relevance to the power ``relevance_power`` (the
        chance that a piece holds the answer falls faster than its relevance) over tokens, a
        piece under ``density_floor_tokens`` counted as that big."""
        relevance = self.relevance
        power = self.policy.relevance_power
        floor = self.policy.density_floor_tokens

        def key(item: ScoredFragment) -> tuple[float, str]:
            value = max(0.0, relevance[item.uko_node]) ** power
            return (-value / max(floor, item.fragment.token_count), item.uko_node)

        return sorted(self.candidates, key=key)

    def _full(self, slots: int | None) -> bool:
        if slots is not None and len(self.chosen) >= slots:
            self.capped = self.capped or slots == self.cap
            return True
        return False

    def _list_records(self, limit: int, slots: int | None) -> None:
        """Every record of another store (a plan, a decision, a commit) as one line, best
        first: the breadth of records, as the file map is the breadth of code. The code
        passes deepen them."""
        for item in self.candidates:
            if self.used >= limit or self._full(slots):
                return
            fragment = item.fragment
            if _in_store(fragment) or "role" not in fragment.metadata:
                continue
            listing = self._rendering(fragment.uko_node, _LISTING)
            if listing is not None and self.used + listing.token_count <= limit:
                note = "" if listing is fragment else "listing: every record first, in one line"
                self._take(item, listing, note)

    def _deepen(self, item: ScoredFragment, limit: int) -> None:
        """A record listed in one line, shown as deep as its resolved depth and ``limit``
        allow instead."""
        node = item.uko_node
        listed = next(s for s in self.chosen if s.uko_node == node)
        room = limit - self.used + listed.token_count
        deeper: ContextFragment | None = item.fragment
        if deeper is not None and deeper.token_count > room:
            deeper = self._shallower(node, item.fragment.detail_depth, room)
        if deeper is None or deeper.detail_depth <= listed.fragment.detail_depth:
            return
        self.chosen.remove(listed)
        self.used -= listed.token_count
        self.fallbacks.pop(node, None)
        self.notes.pop(node, None)
        note = (
            ""
            if deeper is item.fragment
            else (f"{DetailDepth.describe(deeper.detail_depth)}: the deeper rendering did not fit")
        )
        self._take(item, deeper, note)

    def _spend_on_code(
        self, order: Sequence[ScoredFragment], limit: int, slots: int | None
    ) -> None:
        policy = self.policy
        piece = policy.max_piece(self.available)
        outline = min(piece, policy.max_outline(self.available))
        header_limit = max(1, int(self.available * policy.max_header_share))
        for item in order:
            if self.used >= limit or self._full(slots):
                return
            fragment = item.fragment
            node = fragment.uko_node
            standing = self.stand_ins.get(node)  # its outline in the map, to deepen
            if node in self.taken and standing is None:
                if node in self.listed:
                    self._deepen(item, limit)
                continue
            kind = fragment.metadata.get("kind", "")
            if kind == "file":
                if fragment.detail_depth != _FULL:
                    continue  # big files are shown by their symbols and in the map
            elif not self._is_code(fragment, kind):
                continue
            stored = _in_store(fragment)
            if stored and self.wanted is not None and _map_type(fragment) not in self.wanted:
                self.left_out[node] = "not the kind of file the request is about"
                continue
            if stored and kind != "file" and fragment.detail_depth < _SIGNATURES:
                # Too big even for its signatures: the map shows its file.
                self.left_out[node] = "too big for one piece"
                continue
            file_uri = _file_of(fragment)
            span = _span(fragment)
            shown = self.spans.get(file_uri, [])
            if span is not None and _covered(shown, span):
                self.left_out[node] = "already shown"
                continue
            choice: ContextFragment | None = fragment
            note = ""
            if fragment.detail_depth == _FULL and span is not None and _overlaps(shown, span):
                parts = self._parts_within(file_uri, span)
                if (
                    parts
                    and self.used - sum(p.token_count for p in parts) + fragment.token_count
                    <= limit
                ):
                    # Its turn has come with room: whole, in place of its members shown.
                    self._remove(parts)
                    note = f"full source: in place of {len(parts)} of its parts already shown"
                else:
                    choice = self._rendering(node, _SIGNATURES)
                    note = "signatures: part of its source is already shown"
            if choice is None:
                self.left_out[node] = "already shown"
                continue
            if stored and choice.detail_depth == _SIGNATURES:
                if choice.token_count > outline:
                    # Too big for its signatures: its outline (names only), like a file's.
                    choice = self._rendering(node, _OUTLINE)
                    if choice is None or choice.token_count > outline:
                        self.left_out[node] = "even its outline is more than one outline may take"
                        continue
                    note = "outline: its signatures are more than one outline may take"
                choice_span = _span(choice)
                if choice_span is not None and (
                    _overlaps(shown, choice_span)
                    or _overlaps(self.signature_spans.get(file_uri, []), choice_span)
                ):
                    self.left_out[node] = "already shown"
                    continue
            freed = 0
            if standing is not None:
                if choice.detail_depth <= standing.fragment.detail_depth:
                    continue
                freed = standing.token_count
            if self.used - freed + choice.token_count > limit:
                self.left_out[node] = "did not fit"
                if stored:
                    continue
                # A record of another store (a commit, a decision) is still worth a line.
                choice = self._shallower(node, choice.detail_depth, limit - self.used)
                if choice is None:
                    continue
                depth = DetailDepth.describe(choice.detail_depth)
                note = f"{depth}: the deeper rendering did not fit"
            if standing is not None:
                self._remove([standing])
                del self.stand_ins[node]
            self._take(item, choice, note)
            header = self.headers.get(file_uri)
            if (
                header is not None
                and choice.detail_depth == _FULL
                and kind != "file"
                and header.uko_node not in self.taken
                and not self._full(slots)
            ):
                header_span = _span(header.fragment)
                if (
                    header.token_count <= header_limit
                    and self.used + header.token_count <= limit
                    and not (
                        header_span is not None
                        and _overlaps(self.spans.get(file_uri, []), header_span)
                    )
                ):
                    self._take(header, header.fragment, "")

    def _is_code(self, fragment: ContextFragment, kind: str) -> bool:
        """Whether a candidate is shown as code: a code kind, or a record of another store."""
        if kind in self.policy.code_kinds:
            return True
        return not _in_store(fragment) or not kind

    def _spend_on_map(self, limit: int) -> None:
        policy = self.policy
        max_outline = policy.max_outline(self.available)
        wanted = self.wanted
        mapped = 0
        for file_uri, _ in sorted(self.file_score.items(), key=lambda kv: (-kv[1], kv[0])):
            if mapped >= policy.map_files or self.used >= limit or self._full(self.cap):
                return
            if file_uri in self.spans or file_uri in self.mapped or file_uri in self.taken:
                continue
            item = self.files.get(file_uri)
            outline = self._rendering(file_uri, _OUTLINE) if item is not None else None
            if item is None or outline is None or outline.token_count > max_outline:
                # Too big for the map: the outline of its best candidate stands for it.
                stand_in = self._symbol_outline(file_uri, max_outline)
                if stand_in is None:
                    continue
                item, outline = stand_in
                note = "outline: stands in the file map for its file, too big to outline"
            else:
                note = "" if outline is item.fragment else "outline: file map (breadth)"
            if wanted is not None and _map_type(outline) not in wanted:
                self.left_out[file_uri] = "not the kind of file the request is about"
                continue
            if self.used + outline.token_count > limit:
                self.left_out[file_uri] = "did not fit"
            else:
                self._take(item, outline, note)
                mapped += 1
                if item.uko_node != file_uri:
                    self.stand_ins[item.uko_node] = self.chosen[-1]

    def _symbol_outline(
        self, file_uri: str, max_outline: int
    ) -> tuple[ScoredFragment, ContextFragment] | None:
        """The best symbol of ``file_uri`` not shown yet and its outline, when that takes
        at most ``max_outline`` tokens."""
        if self.symbols is None:
            self.symbols = {}
            for item in self.candidates:
                if item.fragment.metadata.get("kind") != "file":
                    self.symbols.setdefault(_file_of(item.fragment), []).append(item)
        for item in self.symbols.get(file_uri, ()):
            if item.uko_node in self.taken:
                continue
            outline = self._rendering(item.uko_node, _OUTLINE)
            if outline is None or outline.token_count > max_outline:
                return None
            return item, outline
        return None

    def _map_types(self) -> set[str] | None:
        """The types of file the map shows: those of the best candidates (None: any).

        A question about code gets a map of code files, not of licences and changelogs that
        share its words, nor of tests unless tests are among its best candidates; one whose
        best candidates are documentation gets documents too.
        """
        best = self.policy.map_types_from_best
        if not best:
            return None
        stored = [c for c in self.candidates if _in_store(c.fragment)][:best]
        return {_map_type(c.fragment) for c in stored}

    def _upgrade_to_whole_files(self, limit: int) -> None:
        piece = self.policy.max_piece(self.available)
        for file_uri, _ in sorted(self.file_evidence.items(), key=lambda kv: (-kv[1], kv[0])):
            if self.used >= limit * self.policy.spend_target:
                return
            item = self.files.get(file_uri)
            shown_at_all = file_uri in self.spans or file_uri in self.mapped
            if not shown_at_all or item is None:
                continue
            whole = self._rendering(file_uri, _FULL)
            parts = [s for s in self.chosen if _file_of(s.fragment) == file_uri]
            shown = sum(s.token_count for s in parts)
            if whole is None or whole.token_count > piece:
                continue
            if self.used - shown + whole.token_count > limit:
                continue
            self._remove(parts)
            best = max(parts, key=lambda s: s.score)
            note = f"full source: the whole file, in place of {len(parts)} of its parts"
            self._take(
                ScoredFragment(item.fragment, best.score, best.components, best.strategies),
                whole,
                note,
            )

    # ---- bookkeeping ----------------------------------------------------------------------

    def _parts_within(self, file_uri: str, span: tuple[int, int]) -> list[ScoredFragment]:
        """The pieces chosen of ``file_uri`` that lie within ``span`` (a class's methods
        shown), or none when a piece shown at full source overlaps ``span`` without lying
        within it."""
        parts = []
        for chosen in self.chosen:
            part_span = _span(chosen.fragment)
            if part_span is None or _file_of(chosen.fragment) != file_uri:
                continue
            if span[0] <= part_span[0] and part_span[1] <= span[1]:
                parts.append(chosen)
            elif chosen.fragment.detail_depth == _FULL and _overlaps([span], part_span):
                return []
        return parts

    def _remove(self, parts: Sequence[ScoredFragment]) -> None:
        """Takes ``parts`` back out of the selection (something bigger shows them)."""
        removed = {id(part) for part in parts}
        self.chosen = [s for s in self.chosen if id(s) not in removed]
        for part in parts:
            node = part.uko_node
            self.taken.discard(node)
            self.listed.discard(node)
            self.fallbacks.pop(node, None)
            self.notes.pop(node, None)
            self.used -= part.token_count
            fragment = part.fragment
            file_uri = _file_of(fragment)
            if fragment.detail_depth == _OUTLINE and fragment.metadata.get("kind") == "file":
                self.mapped.discard(file_uri)
            span = _span(fragment)
            for spans in (self.spans, self.signature_spans):
                kept = [s for s in spans.get(file_uri, []) if s != span]
                if kept:
                    spans[file_uri] = kept
                else:
                    spans.pop(file_uri, None)

    def _shallower(self, node: str, depth: int, room: int) -> ContextFragment | None:
        """The node's deepest rendering shallower than ``depth`` that takes at most ``room``."""
        fitting = [
            alt
            for alt in self.alternatives.get(node, ())
            if alt.detail_depth < depth and alt.token_count <= room
        ]
        return max(fitting, key=lambda alt: alt.detail_depth, default=None)

    def _rendering(self, node: str, depth: int) -> ContextFragment | None:
        """The node's rendering at ``depth``: its resolved fragment or an alternative."""
        item = self.by_node.get(node)
        if item is not None and item.fragment.detail_depth == depth:
            return item.fragment
        for alt in self.alternatives.get(node, ()):
            if alt.detail_depth == depth:
                return alt
        return None

    def _take(self, item: ScoredFragment, rendering: ContextFragment, note: str) -> None:
        if rendering is not item.fragment:
            item = ScoredFragment(rendering, item.score, item.components, item.strategies)
            self.fallbacks[rendering.uko_node] = (
                self._resolved_depth(rendering.uko_node),
                rendering.detail_depth,
            )
        if note:
            self.notes[rendering.uko_node] = note
        self.left_out.pop(rendering.uko_node, None)
        self.chosen.append(item)
        self.taken.add(rendering.uko_node)
        if rendering.detail_depth == _LISTING:
            self.listed.add(rendering.uko_node)
        else:
            self.listed.discard(rendering.uko_node)
        file_uri = _file_of(rendering)
        span = _span(rendering)
        if rendering.detail_depth == _OUTLINE and rendering.metadata.get("kind") == "file":
            self.mapped.add(file_uri)
        elif span is not None and rendering.detail_depth == _FULL:
            self.spans.setdefault(file_uri, []).append(span)
        elif span is not None:
            self.signature_spans.setdefault(file_uri, []).append(span)
        self.used += rendering.token_count

    def _resolved_depth(self, node: str) -> int:
        item = self.by_node.get(node)
        return item.fragment.detail_depth if item is not None else -1

    def _result(self) -> PackResult:
        kept = {s.uko_node for s in self.chosen}
        omitted = tuple(s for s in self.items if s.uko_node not in kept)
        if self.used >= self.available * self.policy.spend_target:
            stopped_by = "budget"
        elif self.capped:
            stopped_by = "fragment cap"
        else:
            stopped_by = "candidates"
        return PackResult(
            packed=tuple(sorted(self.chosen, key=pack_order_key)),
            omitted=omitted,
            fallbacks=self.fallbacks,
            notes={**self.left_out, **self.notes},
            stopped_by=stopped_by,
        )


def _in_store(fragment: ContextFragment) -> bool:
    """Whether the fragment shows a node of the repository's store (not a record of another)."""
    return fragment.uko_node.startswith(_STORE_SCHEME)


def _file_of(fragment: ContextFragment) -> str:
    return fragment.provenance.resource_uri


def _map_type(fragment: ContextFragment) -> str:
    """The fragment's resource type, with test code a type of its own (``tests``)."""
    provenance = fragment.provenance
    return "tests" if _is_test_file(provenance.resource_uri) else provenance.resource_type


# The passes look at each candidate's file and lines again and again, and a repository has
# a bounded number of files and spans: each is worked out once per process.
@functools.lru_cache(maxsize=8192)
def _is_test_file(file_uri: str) -> bool:
    return is_test_path(uri_path(file_uri))


def _span(fragment: ContextFragment) -> tuple[int, int] | None:
    return _parsed_span(fragment.provenance.location or "")


@functools.lru_cache(maxsize=8192)
def _parsed_span(location: str) -> tuple[int, int] | None:
    match = _LOCATION.match(location)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _covered(spans: list[tuple[int, int]], span: tuple[int, int]) -> bool:
    return any(a <= span[0] and span[1] <= b for a, b in spans)


def _overlaps(spans: list[tuple[int, int]], span: tuple[int, int]) -> bool:
    return any(not (span[1] < a or b < span[0]) for a, b in spans)
