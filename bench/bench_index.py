"""Benchmark of ``contextfuse index`` on a real repository (default: the Django 4.1 sdist).

Measured, in one run, on a private copy of the repository:

* the floor: reading the bytes of every file discovery lists (what any indexer must do);
* what a user would pick instead: a bm25s index over the same text files (tokenise + index);
* a cold index (no index yet), a refresh without change, a refresh after one edited file,
  each in a fresh process (``seconds``, files/s, MB/s, peak RSS of the main process and of
  the largest worker process);
* query latency on the result: BM25 search with a long issue text, personalized PageRank.

Goals (2-core machine): cold under 60 s without embeddings, no-change refresh under 2 s,
peak RSS under 1 GB.

Run::

    PYTHONPATH=core/src python bench/bench_index.py [--source /tmp/django/Django-4.1]
        [--workers N] [--git] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import contextfuse
from contextfuse.kb import open_backends
from contextfuse.kb.files import discover

SRC = str(Path(contextfuse.__file__).parents[1])

#: Runs one index in a fresh interpreter and prints its stats with the peak RSS.
CHILD = """
import json, resource, sys, time
started = time.perf_counter()
from contextfuse.kb import index
workers = None if sys.argv[2] == "auto" else int(sys.argv[2])
stats = index(sys.argv[1], contributors=[], workers=workers)
me = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({
    "stats": stats.to_dict(),
    "process_seconds": time.perf_counter() - started,
    "rss_main_mb": me.ru_maxrss / 1024,
    "rss_worker_mb": kids.ru_maxrss / 1024,
    "cpu_main": me.ru_utime + me.ru_stime,
    "cpu_workers": kids.ru_utime + kids.ru_stime,
}))
"""

ISSUE = """QuerySet.bulk_create() crashes on mixed case columns in unique_fields/update_fields.
Description: when I call bulk_create on the manager for a class with db_column set on
fields, the SQL is invalid. Ellipses indicate other fields excluded for clarity.
class ActivityBlackListed(models.Model):
    class Meta:
        db_table = "Activity_BlackListed"
    blacklistid = models.IntegerField(primary_key=True, db_column="BlacklistID")
    sectorid = models.IntegerField(null=True, blank=True, db_column="SectorID")
qs.bulk_create(instances, update_conflicts=True, update_fields=["sectorid"],
               unique_fields=["blacklistid"])
The "INSERT" code does take into account the db_columns:
INSERT INTO "Activity_BlackListed" ("BlacklistID",...) VALUES (%s, ...),
The code generated for "ON CONFLICT" uses the field name and not the db_column, which
leads to a syntax error:
'ON CONFLICT("blacklistid") DO UPDATE SET "sectorid" = EXCLUDED."sectorid", ...
PostgreSQL returns ERROR: column "blacklistid" does not exist at character 1508.
What should be generated is I think:
'ON CONFLICT("BlacklistID") DO UPDATE SET "SectorID" = EXCLUDED."SectorID", ...
"""


def run_index(root: Path, workers: str) -> dict[str, Any]:
    """Index in a child process, sampling the RSS of its whole process tree (Linux)."""
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), workers],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    ) as child:
        peak = [0]

        def sample() -> None:
            while child.poll() is None:
                peak[0] = max(peak[0], _tree_rss(child.pid))
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        output, _ = child.communicate()  # read as it comes: a full pipe would block the child
        sampler.join()
    if child.returncode != 0:
        raise SystemExit(f"indexing failed with exit code {child.returncode}")
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    result["rss_tree_mb"] = peak[0] / 1024
    return result


def _tree_rss(pid: int) -> int:
    """Resident kB of a process and its descendants, from /proc (0 where unavailable)."""
    total = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += next(
                int(row.split()[1]) for row in status.splitlines() if row.startswith("VmRSS:")
            )
            for task in Path(f"/proc/{current}/task").iterdir():
                pending.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, StopIteration, ValueError):
            continue
    return total


def floor(root: Path) -> tuple[float, int, int]:
    """Seconds to read every discovered file's bytes, files and bytes read."""
    found = discover(root, exclude_dirs=(root / ".contextfuse",))
    started = time.perf_counter()
    total = 0
    for candidate in found.candidates:
        with open(root / candidate.path, "rb") as handle:
            total += len(handle.read())
    return time.perf_counter() - started, len(found.candidates), total


def bm25s_baseline(root: Path, paths: list[str]) -> tuple[float, float]:
    """Seconds to read + tokenise and to build a bm25s index over the same text files."""
    import bm25s

    started = time.perf_counter()
    texts = [(root / p).read_text("utf-8", "replace") for p in paths]
    tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    tokenised = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    return tokenised - started, time.perf_counter() - tokenised


def queries(root: Path, repeat: int = 20) -> dict[str, float]:
    """Milliseconds: search with a long issue text, PageRank first call and median."""
    kb = open_backends(root)
    try:
        long_issue = ISSUE * 8
        timings = []
        for _ in range(repeat):
            started = time.perf_counter()
            hits = kb.text.search(long_issue, limit=50)
            timings.append(time.perf_counter() - started)
        seeds = {hit.uri: hit.score for hit in hits[:20]}
        started = time.perf_counter()
        kb.graph.personalized_pagerank(seeds, limit=50)
        first = time.perf_counter() - started
        ranks = []
        for _ in range(5):
            started = time.perf_counter()
            kb.graph.personalized_pagerank(seeds, limit=50)
            ranks.append(time.perf_counter() - started)
        return {
            "issue_chars": len(long_issue),
            "search_ms": statistics.median(timings) * 1000,
            "pagerank_first_ms": first * 1000,
            "pagerank_ms": statistics.median(ranks) * 1000,
        }
    finally:
        kb.nodes.close()


def line(
    name: str, result: dict[str, Any], floor_seconds: float, bm25_seconds: float, size_mb: float
) -> str:
    """One result row; MB/s is the repository's size over the time taken."""
    stats = result["stats"]
    seconds = stats["seconds"]
    examined = stats["files_parsed"] + stats["files_unchanged"] + sum(stats["skipped"].values())
    return (
        f"{name:<22} {seconds:7.2f} s {examined / seconds:7.0f} files/s "
        f"{size_mb / seconds:6.2f} MB/s  peak RSS {result['rss_tree_mb']:4.0f} MB (main "
        f"{result['rss_main_mb']:.0f}, largest worker {result['rss_worker_mb']:.0f})  "
        f"CPU {result['cpu_main']:.1f}+{result['cpu_workers']:.1f} s  "
        f"x{seconds / floor_seconds:.0f} floor, x{seconds / bm25_seconds:.2f} bm25s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--source", type=Path, default=Path("/tmp/django/Django-4.1"))
    parser.add_argument("--workers", default="auto", help="worker processes (default: auto)")
    parser.add_argument("--git", action="store_true", help="index a git repository of the copy")
    parser.add_argument("--repeat", type=int, default=1, help="cold runs (the median is kept)")
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        print(f"no repository at {args.source}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        root = Path(tmp) / args.source.name
        shutil.copytree(args.source, root, symlinks=True)
        if args.git:
            for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
                subprocess.run(
                    ["git", "-c", "user.name=b", "-c", "user.email=b@b", *command],
                    cwd=root,
                    check=True,
                )
        print(f"repository  {args.source} ({'git' if args.git else 'no git'}), "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")  # fmt: skip
        floor(root)  # warm the page cache: every measurement reads from memory
        floor_seconds, files, size = floor(root)
        print(f"floor       {floor_seconds:8.2f} s  read {files} files, {size / 1e6:.1f} MB "
              f"({size / 1e6 / floor_seconds:.0f} MB/s)")  # fmt: skip

        colds = []
        for _ in range(args.repeat):
            shutil.rmtree(root / ".contextfuse", ignore_errors=True)
            colds.append(run_index(root, args.workers))
        cold = sorted(colds, key=lambda r: r["stats"]["seconds"])[len(colds) // 2]
        stats = cold["stats"]
        indexed = [p for p in _indexed_paths(root)]
        tokenise, build = bm25s_baseline(root, indexed)
        bm25_seconds = tokenise + build
        print(f"bm25s       {bm25_seconds:8.2f} s  ({tokenise:.2f} s read + tokenise, "
              f"{build:.2f} s index) over the {len(indexed)} indexed files")  # fmt: skip
        print(
            f"index       {stats['files']} files, {stats['nodes']} nodes, {stats['edges']} "
            f"edges, {stats['tokens']:,} tokens, skipped {sum(stats['skipped'].values())}"
        )
        size_mb = size / 1e6
        print(line("cold", cold, floor_seconds, bm25_seconds, size_mb))
        warm = run_index(root, args.workers)
        print(line("refresh, no change", warm, floor_seconds, bm25_seconds, size_mb))
        edited = root / "django" / "db" / "models" / "query.py"
        if edited.is_file():
            source = edited.read_text()
            # A change inside a function (the symbols stay): only that file is linked again.
            edited.write_text(source.replace("Insert each of the instances", "Insert all the", 1))
            body = run_index(root, args.workers)
            print(line("refresh, body edited", body, floor_seconds, bm25_seconds, size_mb))
            # A new function: names resolve differently, the whole graph is linked again.
            edited.write_text(source + "\n\ndef bench_added():\n    return 1\n")
            added = run_index(root, args.workers)
            print(line("refresh, symbol added", added, floor_seconds, bm25_seconds, size_mb))
        latency = queries(root)
        print(
            f"queries     search {latency['search_ms']:.1f} ms ({latency['issue_chars']} chars "
            f"of issue), pagerank {latency['pagerank_ms']:.1f} ms "
            f"(first call, loading the graph: {latency['pagerank_first_ms']:.0f} ms)"
        )
        print(f"load        {os.getloadavg()[0]:.2f} at the end; cold runs: "
              f"{[round(r['stats']['seconds'], 2) for r in colds]}")  # fmt: skip
    return 0


def _indexed_paths(root: Path) -> list[str]:
    import sqlite3

    conn = sqlite3.connect(root / ".contextfuse" / "index.db")
    try:
        return [row[0] for row in conn.execute("SELECT path FROM files ORDER BY path")]
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
