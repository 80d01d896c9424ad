"""contextfuse-simple-keyword: BM25 plus exact identifiers and paths."""

from contextfuse_simple_keyword.strategy import SimpleKeywordStrategy

__all__ = ["SimpleKeywordStrategy"]
