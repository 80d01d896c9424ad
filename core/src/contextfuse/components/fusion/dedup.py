"""``ContentHashDedup``: the default FragmentDeduplicator."""

from __future__ import annotations

from collections.abc import Sequence

from contextfuse.components.fusion.grouping import distinct_contents, group_by_node
from contextfuse.models import ContextFragment


class ContentHashDedup:
    """Removes fragments repeating a node's content (spec: group by (uko_node, SHA-256)).

    Within a group the fragment with the highest ``relevance_score`` is kept; ties go to the
    earliest ``created_at``, then the smallest ``fragment_id``. Output order: nodes in order of
    first appearance, and within a node each distinct content in order of first appearance.
    Idempotent: deduplicating the output again returns it unchanged.
    """

    def deduplicate(self, fragments: Sequence[ContextFragment]) -> list[ContextFragment]:
        first, repeats = group_by_node(fragments)
        if not repeats:
            return list(first.values())
        out: list[ContextFragment] = []
        for node, fragment in first.items():
            group = repeats.get(node)
            if group is None:
                out.append(fragment)
            else:
                out.extend(distinct_contents(group))
        return out
