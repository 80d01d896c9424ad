"""Latency of ``contextfuse assemble`` through the command line, process start included.

Runs the command once per SWE-bench task (every ``--step``-th task of the file), with the
issue text on standard input, as the shared evaluator does (the index is refreshed by the
command), and prints p50/p95 beside the bare process start (``python -c pass``) measured in
the same run.

    python bench/bench_cli_latency.py ../shared/bench/swebench-lite-dev.jsonl corpora-dev.tsv
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks")
    parser.add_argument("corpora", help="TSV: instance_id, corpus dir (materialize.py)")
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--step", type=int, default=3)
    parser.add_argument("--limit", type=int, default=21)
    args = parser.parse_args()
    command = shutil.which("contextfuse") or str(Path(sys.executable).parent / "contextfuse")
    with open(args.tasks) as fh:
        tasks = [json.loads(line) for line in fh if line.strip()][:: args.step][: args.limit]
    with open(args.corpora) as fh:
        dirs = dict(line.rstrip("\n").split("\t", 1) for line in fh if "\t" in line)
    for task in tasks:  # indexes up to date first: the runs time assembly, not a cold index
        subprocess.run([command, "index", dirs[task["instance_id"]]], capture_output=True)
    seconds: list[float] = []
    for task in tasks:
        started = time.perf_counter()
        done = subprocess.run(
            [command, "assemble", "-", "--repo", dirs[task["instance_id"]], "--budget",
             str(args.budget), "--reserved", "0", "--format", "json"],
            input=task["problem_statement"], capture_output=True, text=True,
        )  # fmt: skip
        seconds.append(time.perf_counter() - started)
        if done.returncode != 0:
            sys.exit(f"{task['instance_id']}: {done.stderr.strip()[-300:]}")
    bare: list[float] = []
    for _ in range(len(tasks)):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - started)
    p50, floor = _percentile(seconds, 0.5), _percentile(bare, 0.5)
    print(f"{len(seconds)} assemblies at {args.budget} tokens, load {os.getloadavg()[0]:.2f}")
    print(f"assemble  p50 {p50:.3f} s  p95 {_percentile(seconds, 0.95):.3f} s")
    print(f"floor     p50 {floor:.3f} s (python -c pass)  ratio x{p50 / floor:.1f}")


if __name__ == "__main__":
    main()
