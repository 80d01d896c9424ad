"""The limits of an assembly request: one query length and one budget range on every surface.

The command line, the HTTP API and the MCP tools check a request against the same numbers,
documented in ``docs/service.md`` and ``docs/cli.md``, and word a refusal the same way.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_BUDGET",
    "MAX_QUERY_CHARS",
    "MIN_BUDGET",
    "clean_text",
    "empty_payload_hint",
    "request_problem",
]

#: Characters of a query, at most.
MAX_QUERY_CHARS = 100_000
#: Tokens of a budget, reserve included: below the minimum no fragment is worth sending (a
#: file's one-line listing and the preamble alone take tens of tokens).
MIN_BUDGET = 100
MAX_BUDGET = 2_000_000

# A str holds a surrogate code point only when it is lone (JSON "\ud800", an undecodable
# command-line byte): it cannot be encoded, so it becomes U+FFFD.
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (linear; unchanged if none)."""
    return _SURROGATE.sub("\ufffd", text)


def request_problem(query: str, budget: int, reserved: int = 0) -> tuple[str, str] | None:
    """``(field, message)`` for the first limit the request breaks, or None when it fits."""
    if len(query) > MAX_QUERY_CHARS:
        return "query", f"the query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}"
    if not query.strip():
        return "query", "the query is empty"
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        return (
            "budget",
            f"the budget must be {MIN_BUDGET:,} to {MAX_BUDGET:,} tokens; got {budget:,}",
        )
    if not 0 <= reserved < budget:
        return (
            "reserved",
            f"reserved ({reserved:,}) must be at least 0 and less than the budget ({budget:,})",
        )
    return None


def empty_payload_hint(budget: int) -> str:
    """What to say when an assembly selected no fragment."""
    return (
        f"no fragment was selected: nothing indexed matches the query, or nothing fits in "
        f"{budget:,} tokens (try a larger budget)"
    )
