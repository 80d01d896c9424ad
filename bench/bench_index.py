"""Benchmark of ``contextfuse index``: time, size and peak memory per case, beside references.

Cases (``--case``, default all three):

* ``django``: the Django 4.1 sdist (``pip download --no-deps --no-binary :all: django==4.1``,
  unpacked; ``--django DIR``);
* ``tree``: a generated tree of ``--files`` small Python modules (default 100,000) in
  packages of 1,000, each with a class, two functions and imports of its neighbours;
* ``bigfile``: one generated Python file just under 1 MB with 21,000 functions.

Measured for each case, in one run, on a private copy:

* the floor: reading the bytes of every file discovery lists (what any indexer must do);
* what a user would pick instead: a bm25s index over the same text files (read, tokenise,
  index);
* a cold index (no index yet) and a refresh without change, each in a fresh process, with
  the installed index contributors (embeddings), as ``contextfuse index`` runs: seconds,
  files/s, peak RSS of the whole process tree (sampled), of the main process and of the
  largest worker process, CPU seconds, the index's size on disk and the vectors' share;
* assembling from the result in a fresh process (8,000 tokens, no refresh): the first call,
  which loads the index's arrays, and a second one, beside the process's start and imports.

For Django also: refreshes after one edited file, and query latency (BM25 search with a long
issue text, personalized PageRank).

Goals (2-core machine): Django cold under 15 s; a 100,000-file index assembles in under
1 s; peak memory bounded on each case.

Run::

    python bench/bench_index.py [--case django --case tree --case bigfile]
        [--django /tmp/django/Django-4.1] [--files 100000] [--workers N] [--git] [--repeat 3]
        [--cold-only]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
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
#: Child processes import this checkout's core first (and the plugins of PYTHONPATH, if any).
CHILD_ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])),
}
CASES = ("django", "tree", "bigfile")

#: Runs one index in a fresh interpreter and prints its stats with the peak RSS and the wall
#: seconds of its phases (from the progress it reports: ``PHASES``).
CHILD = """
import json, resource, sys, time
started = time.perf_counter()
from contextfuse.kb import index
workers = None if sys.argv[2] == "auto" else int(sys.argv[2])
contributors = [] if sys.argv[3] == "none" else None
seen = {}  # description -> (first, last) moment the run reported progress of it

def progress(description, done, total):
    now = time.perf_counter()
    seen[description] = (seen.get(description, (now,))[0], now)

def phases(called, ended, seen):
    # Each phase ends where the next one's progress starts; discovery and start-up before
    # the files, the commit and the contributors' set-up after the history, and the snapshot
    # and array files after the last contributor.
    marks = [("start", called)]
    for name, key in (("files", "Indexing files"), ("link", "Linking symbols"),
                      ("history", "Reading history"), ("embedding", "embedding")):
        if key in seen:
            marks.append((name, seen[key][0]))
    marks.append(("end", ended))
    out = {name: round(nxt - at, 2) for (name, at), (_, nxt) in zip(marks, marks[1:])}
    if "embedding" in seen:
        out["after"] = round(ended - seen["embedding"][1], 2)
        out["embedding"] = round(seen["embedding"][1] - seen["embedding"][0], 2)
    out["imports"] = round(called - started, 2)
    return out

called = time.perf_counter()
stats = index(sys.argv[1], contributors=contributors, workers=workers, progress=progress)
ended = time.perf_counter()
me = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
try:  # ru_maxrss keeps the high-water mark of the bench process that started this one
    status = open("/proc/self/status").read()
    peak_kb = int(status.split("VmHWM:")[1].split()[0])
except (OSError, IndexError, ValueError):
    peak_kb = me.ru_maxrss
print(json.dumps({
    "stats": stats.to_dict(),
    "process_seconds": time.perf_counter() - started,
    "rss_main_mb": peak_kb / 1024,
    "rss_worker_mb": kids.ru_maxrss / 1024,
    "cpu_main": me.ru_utime + me.ru_stime,
    "cpu_workers": kids.ru_utime + kids.ru_stime,
    "phases": phases(called, ended, seen),
    "load": __import__("os").getloadavg()[0],
}))
"""

#: Assembles twice from an up-to-date index in a fresh interpreter (no refresh).
ASSEMBLE = """
import json, resource, sys, time
started = time.perf_counter()
from contextfuse import ContextAssembler
imported = time.perf_counter()
with ContextAssembler(sys.argv[1]) as assembler:
    first = time.perf_counter()
    payload = assembler.assemble(sys.argv[2], 8000)
    second = time.perf_counter()
    assembler.assemble(sys.argv[3], 8000)
    done = time.perf_counter()
print(json.dumps({
    "imports": imported - started,
    "first": second - first,
    "second": done - second,
    "fragments": len(payload.fragments),
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
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

#: Requests for the assembly measurement: one naming identifiers, one in plain words.
QUERIES = {
    "django": (ISSUE, "how are database rows inserted in bulk when a conflict happens"),
    "tree": (
        "ledger_rotate fails when the cursor window of a shard is empty",
        "where is the retry budget of a request computed",
    ),
    "bigfile": ("f12345 returns the wrong value", "which function scales by ninety"),
}

_WORDS = [
    "account",
    "balance",
    "buffer",
    "cache",
    "cursor",
    "delta",
    "event",
    "filter",
    "frame",
    "gauge",
    "handle",
    "index",
    "job",
    "kernel",
    "ledger",
    "limit",
    "matrix",
    "merge",
    "node",
    "offset",
    "packet",
    "queue",
    "record",
    "retry",
    "route",
    "sample",
    "schema",
    "session",
    "shard",
    "signal",
    "token",
    "trace",
    "update",
    "vector",
    "window",
    "worker",
    "budget",
    "request",
]


def make_tree(root: Path, files: int, seed: int = 20) -> None:
    """``files`` small Python modules in packages of 1,000; the same tree for the same seed."""
    rng = random.Random(seed)
    for number in range(files):
        package = root / f"pkg{number // 1000:03d}"
        if number % 1000 == 0:
            package.mkdir(parents=True)
            (package / "__init__.py").write_text(f'"""Package {number // 1000}."""\n')
        a, b, c = rng.sample(_WORDS, 3)
        near = max(0, number - 1 - rng.randrange(5))
        (package / f"mod{number:06d}.py").write_text(
            f'"""{a.title()} {b} helpers for the {c} layer."""\n\n'
            f"from pkg{near // 1000:03d}.mod{near:06d} import {c}_{b}\n\n\n"
            f"class {a.title()}{b.title()}:\n"
            f'    """Keeps the {b} of one {a}."""\n\n'
            f"    def __init__(self, {c}: int) -> None:\n"
            f"        self.{c} = {c}\n\n"
            f"    def {a}_{c}(self) -> int:\n"
            f"        return {c}_{b}(self.{c}) + {number % 97}\n\n\n"
            f"def {a}_{b}(value: int) -> int:\n"
            f'    """The {b} of a {a} {c}."""\n'
            f"    return value * {rng.randrange(2, 9)}\n\n\n"
            f"def {b}_{c}(items: list[int]) -> int:\n"
            f"    return sum({a}_{b}(item) for item in items)\n"
        )


def make_bigfile(root: Path, functions: int = 21_000) -> None:
    """One Python file just under 1 MB with ``functions`` small functions."""
    root.mkdir(parents=True)
    parts = ['"""Many small functions."""\n']
    parts += [f'def f{i}(v):\n    """Sc."""\n    return v * {i % 97}\n' for i in range(functions)]
    (root / "many.py").write_text("\n".join(parts))


def run_index(root: Path, workers: str, embed: bool) -> dict[str, Any]:
    """Index in a child process, sampling the RSS of its whole process tree (Linux)."""
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), workers, "installed" if embed else "none"],
        stdout=subprocess.PIPE,
        text=True,
        env=CHILD_ENV,
    ) as child:
        peak = [0]

        def sample() -> None:
            while child.poll() is None:
                peak[0] = max(peak[0], _tree_rss(child.pid))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        output, _ = child.communicate()  # read as it comes: a full pipe would block the child
        sampler.join()
    if child.returncode != 0:
        raise SystemExit(f"indexing failed with exit code {child.returncode}")
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    result["rss_tree_mb"] = peak[0] / 1024
    return result


def run_assemble(root: Path, queries: tuple[str, str]) -> dict[str, Any]:
    """Two assemblies in a fresh process, and the bare start of the interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", ASSEMBLE, str(root), *queries],
        capture_output=True,
        text=True,
        env=CHILD_ENV,
    )
    if done.returncode != 0:
        raise SystemExit(f"assembling failed: {done.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    result["bare_start"] = time.perf_counter() - started
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


def index_size(root: Path) -> tuple[float, float]:
    """MB of the index on disk (database and write-ahead log) and MB of its vectors table."""
    folder = root / ".contextfuse"
    total = sum(p.stat().st_size for p in folder.glob("index.db*"))
    conn = sqlite3.connect(folder / "index.db")
    try:
        vectors = conn.execute(
            "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = 'vectors'"
        ).fetchone()[0]
    except sqlite3.OperationalError:  # SQLite built without dbstat: the payload bytes
        vectors = conn.execute("SELECT coalesce(sum(length(vector)), 0) FROM vectors").fetchone()[0]
    finally:
        conn.close()
    return total / 1e6, vectors / 1e6


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


def cold_line(number: int, result: dict[str, Any]) -> str:
    """One cold run: wall, CPU, load before and after, the ratio to bm25s, the phases."""
    seconds = result["stats"]["seconds"]
    phases = ", ".join(f"{name} {value:.2f}" for name, value in result["phases"].items())
    return (
        f"cold #{number}     {seconds:7.2f} s (process {result['process_seconds']:.2f} s)  "
        f"CPU {result['cpu_main']:.1f}+{result['cpu_workers']:.1f} s  load "
        f"{result['load_before']:.2f} -> {result['load']:.2f}  bm25s {result['bm25s']:.2f} s "
        f"(x{seconds / result['bm25s']:.2f})  peak RSS {result['rss_tree_mb']:.0f} MB (main "
        f"{result['rss_main_mb']:.0f}, largest worker {result['rss_worker_mb']:.0f})\n"
        f"            phases (wall s): {phases}"
    )


def medians(colds: list[dict[str, Any]]) -> str:
    """Medians over the cold runs of each figure on its own."""

    def median(values: list[float]) -> float:
        return statistics.median(values)

    wall = median([r["stats"]["seconds"] for r in colds])
    main = median([r["cpu_main"] for r in colds])
    workers = median([r["cpu_workers"] for r in colds])
    total = median([r["cpu_main"] + r["cpu_workers"] for r in colds])
    ratio = median([r["stats"]["seconds"] / r["bm25s"] for r in colds])
    loads = [r["load_before"] for r in colds]
    return (
        f"median of {len(colds)}: cold {wall:.2f} s, CPU {main:.1f}+{workers:.1f} s (total "
        f"{total:.1f}), x{ratio:.2f} bm25s; load before the runs {min(loads):.2f} to "
        f"{max(loads):.2f}"
    )


def run_case(case: str, source: Path, args: argparse.Namespace) -> None:
    """Every measurement of one case, printed as it comes."""
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        root = Path(tmp) / case
        started = time.perf_counter()
        if case == "django":
            shutil.copytree(source, root, symlinks=True)
        elif case == "tree":
            make_tree(root, args.files)
        else:
            make_bigfile(root)
        made = time.perf_counter() - started
        if args.git:
            for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
                subprocess.run(
                    ["git", "-c", "user.name=b", "-c", "user.email=b@b", *command],
                    cwd=root,
                    check=True,
                )
        print(f"\n== {case}: {source if case == 'django' else f'generated in {made:.1f} s'} "
              f"({'git' if args.git else 'no git'}), {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
        floor(root)  # warm the page cache: every measurement reads from memory
        floor_seconds, files, size = floor(root)
        print(f"floor       {floor_seconds:8.2f} s  read {files} files, {size / 1e6:.1f} MB "
              f"({size / 1e6 / floor_seconds:.0f} MB/s)")  # fmt: skip

        colds = []
        for number in range(1, args.repeat + 1):
            shutil.rmtree(root / ".contextfuse", ignore_errors=True)
            load = os.getloadavg()[0]
            result = run_index(root, args.workers, not args.no_embed)
            # bm25s right after each run: the ratio compares two figures of the same moment.
            indexed = _indexed_paths(root)
            tokenise, build = bm25s_baseline(root, indexed)
            result.update(bm25s=tokenise + build, load_before=load)
            colds.append(result)
            print(cold_line(number, result))
        cold = sorted(colds, key=lambda r: r["stats"]["seconds"])[len(colds) // 2]
        stats = cold["stats"]
        bm25_seconds = cold["bm25s"]
        print(f"bm25s       {bm25_seconds:8.2f} s  ({tokenise:.2f} s read + tokenise, "
              f"{build:.2f} s index) over the {len(indexed)} indexed files (last run)")  # fmt: skip
        print(medians(colds))
        if args.cold_only:
            return
        total_mb, vectors_mb = index_size(root)
        print(
            f"index       {stats['files']} files, {stats['nodes']} nodes, {stats['edges']} "
            f"edges, {stats['tokens']:,} tokens, skipped {sum(stats['skipped'].values())}; "
            f"{total_mb:.1f} MB on disk ({total_mb / (size / 1e6):.1f}x the files), "
            f"vectors {vectors_mb:.1f} MB; {stats['contributors'] or 'no contributors'}"
        )
        size_mb = size / 1e6
        print(line("cold", cold, floor_seconds, bm25_seconds, size_mb))
        warm = run_index(root, args.workers, not args.no_embed)
        print(line("refresh, no change", warm, floor_seconds, bm25_seconds, size_mb))
        edited = root / "django" / "db" / "models" / "query.py"
        if case == "django" and edited.is_file():
            source_text = edited.read_text()
            # A change inside a function (the symbols stay): only that file is linked again.
            edited.write_text(source_text.replace("Insert each of the instances", "Insert all", 1))
            body = run_index(root, args.workers, not args.no_embed)
            print(line("refresh, body edited", body, floor_seconds, bm25_seconds, size_mb))
            # A new function: names resolve differently, the whole graph is linked again.
            edited.write_text(source_text + "\n\ndef bench_added():\n    return 1\n")
            added = run_index(root, args.workers, not args.no_embed)
            print(line("refresh, symbol added", added, floor_seconds, bm25_seconds, size_mb))
            latency = queries(root)
            print(
                f"queries     search {latency['search_ms']:.1f} ms ({latency['issue_chars']} "
                f"chars of issue), pagerank {latency['pagerank_ms']:.1f} ms "
                f"(first call, loading the graph: {latency['pagerank_first_ms']:.0f} ms)"
            )
        assembled = run_assemble(root, QUERIES[case])
        print(
            f"assemble    first {assembled['first']:.2f} s (loads the index), second "
            f"{assembled['second']:.2f} s, {assembled['fragments']} fragments, RSS "
            f"{assembled['rss_mb']:.0f} MB; imports {assembled['imports']:.2f} s, bare start "
            f"{assembled['bare_start']:.2f} s (x{assembled['first'] / assembled['bare_start']:.1f})"
        )
        print(f"load        {os.getloadavg()[0]:.2f} at the end; cold runs: "
              f"{[round(r['stats']['seconds'], 2) for r in colds]}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--case", action="append", choices=CASES, help="default: all")
    parser.add_argument("--django", type=Path, default=Path("/tmp/django/Django-4.1"))
    parser.add_argument("--files", type=int, default=100_000, help="files of the tree case")
    parser.add_argument("--workers", default="auto", help="worker processes (default: auto)")
    parser.add_argument("--no-embed", action="store_true", help="no index contributors")
    parser.add_argument("--git", action="store_true", help="index a git repository of the copy")
    parser.add_argument("--repeat", type=int, default=1, help="cold runs (the median is kept)")
    parser.add_argument(
        "--cold-only", action="store_true", help="only the cold runs (no refresh, no assembly)"
    )
    args = parser.parse_args(argv)
    cases = args.case or list(CASES)
    if "django" in cases and not args.django.is_dir():
        print(f"no Django sdist at {args.django} (see --django)", file=sys.stderr)
        return 2
    for case in cases:
        run_case(case, args.django, args)
    return 0


def _indexed_paths(root: Path) -> list[str]:
    conn = sqlite3.connect(root / ".contextfuse" / "index.db")
    try:
        return [row[0] for row in conn.execute("SELECT path FROM files ORDER BY path")]
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
