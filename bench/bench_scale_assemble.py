"""Assembly latency on a 100,000-file index, beside a small project and the bare read.

The generated tree of ``bench/bench_index.py`` (``--files`` modules in packages of 1,000) is
indexed once into ``--cache`` and reused by later runs (an index of 100,000 files takes
minutes to build); so is a small tree of ``--small`` files made by the same generator, the
same-run reference. Both are rebuilt only when missing or when the index is of another
schema or parser versions (a refresh would otherwise parse every file again inside the
first timed assembly). For each tree, in this run:

* warm: ``ContextAssembler.assemble`` (default strategy selection, 8,000 tokens) of each
  request once to warm up, then ``--rounds`` times each; p50 and p95 milliseconds;
* cold process: a fresh interpreter opens the index and assembles one request (its imports
  apart), ``--cold`` times; p50 seconds;
* the bare read: the SQLite rows of the payload's fragments (their nodes and renderings), in
  the warm process, p50 milliseconds.

Goal (2-core machine): a 100,000-file index assembles in under 1 s.

Run::

    python bench/bench_scale_assemble.py [--cache /tmp/contextfuse-bench-scale]
        [--files 100000] [--small 1000] [--rounds 5] [--cold 3] [--profile ROUNDS]

``--profile ROUNDS`` only opens the large tree's index and assembles each request ``ROUNDS``
times, for a sampling profiler of the whole process (the strategies run in threads)::

    py-spy record -r 200 -f raw -o /tmp/assemble.txt -- \
        python bench/bench_scale_assemble.py --profile 2
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_index import CHILD_ENV, make_tree

from contextfuse import ContextAssembler
from contextfuse.kb import index
from contextfuse.kb.parser_versions import fingerprint
from contextfuse.kb.store import SCHEMA_VERSION

#: Requests a developer might ask of the generated tree: names, plain words, a path.
REQUESTS = (
    "ledger_rotate fails when the cursor window of a shard is empty",
    "where is the retry budget of a request computed",
    "CacheBuffer keeps the wrong buffer of one cache",
    "pkg042/mod042517.py returns a negative offset",
    "how are packet signals merged into the trace of a session",
)

#: Opens the index and assembles one request in a fresh interpreter.
COLD = """
import json, sys, time
started = time.perf_counter()
from contextfuse import ContextAssembler
imported = time.perf_counter()
with ContextAssembler(sys.argv[1]) as assembler:
    assembler.assemble(sys.argv[2], 8000)
    done = time.perf_counter()
print(json.dumps({"imports": imported - started, "assemble": done - imported}))
"""


def prepared(cache: Path, files: int) -> Path:
    """A generated tree of ``files`` modules with a current index, built on first use."""
    root = cache / f"tree-{files}"
    marker = cache / f"tree-{files}.json"
    wanted = {"files": files, "schema": SCHEMA_VERSION, "parsers": fingerprint()}
    if marker.is_file() and json.loads(marker.read_text()) == wanted and root.is_dir():
        return root
    if root.exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)
    started = time.perf_counter()
    make_tree(root, files)
    stats = index(root)
    print(
        f"built tree-{files}: {stats.files} files, {stats.nodes} nodes in "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )
    marker.write_text(json.dumps(wanted))
    return root


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def warm(root: Path, rounds: int) -> tuple[list[float], list[float], int]:
    """Milliseconds of each assembly and of each bare read of its payload's rows."""
    timings: list[float] = []
    reads: list[float] = []
    fragments = 0
    with ContextAssembler(root) as assembler:
        payloads = {request: assembler.assemble(request, 8000) for request in REQUESTS}
        for _ in range(rounds):
            for request in REQUESTS:
                started = time.perf_counter()
                payload = assembler.assemble(request, 8000)
                timings.append((time.perf_counter() - started) * 1000)
                fragments += len(payload.fragments)
    conn = sqlite3.connect(root / ".contextfuse" / "index.db")
    try:
        for _ in range(rounds):
            for payload in payloads.values():
                uris = [f.provenance.resource_uri for f in payload.fragments]
                started = time.perf_counter()
                _bare_read(conn, uris)
                reads.append((time.perf_counter() - started) * 1000)
    finally:
        conn.close()
    return timings, reads, fragments // max(1, rounds * len(REQUESTS))


def _bare_read(conn: sqlite3.Connection, uris: list[str]) -> None:
    """The rows every assembly must read at least: its fragments' nodes and renderings."""
    marks = ",".join("?" * len(uris))
    conn.execute(
        "SELECT n.uri, n.kind, r.depth, r.content, f.content FROM nodes n "
        "JOIN renderings r ON r.node_id = n.id JOIN files f ON f.id = n.file_id "
        f"WHERE n.uri IN ({marks})",
        uris,
    ).fetchall()


def cold(root: Path, times: int) -> list[dict[str, float]]:
    """A fresh interpreter's import and first assembly, ``times`` times."""
    results = []
    for i in range(times):
        done = subprocess.run(
            [sys.executable, "-c", COLD, str(root), REQUESTS[i % len(REQUESTS)]],
            capture_output=True,
            text=True,
            env=CHILD_ENV,
        )
        if done.returncode != 0:
            raise SystemExit(f"assembling failed: {done.stderr.strip()[-500:]}")
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return results


def profile(root: Path, rounds: int) -> None:
    """Open the index and assemble every request ``rounds`` times, and nothing else: the
    strategies run in threads, so profile the whole process (``py-spy record -- python
    bench/bench_scale_assemble.py --profile 3``)."""
    with ContextAssembler(root) as assembler:
        for _ in range(rounds):
            for request in REQUESTS:
                assembler.assemble(request, 8000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/contextfuse-bench-scale"))
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000, help="files of the reference tree")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cold", type=int, default=3, help="fresh processes per tree")
    parser.add_argument(
        "--profile", type=int, metavar="ROUNDS", help="only assemble from the large tree"
    )
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    small = prepared(args.cache, args.small)
    large = prepared(args.cache, args.files)
    if args.profile:
        profile(large, args.profile)
        return 0
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; 8,000 tokens, default selection")
    rows: dict[str, dict[str, Any]] = {}
    for name, root in ((f"{args.small} files", small), (f"{args.files} files", large)):
        timings, reads, fragments = warm(root, args.rounds)
        colds = cold(root, args.cold)
        rows[name] = row = {
            "p50": statistics.median(timings),
            "p95": percentile(timings, 0.95),
            "read": statistics.median(reads),
            "cold": statistics.median(c["assemble"] for c in colds),
            "imports": statistics.median(c["imports"] for c in colds),
        }
        print(
            f"{name:<14} warm p50 {row['p50']:7.1f} ms, p95 {row['p95']:7.1f} ms "
            f"({fragments} fragments); bare read p50 {row['read']:5.1f} ms "
            f"(x{row['p50'] / row['read']:.0f}); cold process {row['cold']:.2f} s "
            f"+ imports {row['imports']:.2f} s",
            flush=True,
        )
    small_row, large_row = rows.values()
    print(
        f"large / small: warm x{large_row['p50'] / small_row['p50']:.2f}, "
        f"cold x{large_row['cold'] / small_row['cold']:.2f}; load {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
