"""``GreedyKnapsackPacker``: the default BudgetPacker, its packing order and fallback steps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain, islice, pairwise
from operator import itemgetter

from contextfuse.components.protocols import PackKey, PackResult, ScoredFragment
from contextfuse.models import MAX_DEPTH, ContextFragment, DetailDepth


def check_depth_steps(steps: Sequence[int]) -> tuple[int, ...]:
    """Validate a depth fallback sequence: non-empty, strictly descending, within 0..9."""
    result = tuple(int(s) for s in steps)
    if not result:
        raise ValueError("depth_fallback_steps must not be empty")
    if any(s < 0 or s > MAX_DEPTH for s in result):
        raise ValueError(f"depth_fallback_steps must lie within 0..{MAX_DEPTH}; got {result}")
    if any(a <= b for a, b in pairwise(result)):
        raise ValueError(f"depth_fallback_steps must be strictly descending; got {result}")
    return result


_POSITION = itemgetter(4)


def pack_order_key(scored: ScoredFragment) -> tuple[float, int, int, str]:
    """The packing order: score desc, depth desc, tokens asc, then uko_node asc."""
    f = scored.fragment
    return (-scored.score, -f.detail_depth, f.token_count, f.uko_node)


class GreedyKnapsackPacker:
    """Greedy fill with depth fallback; deterministic; never over budget.

    Order: score desc, depth desc, tokens asc, uko_node asc (stable for full ties). Each
    fragment that fits is packed. One that does not fit falls back to the node's shallower
    renderings from ``detail_level_maps[uko_node]`` at the ``depth_fallback_steps`` below its
    depth, deepest first; the first that fits is packed (same score, components, strategies)
    and ``fallbacks[uko_node] = (from_depth, to_depth)`` is recorded. Among several renderings
    at one depth, the higher relevance, then fewer tokens, then smaller fragment_id wins.

    ``min_fragment_tokens``: packing stops once fewer than that many tokens remain (a smaller
    fragment is still packed while more remain). Everything not packed is ``omitted``, best
    first.
    """

    def __init__(
        self,
        depth_fallback_steps: Sequence[int] = DetailDepth.FALLBACK,
        min_fragment_tokens: int = 10,
    ) -> None:
        if min_fragment_tokens < 0:
            raise ValueError(f"min_fragment_tokens must be >= 0; got {min_fragment_tokens}")
        self.depth_fallback_steps = check_depth_steps(depth_fallback_steps)
        self.min_fragment_tokens = min_fragment_tokens

    def _fallback(
        self, fragment: ContextFragment, renderings: Sequence[ContextFragment], room: int
    ) -> ContextFragment | None:
        depth = fragment.detail_depth
        for step in self.depth_fallback_steps:
            if step >= depth:
                continue
            best: ContextFragment | None = None
            for alt in renderings:
                if alt.detail_depth != step or alt.token_count > room:
                    continue
                if best is None or (-alt.relevance_score, alt.token_count, alt.fragment_id) < (
                    -best.relevance_score,
                    best.token_count,
                    best.fragment_id,
                ):
                    best = alt
            if best is not None:
                return best
        return None

    def pack(
        self,
        scored_fragments: Sequence[ScoredFragment],
        budget: int,
        detail_level_maps: Mapping[str, Sequence[ContextFragment]],
    ) -> PackResult:
        items = list(scored_fragments)
        keys = [(*pack_order_key(s), i) for i, s in enumerate(items)]
        keys.sort()
        return self.pack_keyed(items, keys, budget, detail_level_maps)

    def pack_keyed(
        self,
        items: Sequence[ScoredFragment],
        keys: Sequence[PackKey],
        budget: int,
        detail_level_maps: Mapping[str, Sequence[ContextFragment]],
    ) -> PackResult:
        """Greedy fill in the order of ``keys`` (sorted packing keys; ``k[4]`` is the index
        of the key's ScoredFragment in ``items``): the ``KeyedPacker`` extension."""
        remaining = max(0, int(budget))
        floor = self.min_fragment_tokens
        packed: list[ScoredFragment] = []
        omitted: list[ScoredFragment] = []
        fallbacks: dict[str, tuple[int, int]] = {}
        pack, omit, renderings_of = packed.append, omitted.append, detail_level_maps.get
        rest = len(keys)
        for index, key in enumerate(keys):
            if remaining < floor:
                rest = index
                break
            item = items[key[4]]
            tokens = key[2]
            if tokens <= remaining:
                pack(item)
                remaining -= tokens
                continue
            renderings = renderings_of(key[3])
            if renderings:
                fragment = item.fragment
                alt = self._fallback(fragment, renderings, remaining)
                if alt is not None:
                    pack(ScoredFragment(alt, item.score, item.components, item.strategies))
                    fallbacks[fragment.uko_node] = (fragment.detail_depth, alt.detail_depth)
                    remaining -= alt.token_count
                    continue
            omit(item)
        # The unvisited rest joins ``omitted`` in one pass (no intermediate slice).
        return PackResult(
            packed=tuple(packed),
            omitted=tuple(
                chain(omitted, map(items.__getitem__, map(_POSITION, islice(keys, rest, None))))
            ),
            fallbacks=fallbacks,
        )
