"""Latency of ``contextfuse assemble`` through the command line, process start included.

Runs the command once per SWE-bench task (every ``--step``-th task of the file), with the
issue text on standard input, as the shared evaluator does (the index is refreshed by the
command), and prints p50/p95 beside the bare process start (``python -c pass``) measured in
the same run. ``--against CMD`` times another installation (e.g. the main branch's
``.venv/bin/contextfuse``) on the same tasks, interleaved call by call, so that both see the
same load.

In the same run it times the command again with a daemon serving the task's repository
(``contextfuse daemon start`` before the task's calls, ``stop`` after; the plain calls run
with ``CONTEXTFUSE_NO_DAEMON=1``), call by call beside the plain command, and prints the
ratio of the two. ``--no-daemon`` leaves that out.

    python bench/bench_cli_latency.py ../shared/bench/swebench-lite-dev.jsonl corpora-dev.tsv
    python bench/bench_cli_latency.py TASKS TSV --against /path/to/main/.venv/bin/contextfuse
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


_LOCAL = {**os.environ, "CONTEXTFUSE_NO_DAEMON": "1"}


def _assemble(command: str, repo: str, query: str, budget: int, *, daemon: bool = False) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [command, "assemble", "-", "--repo", repo, "--budget", str(budget), "--reserved", "0",
         "--format", "json"],
        input=query, capture_output=True, text=True, env=None if daemon else _LOCAL,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{command} on {repo}: {done.stderr.strip()[-300:]}")
    return seconds


def _daemon(command: str, action: str, repo: str) -> None:
    done = subprocess.run([command, "daemon", action, "--repo", repo], capture_output=True,
                          text=True)  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"{command} daemon {action} on {repo}: {done.stderr.strip()[-300:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks")
    parser.add_argument("corpora", help="TSV: instance_id, corpus dir (materialize.py)")
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--step", type=int, default=3)
    parser.add_argument("--limit", type=int, default=21)
    parser.add_argument("--against", help="another contextfuse command to time alike")
    parser.add_argument("--no-daemon", action="store_true", help="do not time with a daemon")
    args = parser.parse_args()
    command = shutil.which("contextfuse") or str(Path(sys.executable).parent / "contextfuse")
    commands = {"assemble": command}
    if args.against:
        commands["against"] = args.against
    with open(args.tasks) as fh:
        tasks = [json.loads(line) for line in fh if line.strip()][:: args.step][: args.limit]
    with open(args.corpora) as fh:
        dirs = dict(line.rstrip("\n").split("\t", 1) for line in fh if "\t" in line)
    for task in tasks:  # indexes up to date first: the runs time assembly, not a cold index
        for run in commands.values():
            subprocess.run([run, "index", dirs[task["instance_id"]]], capture_output=True)
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    if not args.no_daemon:
        seconds["daemon"] = []
    for task in tasks:
        repo, query = dirs[task["instance_id"]], task["problem_statement"]
        if not args.no_daemon:
            _daemon(command, "start", repo)
        try:
            for name, run in commands.items():
                seconds[name].append(_assemble(run, repo, query, args.budget))
            if not args.no_daemon:
                seconds["daemon"].append(_assemble(command, repo, query, args.budget, daemon=True))
        finally:
            if not args.no_daemon:
                _daemon(command, "stop", repo)
    bare: list[float] = []
    for _ in range(len(tasks)):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - started)
    floor = _percentile(bare, 0.5)
    print(f"{len(tasks)} assemblies at {args.budget} tokens, load {os.getloadavg()[0]:.2f}")
    for name, values in seconds.items():
        p50 = _percentile(values, 0.5)
        print(
            f"{name:9s} p50 {p50:.3f} s  p95 {_percentile(values, 0.95):.3f} s  "
            f"ratio to floor x{p50 / floor:.1f}"
        )
    print(f"floor     p50 {floor:.3f} s (python -c pass)")
    for other in ("against", "daemon"):
        if other in seconds:
            p50 = _percentile(seconds[other], 0.5) / _percentile(seconds["assemble"], 0.5)
            p95 = _percentile(seconds[other], 0.95) / _percentile(seconds["assemble"], 0.95)
            print(f"{other} / assemble, p50: {p50:.2f}  p95: {p95:.2f}")


if __name__ == "__main__":
    main()
