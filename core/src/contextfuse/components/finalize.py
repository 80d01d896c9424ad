"""Phase 3 defaults: reading order, structure preamble and skeleton compression.

* ``ConfigurableOrderer`` - the reading order of the packed fragments ("score", "file",
  "edges").
* ``StructurePreambleGenerator`` - a short markdown overview put before the fragments and
  counted in the budget with the real tokenizer; it never exceeds its token allowance.
* ``DepthSkeletonCompressor`` - a child context: focus nodes kept deep, the rest compressed
  to signatures / outline / listing within a skeleton budget.

Everything here is deterministic: the same input gives the same output.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Final

from contextfuse.components.fusion import check_depth_steps
from contextfuse.components.protocols import AssembledContext, ScoredFragment
from contextfuse.models import ContextFragment, ContextRequest, DetailDepth
from contextfuse.tokenizer import Tokenizer, default_tokenizer

__all__ = [
    "DEPTH_LABELS",
    "ORDER_MODES",
    "ConfigurableOrderer",
    "DepthSkeletonCompressor",
    "StructurePreambleGenerator",
    "depth_label",
    "file_of",
    "line_of",
]

#: Reading orders of ``ConfigurableOrderer``.
ORDER_MODES: Final[tuple[str, ...]] = ("score", "file", "edges")

#: Names of the fallback depths, as shown in the preamble.
DEPTH_LABELS: Final[dict[int, str]] = {
    DetailDepth.FULL_SOURCE: "full",
    DetailDepth.SIGNATURES: "signatures",
    DetailDepth.OUTLINE: "outline",
    DetailDepth.MODULE_LISTING: "listing",
}

_LINE = re.compile(r"L(\d+)")


def depth_label(depth: int) -> str:
    """``full`` / ``signatures`` / ``outline`` / ``listing``, or ``depth N`` for another."""
    return DEPTH_LABELS.get(depth, f"depth {depth}")


def file_of(uko_node: str) -> str:
    """The file URI of a node: the part before ``#`` (``X#sym`` is a symbol of file ``X``)."""
    return uko_node.split("#", 1)[0]


def line_of(fragment: ContextFragment) -> int:
    """First line of ``provenance.location`` (``L<a>-L<b>``), or -1 when there is none."""
    match = _LINE.search(fragment.provenance.location)
    return int(match.group(1)) if match else -1


# ---- ordering ------------------------------------------------------------------------------


class ConfigurableOrderer:
    """The reading order of the packed fragments.

    * ``score`` - as packed (best first).
    * ``file`` - for reading code: by file URI (the uko_node before ``#``), then by first line
      of ``provenance.location`` (``L<a>-L<b>``; whole-file fragments without a location
      first), then depth desc, then uko_node; remaining ties keep their packed order.
    * ``edges`` - strongest at both ends (lost-in-the-middle mitigation): the best first, the
      second best last, the third second, the fourth second to last, ...; "best" is score
      desc, ties in packed order.

    ``request`` is accepted for the protocol and not used.
    """

    def __init__(self, mode: str = "score") -> None:
        if mode not in ORDER_MODES:
            raise ValueError(f"unknown order mode {mode!r}; valid modes: {', '.join(ORDER_MODES)}")
        self.mode = mode

    def order(
        self, fragments: Sequence[ScoredFragment], request: ContextRequest
    ) -> list[ScoredFragment]:
        items = list(fragments)
        if self.mode == "file":
            return sorted(items, key=_file_order)
        if self.mode == "edges":
            ranked = sorted(items, key=lambda s: -s.score)  # stable: ties keep packed order
            return ranked[0::2] + ranked[1::2][::-1]
        return items


def _file_order(scored: ScoredFragment) -> tuple[str, int, int, str]:
    fragment = scored.fragment
    return (
        file_of(fragment.uko_node),
        line_of(fragment),
        -fragment.detail_depth,
        fragment.uko_node,
    )


# ---- preamble ------------------------------------------------------------------------------


def _split_uri(uri: str) -> tuple[str, list[str]]:
    """``(root, path parts)``: ``project://app/src/a.py`` -> ``("project://app", [src, a.py])``."""
    if "://" in uri:
        scheme, rest = uri.split("://", 1)
        head, _, tail = rest.partition("/")
        return f"{scheme}://{head}", [p for p in tail.split("/") if p]
    return "", [p for p in uri.split("/") if p]


class _Dir:
    """A node of the file tree: sub-entries by name, and the renderings at this path."""

    __slots__ = ("children", "entries")

    def __init__(self) -> None:
        self.children: dict[str, _Dir] = {}
        self.entries: list[tuple[str, int]] = []  # (symbol or "", depth)

    def child(self, name: str) -> _Dir:
        found = self.children.get(name)
        if found is None:
            found = self.children[name] = _Dir()
        return found


def _location(fragment: ContextFragment) -> tuple[str, list[str], str]:
    """``(root, path parts, symbol)`` of a fragment: the file from provenance.resource_uri
    (else the uko_node), the symbol from the uko_node's ``#`` part."""
    file_uri = file_of(fragment.provenance.resource_uri) or file_of(fragment.uko_node)
    root, parts = _split_uri(file_uri)
    _, _, symbol = fragment.uko_node.partition("#")
    return root, parts, symbol


def _entry_text(entries: list[tuple[str, int]]) -> str:
    whole = sorted({depth for symbol, depth in entries if not symbol}, reverse=True)
    symbols = sorted((symbol, -depth) for symbol, depth in entries if symbol)
    text = "".join(f" [{depth_label(d)}]" for d in whole)
    if symbols:
        text += ": " + ", ".join(f"{s} [{depth_label(-d)}]" for s, d in symbols)
    return text


def _render(directory: _Dir, indent: int, out: list[str]) -> None:
    for name in sorted(directory.children):
        node, label = directory.children[name], name
        while not node.entries and len(node.children) == 1:  # compact a single-child chain
            (sub_name, node), *_ = node.children.items()
            label = f"{label}/{sub_name}"
        slash = "/" if node.children else ""
        out.append(f"{'  ' * indent}- {label}{slash}{_entry_text(node.entries)}")
        _render(node, indent + 1, out)


def _tree_lines(fragments: Sequence[ContextFragment]) -> tuple[list[str], set[str]]:
    """The compact file tree of ``fragments`` and the roots (projects) it shows."""
    roots: dict[str, _Dir] = {}
    for fragment in fragments:
        root, parts, symbol = _location(fragment)
        node = roots.setdefault(root, _Dir())
        for part in parts:
            node = node.child(part)
        node.entries.append((symbol, fragment.detail_depth))
    lines: list[str] = []
    for root in sorted(roots):
        if root:
            top = roots[root]
            lines.append(f"- {root}{_entry_text(top.entries)}")
            _render(top, 1, lines)
        else:
            _render(roots[root], 0, lines)
    return lines, set(roots)


def _short_name(fragment: ContextFragment, roots: set[str]) -> str:
    root, parts, symbol = _location(fragment)
    if root not in roots or not parts:
        return fragment.uko_node
    return "/".join(parts) + (f"#{symbol}" if symbol else "")


class StructurePreambleGenerator:
    """A short markdown overview of the assembled context, counted in the budget.

    Sections, in priority order: a header (strategies used, budget used, fragment and file
    counts); the file tree of what was included (paths from ``provenance.resource_uri``,
    ``project://<project>/<path>``, else the uko_node; single-child directory chains
    compacted; each file with its depth marker and its symbols); the best nodes that did not
    fit (first ``max_omitted`` of ``omitted``, which the caller gives best first).

    The text never exceeds ``max_tokens`` tokens of ``tokenizer`` (default: the real
    ``default_tokenizer()``): sections are truncated line by line with a "... N more" line
    where one fits, and ``""`` is returned when even the header does not fit.
    ``max_tokens_share`` is the share of the available budget a caller should grant the
    preamble (see ``budget_for``).
    """

    def __init__(
        self,
        tokenizer: Tokenizer | None = None,
        max_tokens_share: float = 0.1,
        max_omitted: int = 5,
    ) -> None:
        if not 0.0 <= max_tokens_share <= 1.0:
            raise ValueError(f"max_tokens_share must lie within 0..1; got {max_tokens_share}")
        if max_omitted < 0:
            raise ValueError(f"max_omitted must be >= 0; got {max_omitted}")
        self._tokenizer = tokenizer
        self.max_tokens_share = max_tokens_share
        self.max_omitted = max_omitted

    @property
    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = default_tokenizer()
        return self._tokenizer

    def budget_for(self, available_tokens: int) -> int:
        """The preamble's token allowance out of ``available_tokens``."""
        return max(0, math.floor(available_tokens * self.max_tokens_share))

    def generate(
        self,
        fragments: Sequence[ContextFragment],
        strategies_used: Sequence[str],
        budget_used: float,
        max_tokens: int,
        omitted: Sequence[ContextFragment] = (),
    ) -> str:
        if max_tokens <= 0:
            return ""
        count = self.tokenizer.count
        tree, roots = _tree_lines(fragments)
        files = len({(r, tuple(p)) for r, p, _ in map(_location, fragments)})
        header = [
            "## Context overview",
            f"Strategies: {', '.join(strategies_used) or '(none)'} | "
            f"Budget used: {budget_used:.0%} | "
            f"{len(fragments)} fragment{'s' if len(fragments) != 1 else ''} "
            f"from {files} file{'s' if files != 1 else ''}",
        ]
        if count("\n".join(header)) > max_tokens:
            return ""
        omitted_lines = [
            f"- {_short_name(f, roots)} [{depth_label(f.detail_depth)}, {f.token_count} tokens]"
            for f in omitted[: self.max_omitted]
        ]
        lines = list(header)
        used = count("\n".join(lines))
        # The tree leaves room for the best omitted node (when both fit at all).
        omitted_title = "### Not included (best first)"
        reserve = (
            count("\n" + omitted_title) + count("\n" + omitted_lines[0]) if omitted_lines else 0
        )
        if used + reserve + count("\n### Included\n- x") > max_tokens:
            reserve = 0
        sections = [
            ("### Included", tree, len(tree), max_tokens - reserve),
            (omitted_title, omitted_lines, len(omitted), max_tokens),
        ]
        for title, body, total, limit in sections:
            if not body:
                continue
            cost = used + count("\n" + title)
            taken: list[str] = []
            costs: list[int] = []
            for line in body:
                line_cost = count("\n" + line)
                if cost + line_cost > limit:
                    break
                taken.append(line)
                costs.append(line_cost)
                cost += line_cost
            if len(taken) < total:  # say how many are not shown, making room if needed
                while taken:
                    marker = f"- ... {total - len(taken)} more"
                    marker_cost = count("\n" + marker)
                    if cost + marker_cost <= limit:
                        taken.append(marker)
                        cost += marker_cost
                        break
                    taken.pop()
                    cost -= costs.pop()
            if taken:
                lines += [title, *taken]
                used = cost
        return self._fit(lines, len(header), max_tokens)

    def _fit(self, lines: list[str], keep: int, max_tokens: int) -> str:
        """Join ``lines``; drop trailing lines (never the first ``keep``) until the exact
        count fits (per-line counts are an estimate: BPE may merge across a newline)."""
        count = self.tokenizer.count
        text = "\n".join(lines)
        while count(text) > max_tokens and len(lines) > keep:
            lines.pop()
            while len(lines) > keep and lines[-1].startswith("###"):  # no empty section title
                lines.pop()
            text = "\n".join(lines)
        return text if count(text) <= max_tokens else ""


# ---- skeleton compression ------------------------------------------------------------------


class DepthSkeletonCompressor:
    """A child context: focus kept deep, everything else compressed to a skeleton.

    A fragment is *focus* when its uko_node is in ``child_focus``, or its file is (the
    uko_node before ``#``, or ``provenance.resource_uri``): a symbol node ``X#sym`` lies inside
    focus ``X``. Focus fragments are kept at the deepest rendering known (the fragment or a
    deeper one among ``parent_context.alternatives``) and do not count against the
    skeleton budget.

    Every other node is compressed to the skeleton depths - the ``depth_fallback_steps``
    below the first (signatures 4, outline 2, listing 0 by default): greedily in the original
    order, each takes its deepest rendering at a skeleton depth (the fragment itself or one
    of its alternatives) that keeps the non-focus total within ``skeleton_budget``; a node
    with no such rendering that fits is dropped. The result keeps the original order; its
    alternatives are, for each kept node, the renderings not chosen (depth desc).
    """

    def __init__(self, depth_fallback_steps: Sequence[int] = DetailDepth.FALLBACK) -> None:
        self.depth_fallback_steps = check_depth_steps(depth_fallback_steps)

    def compress(
        self,
        parent_context: AssembledContext,
        child_focus: Sequence[str],
        skeleton_budget: int,
    ) -> AssembledContext:
        focus = set(child_focus)
        skeleton = set(self.depth_fallback_steps[1:])
        remaining = max(0, skeleton_budget)
        kept: list[ContextFragment] = []
        alternatives: dict[str, tuple[ContextFragment, ...]] = {}
        for fragment in parent_context.fragments:
            node = fragment.uko_node
            renderings = _renderings(fragment, parent_context.alternatives.get(node, ()))
            if (
                node in focus
                or file_of(node) in focus
                or file_of(fragment.provenance.resource_uri) in focus
            ):
                chosen = renderings[0]  # the deepest known
            else:
                fitting = [
                    r
                    for r in renderings
                    if r.detail_depth in skeleton and r.token_count <= remaining
                ]
                if not fitting:
                    continue  # not even the shallowest skeleton rendering fits: drop the node
                chosen = fitting[0]
                remaining -= chosen.token_count
            kept.append(chosen)
            others = tuple(r for r in renderings if r is not chosen)
            if others:
                alternatives[node] = others
        return AssembledContext(fragments=tuple(kept), alternatives=alternatives)


def _renderings(
    fragment: ContextFragment, alternatives: Sequence[ContextFragment]
) -> list[ContextFragment]:
    """A node's known renderings, deepest first; at one depth the context's own fragment
    first, then fewer tokens, then fragment_id."""
    seen: dict[str, ContextFragment] = {fragment.fragment_id: fragment}
    for alt in alternatives:
        seen.setdefault(alt.fragment_id, alt)
    return sorted(
        seen.values(),
        key=lambda f: (-f.detail_depth, f is not fragment, f.token_count, f.fragment_id),
    )
