"""The HTTP service under concurrent clients, with 1, 2 and 4 worker processes.

For each worker count, starts ``contextfuse serve --workers W`` over a copy of a repository
(default: flask 2.3.3's sdist, fetched once with ``pip download`` into
``~/.cache/contextfuse-bench``), then runs 1, 10, 30 and 50 closed-loop clients for
``--seconds`` each: every client has its own keep-alive connection and sends questions
round-robin from its own offset, at ``--budget`` tokens. The questions are the first
sentences of the repository's docstrings (48 of them, sampled with a fixed seed), so that
no two concurrent requests are alike. Prints requests/s, p50 and p95 latency, errors, and
the CPU the service spent per request (all its processes, read from ``/proc``: Linux only).
``--against`` names the Python of another installation (say, main's) whose service answers
every row too, right after this one's, on the same index and questions.

References measured in the same run: one assembly at a time in this process (CPU seconds
per request, and the throughput the machine's cores could give at that cost), and
``GET /healthz`` with 30 clients on the one-worker service (the HTTP stack alone).

    python bench/bench_server.py
    python bench/bench_server.py --repo /path/to/repo --workers 1,2 --clients 1,30 --seconds 10
    python bench/bench_server.py --against /path/to/main/.venv/bin/python
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import httpx

FLASK = "flask==2.3.3"
CACHE = Path.home() / ".cache" / "contextfuse-bench"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else 0.0


def flask_sdist() -> Path:
    """flask 2.3.3's unpacked sdist (downloaded once)."""
    target = CACHE / "flask-2.3.3"
    if not target.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
             ":all:", FLASK, "-d", str(CACHE)],
            check=True,
        )  # fmt: skip
        with tarfile.open(CACHE / "flask-2.3.3.tar.gz") as archive:
            archive.extractall(CACHE, filter="data")
    return target


def questions(repo: Path, count: int = 48) -> list[str]:
    """First sentences of the repository's Python docstrings, a fixed sample."""
    found: list[str] = []
    for path in sorted(repo.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text("utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                doc = ast.get_docstring(node) or ""
                first = re.split(r"(?<=\.)\s|\n\n", doc.strip(), maxsplit=1)[0].strip()
                if len(first.split()) >= 5:
                    found.append(" ".join(first.split()))
    found = sorted(set(found))
    random.Random(20).shuffle(found)
    return found[:count] or ["how are requests dispatched to handlers"]


def start(repo: Path, workers: int, python: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            *(python, "-m", "contextfuse.cli.main", "serve", "--port", "0"),
            *("--project", f"bench={repo}", "--refresh-interval", "3600"),
            *("--workers", str(workers)),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        found = re.search(r"listening on (http://\S+)", line)
        if found:
            threading.Thread(target=process.stderr.read, daemon=True).start()  # drain
            return process, found.group(1)
    raise SystemExit("the server did not start")


def tree_cpu(root: int) -> float:
    """CPU seconds (user and system) used so far by process ``root`` and its descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    spent: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        spent[pid] = (int(fields[11]) + int(fields[12])) / tick
    total = 0.0
    for pid, seconds in spent.items():
        ancestor = pid
        while ancestor not in (root, 0, 1) and ancestor in parents:
            ancestor = parents[ancestor]
        total += seconds if ancestor == root else 0.0
    return total


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def load(url: str, path: str, bodies: list[dict[str, object]] | None, clients: int,
         seconds: float) -> tuple[float, list[float], int]:  # fmt: skip
    """``clients`` closed-loop clients for ``seconds``: (requests/s, latencies, errors)."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(offset: int) -> None:
        mine: list[float] = []
        failed = 0
        with httpx.Client(base_url=url, timeout=300) as http:
            i = offset
            while time.monotonic() < stop_at:
                started = time.perf_counter()
                if bodies is None:
                    response = http.get(path)
                else:
                    response = http.post(path, json=bodies[i % len(bodies)])
                mine.append(time.perf_counter() - started)
                failed += response.status_code != 200
                i += 1
        with lock:
            latencies.extend(mine)
            errors[0] += failed

    began = time.monotonic()
    threads = [threading.Thread(target=client, args=(n * 7,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(latencies) / (time.monotonic() - began), latencies, errors[0]


def in_process(repo: Path, bodies: list[dict[str, object]]) -> float:
    """CPU seconds per assembly, one at a time in this process (warm, after a first pass)."""
    from contextfuse.assembler import ContextAssembler

    with ContextAssembler(repo) as assembler:
        assembler.refresh()
        for body in bodies[:8]:
            assembler.assemble(str(body["query"]), int(str(body["budget"])))
        started = time.process_time()
        for body in bodies:
            assembler.assemble(str(body["query"]), int(str(body["budget"])))
        return (time.process_time() - started) / len(bodies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=None, help="default: flask 2.3.3's sdist")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--clients", default="1,10,30,50")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument(
        "--against",
        default=None,
        help="the Python of another installation: its service runs each row too, right "
        "after this one's (same index, same questions)",
    )
    args = parser.parse_args()
    source = args.repo or flask_sdist()
    worker_counts = [int(n) for n in args.workers.split(",")]
    client_counts = [int(n) for n in args.clients.split(",")]
    codes = {"this": sys.executable, **({"against": args.against} if args.against else {})}

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / source.name
        shutil.copytree(source, repo, ignore=shutil.ignore_patterns(".git", ".contextfuse"))
        asked = questions(repo)
        bodies: list[dict[str, object]] = [
            {"query": q, "project": "bench", "budget": args.budget} for q in asked
        ]
        cores = os.cpu_count() or 1
        rows = []
        healthz: dict[str, float] = {}
        cpu = None
        for workers in worker_counts:
            for code, python in codes.items():
                process, url = start(repo, workers, python)
                try:
                    load(url, "/v1/assemble", bodies, max(client_counts), 3.0)  # warm workers
                    if code not in healthz:
                        healthz[code] = load(url, "/healthz", None, 30, min(5.0, args.seconds))[0]
                    for clients in client_counts:
                        spent = tree_cpu(process.pid)
                        rate, latencies, errors = load(
                            url, "/v1/assemble", bodies, clients, args.seconds
                        )
                        spent = (tree_cpu(process.pid) - spent) / max(1, len(latencies))
                        rows.append((code, workers, clients, rate, latencies, errors, spent))
                finally:
                    stop(process)
            if cpu is None:  # the index exists now: measure the reference on it
                cpu = in_process(repo, bodies)

    files = sum(1 for p in source.rglob("*") if p.is_file())
    print(
        f"POST /v1/assemble over {source.name} ({files} files), budget {args.budget}, "
        f"{len(asked)} distinct questions, {args.seconds:.0f} s per row, {cores} cores, "
        f"load {os.getloadavg()[0]:.2f}"
    )
    assert cpu is not None and healthz
    ideal = cores / cpu
    print(
        f"reference: one assembly in-process {cpu * 1000:.0f} ms CPU (ideal {ideal:.1f} "
        f"requests/s on {cores} cores); GET /healthz, 30 clients, one worker: "
        + ", ".join(f"{rate:.0f} requests/s ({code})" for code, rate in healthz.items())
    )
    print(
        "code     workers  clients  requests/s  p50 ms  p95 ms  errors  share of ideal"
        "  CPU ms/request"
    )
    for code, workers, clients, rate, latencies, errors, spent in rows:
        print(
            f"{code:7s}  {workers:7d}  {clients:7d}  {rate:10.1f}"
            f"  {percentile(latencies, 0.5) * 1000:6.0f}"
            f"  {percentile(latencies, 0.95) * 1000:6.0f}  {errors:6d}  {rate / ideal:14.2f}"
            f"  {spent * 1000:14.1f}"
        )


if __name__ == "__main__":
    main()
