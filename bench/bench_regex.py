"""Regex search speed beside word search, on one project's index, in one process.

Indexes the project into a temporary folder (no contributors), then times, for each pattern,
``search_regex`` (RE2 over every file's text) and, as the reference measured in the same run,
``search`` (SQLite FTS5 BM25) on the pattern's words. Prints the median milliseconds of each
and their ratio; a pattern that backtracks exponentially in a backtracking engine is among
the defaults, to show the time stays linear.

    python bench/bench_regex.py ~/.cache/swebench-corpora/sdist/astropy-5.2 --repeat 5
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

PATTERNS = (
    r"def\s+dispatch_\w+",
    r"raise\s+\w+Error\(",
    r"^class \w+\(.*Mixin",
    r"(?i)todo|fixme",
    r"(\w+\s?)+$",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pattern", action="append", help="patterns to time (default: a set)")
    args = parser.parse_args()

    from contextfuse.kb import index, open_backends

    with tempfile.TemporaryDirectory(prefix="cf-regex-") as folder:
        stats = index(args.root, index_dir=folder, rebuild=True, contributors=[])
        print(f"{args.root.name}: {stats.files} files, {stats.nodes} nodes, {stats.bytes} bytes")
        print(f"{'pattern':<28} {'regex ms':>9} {'words ms':>9} {'ratio':>6} {'hits':>5}")
        with open_backends(args.root, index_dir=folder) as kb:
            for pattern in args.pattern or PATTERNS:
                words = " ".join(re.findall(r"[A-Za-z]{3,}", pattern)) or "x"
                regex_ms, word_ms = [], []
                hits = 0
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    hits = len(kb.text.search_regex(pattern, limit=50))
                    regex_ms.append(1000 * (time.perf_counter() - started))
                    started = time.perf_counter()
                    kb.text.search(words, limit=50)
                    word_ms.append(1000 * (time.perf_counter() - started))
                regex = statistics.median(regex_ms)
                word = statistics.median(word_ms)
                print(
                    f"{pattern[:28]:<28} {regex:>9.1f} {word:>9.1f} "
                    f"{regex / max(word, 1e-6):>6.1f} {hits:>5}"
                )


if __name__ == "__main__":
    main()
