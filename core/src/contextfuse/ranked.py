"""``Ranked``: one candidate of a strategy's ranking.

A strategy ranks; the pipeline's components spend the budget. A ranking strategy returns its
candidates best first, each a node URI with the strategy's score and the signals that found it.
The pipeline renders every candidate at the depths the store has for it (full source,
signatures, outline, listing), and the depth resolver, the scorer and the packer decide what
the budget buys. A candidate the store does not hold (a commit, a record of another system)
brings its own renderings.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from contextfuse.backends import Rendering

__all__ = ["HEADER_SYMBOL", "ROLE_CANDIDATE", "ROLE_HEADER", "ROLE_MAP", "Ranked"]

#: ``metadata["role"]`` of the fragments the pipeline renders from a ranking: a ranked
#: candidate, the file of one (for the file map: the strategy did not rank the file itself)
#: or a file's header (its lines before the first symbol: imports, constants).
ROLE_CANDIDATE = "candidate"
ROLE_MAP = "map"
ROLE_HEADER = "header"
#: Symbol part of the URI of a file's header fragment (``project://p/a.py#<header>``).
HEADER_SYMBOL = "<header>"


def _signals(value: Mapping[str, int] | None) -> Mapping[str, int]:
    return dict(value) if value else {}


@attrs.frozen(slots=True)
class Ranked:
    """A candidate: a node, the strategy's score for it and the signals that found it.

    :param uri: the node's URI (``project://<project>/<path>[#<symbol>]`` for the repository's
        files and symbols; ``plan://`` and ``decision://`` for the plan store; any other
        scheme with ``renderings``).
    :param score: the strategy's score, higher is better (only its size relative to the
        strategy's best candidate matters); candidates are ranked in the order the strategy
        returns them.
    :param signals: the ranked lists of the strategy that found the node, each with the
        node's 1-based rank in it (``{"text": 3, "graph": 12}``), shown by ``--explain``.
    :param renderings: the node's renderings by depth, for a node the stores do not hold
        (a commit); ``None`` lets the pipeline fetch them from the store.
    :param resource_type: the fragment's resource type when the store does not say.
    :param resource_uri: the fragment's provenance URI when not the node's file.
    :param tier: ``hot``, ``warm`` or ``cold`` when the strategy knows better than the store.
    :param metadata: extra string entries copied onto the node's fragments.
    """

    uri: str
    score: float = 1.0
    signals: Mapping[str, int] = attrs.field(factory=dict, converter=_signals)
    renderings: Mapping[int, Rendering] | None = None
    resource_type: str = ""
    resource_uri: str = ""
    tier: str = ""
    metadata: Mapping[str, str] = attrs.field(factory=dict)
