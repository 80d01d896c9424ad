"""``PackingPolicy``: how the default depth resolver and packer spend a budget on candidates.

The ``[fusion.packing]`` table of ``config.toml``. It applies to the candidates of ranking
strategies (fragments the pipeline rendered from the knowledge base, which carry a
``role``); fragments a strategy returned ready-made are packed greedily in score order with
depth fallback, as the specification's packer does.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_CODE_KINDS", "PackingPolicy"]

#: Node kinds shown at full source in the code passes: declarations, values bound to names (a
#: TypeScript ``export const X = make(...)``), blocks of a large file's top-level code, macros
#: and document sections (other symbol kinds, such as Go structs or TypeScript interfaces, are
#: reached through the file map and their files).
DEFAULT_CODE_KINDS: tuple[str, ...] = (
    "function",
    "method",
    "class",
    "section",
    "module",
    "variable",
    "block",
    "macro",
)


class PackingPolicy(BaseModel):
    """How a budget is split between code and the file map, and how deep each piece goes.

    The packer spends the budget in passes: full source (or signatures) of the best code up
    to the code share; a map of the best files not shown yet, at outline depth; code again
    with what the map left; and, when the fragment cap ends the selection with budget to
    spare, the files with the most evidence shown whole in place of their parts. No line is
    shown twice at full source; a class shown by its signatures may still have a method shown
    in full, and a mapped file may still have code shown.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    map_share: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description=(
            "Share of the budget kept for the file map (outlines) in the first code pass; "
            "what the map leaves goes to code."
        ),
    )
    max_map_tokens: int = Field(
        default=8000,
        ge=0,
        description="The map's room never exceeds this, so large budgets buy code.",
    )
    max_piece_share: float = Field(
        default=0.3,
        gt=0.0,
        le=1.0,
        description=(
            "The largest share of the budget one full-source fragment may take; a bigger node "
            "is resolved to its signatures."
        ),
    )
    whole_file_tokens: int = Field(
        default=700,
        ge=0,
        description="Files at most this big are shown whole rather than by symbol.",
    )
    whole_file_share: float = Field(
        default=0.03,
        ge=0.0,
        le=1.0,
        description="... or at most this share of the budget, when that is more.",
    )
    max_outline_share: float = Field(
        default=0.08,
        gt=0.0,
        le=1.0,
        description=(
            "The largest share of the budget one outline may take: a file's outline in the "
            "map, or a symbol shown by its signatures (a class too big for its full source); "
            "a bigger one is left to the file map."
        ),
    )
    map_files: int = Field(default=60, ge=0, description="At most this many files in the map.")
    map_types_from_best: int = Field(
        default=10,
        ge=0,
        description=(
            "The map and the code passes show files of the resource types (code, "
            "documentation, config, text; tests count as a type of their own) found among this "
            "many best candidates, so a code question gets code, not licences, changelogs or "
            "tests that share its words; the other types only fill what would otherwise stay "
            "below spend_target (0: every type)."
        ),
    )
    max_fragments: int | None = Field(
        default=100,
        ge=1,
        description=(
            "The fragment cap at small budgets (None: no cap): a payload holds at most "
            "max(max_fragments, budget // tokens_per_fragment) fragments, so that a large "
            "budget is ended by the budget, not the cap. When the selection ends below "
            "spend_target (the cap reached, or no candidate left that fits), the files with "
            "the most evidence are shown whole in place of their parts; --explain says what "
            "ended it."
        ),
    )
    tokens_per_fragment: int = Field(
        default=500,
        ge=1,
        description="The cap grows by one fragment per this many tokens of budget.",
    )
    map_slot_share: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Share of max_fragments the first code pass may not take: it stays for the map, "
            "which many small code fragments would otherwise crowd out."
        ),
    )
    max_header_share: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description=(
            "The largest share of the budget a file's header (its lines before the first "
            "symbol: imports, constants) may take; it comes with the file's first code."
        ),
    )
    relevance_first_share: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Share of the first code pass's room spent on the best candidates in relevance "
            "order, whatever their size; the rest of the code passes go by value per token "
            "(see relevance_power and density_floor_tokens), so a big piece does not crowd "
            "out several smaller ones nearly as relevant (1.0: the whole first pass by relevance)."
        ),
    )
    relevance_first: int = Field(
        default=15,
        ge=0,
        description=(
            "... and this many best candidates come in relevance order too, whatever their "
            "size, before value per token decides the rest."
        ),
    )
    relevance_power: float = Field(
        default=2.0,
        ge=0.0,
        description=(
            "Value per token is relevance to this power over tokens: the chance that a "
            "piece holds the answer falls faster than its relevance, so at 2 a piece half "
            "as relevant must be four times smaller to come first."
        ),
    )
    density_floor_tokens: int = Field(
        default=300,
        ge=1,
        description=(
            "Value per token counts a piece smaller than this as this big: a small piece "
            "holds less of an answer, so below this size relevance alone orders pieces."
        ),
    )
    file_evidence_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "How much a node's file's evidence (the sum of its best five candidates' scores) "
            "counts against the node's own score when code is chosen, at budgets of "
            "file_evidence_full_at tokens and more."
        ),
    )
    file_evidence_full_at: int = Field(
        default=50_000,
        ge=0,
        description=(
            "Below this many tokens file_evidence_weight shrinks in proportion to the budget "
            "(0: it counts in full at every budget). A small budget holds a few files: the best "
            "node of each good file is worth more than the lesser members of the strongest "
            "one; a large budget can afford to show the strongest files in depth."
        ),
    )
    spend_target: float = Field(
        default=0.95,
        ge=0.0,
        le=1.0,
        description=(
            "When the selection ends below this share of the budget spent, the best files "
            "are shown whole in place of their parts."
        ),
    )
    split_containers: bool = Field(
        default=False,
        description=(
            "A class (or interface, impl block...) some of whose members are candidates "
            "themselves is resolved to its signatures, its members shown on their own: the "
            "method that answers, not the whole class."
        ),
    )
    code_kinds: tuple[str, ...] = Field(
        default=DEFAULT_CODE_KINDS,
        description="Node kinds of the knowledge base shown as code (full source or signatures).",
    )

    def max_piece(self, available: int) -> int:
        """The most tokens one full-source fragment may take of ``available``."""
        return max(1, int(available * self.max_piece_share))

    def file_evidence(self, available: int) -> float:
        """How much a file's evidence counts when code is chosen from ``available`` tokens."""
        if not self.file_evidence_full_at:
            return self.file_evidence_weight
        return self.file_evidence_weight * min(1.0, available / self.file_evidence_full_at)

    def fragment_cap(self, available: int) -> int | None:
        """The most fragments a payload of ``available`` tokens may hold (None: no cap)."""
        if self.max_fragments is None:
            return None
        return max(self.max_fragments, available // self.tokens_per_fragment)

    def max_outline(self, available: int) -> int:
        """The most tokens one outline (a file's in the map, a symbol's signatures) may take
        of ``available``."""
        return max(1, int(available * self.max_outline_share))

    def whole_file(self, available: int) -> int:
        """The most tokens a file shown whole may take of ``available``."""
        return max(self.whole_file_tokens, int(available * self.whole_file_share))
