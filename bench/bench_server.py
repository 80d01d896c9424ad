"""POST /v1/assemble on loopback: requests/s and latency with concurrent clients, warm index.

Starts ``contextfuse serve --port 0`` in a subprocess over a copy of a repository (default:
this checkout, without .git and virtual environments), sends every query once to warm up,
then runs ``--clients`` client threads, each with its own keep-alive connection, sending
queries round-robin for ``--seconds``. Prints requests/s and p50/p99 latency.

    python bench/bench_server.py
    python bench/bench_server.py --repo /tmp/django/Django-4.1 --clients 8 --seconds 30
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

QUERIES = [
    "how does the packer fall back to a shallower depth when a fragment does not fit",
    "where are plugins loaded from entry points and how are broken ones reported",
    "incremental indexing skips unchanged files",
    "which strategies run when the configuration enables none",
    "the token budget reserved tokens must be less than max tokens",
    "secrets are never indexed",
    "how is the context hash computed",
    "skeleton compressor keeps focus nodes deep",
]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def start(repo: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "contextfuse.cli.main", "serve", "--port", "0"),
            *("--project", f"bench={repo}", "--refresh-interval", "3600"),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        found = re.search(r"listening on (http://\S+)", line)
        if found:
            return process, found.group(1)
    raise SystemExit("the server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--budget", type=int, default=8000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / args.repo.name
        shutil.copytree(
            args.repo,
            repo,
            ignore=shutil.ignore_patterns(".git", ".venv", ".nox", ".contextfuse", "__pycache__"),
        )
        process, url = start(repo)
        try:
            with httpx.Client(base_url=url, timeout=120) as client:
                for query in QUERIES:  # warm-up: caches, lazy imports, thread pools
                    body = {"query": query, "project": "bench", "budget": args.budget}
                    client.post("/v1/assemble", json=body).raise_for_status()
            latencies: list[float] = []
            errors = [0]
            lock = threading.Lock()
            stop = time.monotonic() + args.seconds

            def worker(offset: int) -> None:
                mine: list[float] = []
                with httpx.Client(base_url=url, timeout=120) as client:
                    i = offset
                    while time.monotonic() < stop:
                        body = {
                            "query": QUERIES[i % len(QUERIES)],
                            "project": "bench",
                            "budget": args.budget,
                        }
                        started = time.perf_counter()
                        response = client.post("/v1/assemble", json=body)
                        mine.append(time.perf_counter() - started)
                        if response.status_code != 200:
                            with lock:
                                errors[0] += 1
                        i += 1
                with lock:
                    latencies.extend(mine)

            began = time.monotonic()
            threads = [threading.Thread(target=worker, args=(n,)) for n in range(args.clients)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - began
        finally:
            process.terminate()
            process.wait(timeout=30)
            if process.stderr:
                process.stderr.close()
    print(
        f"POST /v1/assemble, {args.clients} clients, budget {args.budget}, {elapsed:.1f} s, "
        f"repository {args.repo.name}"
    )
    print(
        f"requests {len(latencies)}  errors {errors[0]}  requests/s {len(latencies) / elapsed:.1f}"
        f"  p50 {percentile(latencies, 0.5) * 1000:.0f} ms  p99 "
        f"{percentile(latencies, 0.99) * 1000:.0f} ms  mean "
        f"{statistics.mean(latencies) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
