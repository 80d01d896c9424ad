"""The plugin entry point: contributes the simple-keyword strategy."""

from __future__ import annotations

from collections.abc import Sequence

from contextfuse.plugin import hookimpl
from contextfuse_simple_keyword.strategy import SimpleKeywordStrategy


@hookimpl
def contextfuse_strategies() -> Sequence[SimpleKeywordStrategy]:
    return [SimpleKeywordStrategy()]
