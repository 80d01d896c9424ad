"""The parsers' versions, readable without loading the parsers.

A stored file whose parser id differs from the one its language gets now is parsed again on
the next index run; the refresh that proves an index current from stats alone
(``kb/freshness.py``) compares these too, so a changed parser is never skipped as unchanged
(an editable install changes no ``site-packages`` folder).
"""

from __future__ import annotations

__all__ = [
    "MARKDOWN_ID",
    "PYTHON_ID",
    "RST_ID",
    "TEXT_ID",
    "TREE_SITTER_VERSION",
    "fingerprint",
    "tree_sitter_id",
]

#: Python has no values or blocks as symbols (they cost SWE-bench tasks their edited
#: functions: docs/indexing.md, "Python"); version 2 stores calls on ``self`` and ``cls`` as
#: such (``kb/links.py``), as tree-sitter's version 4 does for ``this``, ``self``, ``Self::``
#: and Go receivers (issue 18); version 3 (tree-sitter's 5) stores a call on a name whose
#: type is declared in scope as ``Type.method`` (``kb/receivers.py``).
PYTHON_ID = "python-ast/3"
#: Version 3: values, blocks, same names as ``@2`` and Rust macro items (issue 18);
#: version 4: calls on the method's own object stored as such; version 5: typed calls;
#: version 6: the declarations of a function longer than a piece (150 lines).
TREE_SITTER_VERSION = 6
MARKDOWN_ID = "markdown/1"
RST_ID = "rst/1"
TEXT_ID = "text/1"


def tree_sitter_id(language: str) -> str:
    """The parser id of a file of ``language`` parsed by tree-sitter."""
    return f"treesitter-{language}/{TREE_SITTER_VERSION}"


def fingerprint() -> str:
    """Every parser's version, as one string (read at call time: a version may change)."""
    return f"{PYTHON_ID} {tree_sitter_id('*')} {MARKDOWN_ID} {RST_ID} {TEXT_ID}"
