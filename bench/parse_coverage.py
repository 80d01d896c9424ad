"""How a project's code splits into nodes: node counts, line coverage and index time.

For each project folder: index it from scratch (default contributors, into a temporary
folder) and time that; then, over every non-blank line of its code files, find the smallest
node containing the line and count

  covered     share of lines inside a node other than their file's node;
  manageable  share of lines whose smallest node has at most ``--piece`` lines (a small
              file's own node counts: the whole file is one manageable piece);
  histogram   lines by the size of their smallest node, with the file-only lines apart;
  file-only   those lines by what they look like: comments, imports, other code.

The largest files whose lines are reachable only through the file node are listed, so what is
left uncovered can be read. ``--repeat N`` indexes N times and reports the median time (the
machine may be shared: compare versions run alternately under the same load). Projects are
real code nobody here wrote (``npm pack``, Debian ``golang-*-dev`` / ``librust-*-dev``, PyPI
sdists), unpacked by hand.

    python bench/parse_coverage.py /tmp/zod /tmp/gin --json coverage.json
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

_BUCKETS = (10, 50, 150, 400, 1000)
_COMMENT = re.compile(r"""\s*(?:#|//|/\*|\*|--|"{3}|'{3})""")
_IMPORT = re.compile(
    r"""\s*(?:import\s|from\s+\S+\s+import\s|use\s|package\s|extern\s+crate\s|mod\s+\w+;"""
    r"""|(?:const|let|var)\s.*=\s*require\(|['"]use strict['"])"""
)


def measure(root: Path, piece: int, repeat: int = 1) -> dict[str, Any]:
    """Index ``root`` into a temporary folder (``repeat`` times) and measure its nodes."""
    from contextfuse.kb.api import index
    from contextfuse.kb.compressed import stored_text

    times = []
    for _ in range(repeat - 1):
        with tempfile.TemporaryDirectory(prefix="cf-coverage-") as folder:
            started = time.perf_counter()
            index(root, index_dir=folder, rebuild=True)
            times.append(time.perf_counter() - started)
    with tempfile.TemporaryDirectory(prefix="cf-coverage-") as folder:
        started = time.perf_counter()
        index(root, index_dir=folder, rebuild=True)
        times.append(time.perf_counter() - started)
        seconds = statistics.median(times)
        conn = sqlite3.connect(Path(folder) / "index.db")
        try:
            kinds = Counter(k for (k,) in conn.execute("SELECT kind FROM nodes"))
            files = conn.execute(
                "SELECT f.id, f.path, f.content FROM files f JOIN nodes n ON n.file_id = f.id"
                " WHERE n.kind = 'file' AND n.resource_type = 'code'"
            ).fetchall()
            spans: dict[int, list[tuple[int, int]]] = {}
            for file_id, first, last in conn.execute(
                "SELECT file_id, line_start, line_end FROM nodes WHERE kind != 'file'"
            ):
                spans.setdefault(file_id, []).append((first, last))
        finally:
            conn.close()
    histogram: Counter[str] = Counter()
    looks_like: Counter[str] = Counter()
    total = covered = manageable = 0
    file_only: list[tuple[int, str]] = []
    for file_id, path, content in files:
        lines = stored_text(content).split("\n")
        size = len(lines)
        smallest = [size] * (size + 1)  # line -> lines of its smallest node
        inside = [False] * (size + 1)
        # Wider spans first, so a nested node's size overwrites its container's.
        for first, last in sorted(spans.get(file_id, ()), key=lambda s: s[0] - s[1]):
            for line in range(max(first, 1), min(last, size) + 1):
                smallest[line] = last - first + 1
                inside[line] = True
        stranded = 0
        for number, text in enumerate(lines, 1):
            if not text.strip():
                continue
            total += 1
            covered += inside[number]
            manageable += smallest[number] <= piece
            if not inside[number]:
                stranded += 1
                histogram["file only"] += 1
                looks_like[_looks_like(text)] += 1
            else:
                histogram[_bucket(smallest[number])] += 1
        if stranded and size > piece:
            file_only.append((stranded, path))
    file_only.sort(reverse=True)
    return {
        "project": root.name,
        "index_s": round(seconds, 2),
        "code_files": len(files),
        "nodes": sum(kinds.values()),
        "kinds": dict(kinds.most_common()),
        "code_lines": total,
        "covered": round(100 * covered / max(total, 1), 1),
        "manageable": round(100 * manageable / max(total, 1), 1),
        "histogram": {k: histogram[k] for k in _labels() if histogram[k]},
        "file_only": {k: looks_like[k] for k in ("comments", "imports", "code")},
        "largest_file_only": file_only[:8],
    }


def _looks_like(line: str) -> str:
    if _COMMENT.match(line):
        return "comments"
    return "imports" if _IMPORT.match(line) else "code"


def _bucket(size: int) -> str:
    for bound in _BUCKETS:
        if size <= bound:
            return f"<={bound}"
    return f">{_BUCKETS[-1]}"


def _labels() -> list[str]:
    return [*(f"<={b}" for b in _BUCKETS), f">{_BUCKETS[-1]}", "file only"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--piece", type=int, default=150, help="manageable node size, lines")
    parser.add_argument("--repeat", type=int, default=1, help="index N times, median time")
    parser.add_argument("--json", help="write the figures as JSON")
    args = parser.parse_args()
    results = []
    print(
        f"{'project':<22} {'index s':>8} {'files':>6} {'nodes':>7} {'lines':>8} "
        f"{'covered':>8} {'manage':>7}  histogram (lines by smallest node)"
    )
    for root in args.roots:
        row = measure(root, args.piece, args.repeat)
        results.append(row)
        hist = " ".join(f"{k}:{v}" for k, v in row["histogram"].items())
        print(
            f"{row['project']:<22} {row['index_s']:>8} {row['code_files']:>6} {row['nodes']:>7} "
            f"{row['code_lines']:>8} {row['covered']:>7}% {row['manageable']:>6}%  {hist}"
        )
        kinds = ", ".join(f"{k} {v}" for k, v in row["kinds"].items())
        print(f"  kinds: {kinds}")
        looks = ", ".join(f"{k} {v}" for k, v in row["file_only"].items())
        print(f"  file-only lines that look like: {looks}")
        for stranded, path in row["largest_file_only"][:4]:
            print(f"  file-only lines: {stranded:>6}  {path}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
