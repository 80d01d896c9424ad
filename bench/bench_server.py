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
every row too, right after this one's, on the same index and questions. ``--at-once``
runs each row with each of these ``assemblies_at_once`` settings (default: the service's
own default).

References measured in the same run: one assembly at a time in a process of each
installation (CPU milliseconds per request, the median of three passes over the questions,
with the service's garbage-collector settings, and the throughput the machine's cores
could give at this installation's cost), and ``GET /healthz`` with 30 clients on the
one-worker service (the HTTP stack alone). ``--side-by-side`` adds, per thread count, each
installation's assemblies run by that many threads at once in a process of its own, no
HTTP: CPU milliseconds and context switches per assembly (``getrusage``), what running
assemblies side by side costs on its own.

    python bench/bench_server.py
    python bench/bench_server.py --repo /path/to/repo --workers 1,2 --clients 1,30 --seconds 10
    python bench/bench_server.py --against /path/to/main/.venv/bin/python --at-once 2,32
    python bench/bench_server.py --workers 2 --clients 30 --at-once 2,32 --side-by-side 1,2,32
"""

from __future__ import annotations

import argparse
import ast
import json
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


def start(
    repo: Path, workers: int, python: str, settings: Path | None
) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            *(python, "-m", "contextfuse.cli.main", "serve", "--port", "0"),
            *("--project", f"bench={repo}", "--refresh-interval", "3600"),
            *("--workers", str(workers)),
            *(("--config", str(settings)) if settings else ()),
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
    """CPU seconds per assembly, one at a time in this process: warm (after a first pass),
    with the service's garbage-collector settings, the median of three passes."""
    import gc

    from contextfuse.assembler import ContextAssembler

    with ContextAssembler(repo) as assembler:
        for body in bodies[:8]:
            assembler.assemble(str(body["query"]), int(str(body["budget"])), promote=False)
        gc.set_threshold(100_000, 50, 100)  # as the service's processes
        gc.freeze()
        passes = []
        for _ in range(3):
            started = time.process_time()
            for body in bodies:
                assembler.assemble(str(body["query"]), int(str(body["budget"])), promote=False)
            passes.append((time.process_time() - started) / len(bodies))
        return sorted(passes)[1]


def in_process_of(python: str, repo: Path, bodies: list[dict[str, object]]) -> float:
    """:func:`in_process` in a fresh process of another installation's ``python``."""
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_server; "
        "print(bench_server.in_process(__import__('pathlib').Path(sys.argv[2]), "
        "json.loads(sys.stdin.read())))"
    )
    done = subprocess.run(
        [python, "-c", script, str(Path(__file__).parent), str(repo)],
        input=json.dumps(bodies), capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(done.stdout.split()[-1])


def side_by_side_of(
    python: str, repo: Path, bodies: list[dict[str, object]], threads: int, seconds: float
) -> tuple[float, float]:
    """:func:`side_by_side` in a fresh process of another installation's ``python``."""
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_server; "
        "print(*bench_server.side_by_side(__import__('pathlib').Path(sys.argv[2]), "
        "json.loads(sys.stdin.read()), int(sys.argv[3]), float(sys.argv[4])))"
    )
    done = subprocess.run(
        [python, "-c", script, str(Path(__file__).parent), str(repo), str(threads), str(seconds)],
        input=json.dumps(bodies), capture_output=True, text=True, check=True,
    )  # fmt: skip
    cpu, switches = done.stdout.split()[-2:]
    return float(cpu), float(switches)


def side_by_side(
    repo: Path, bodies: list[dict[str, object]], threads: int, seconds: float
) -> tuple[float, float]:
    """``threads`` threads assembling at once in this process for ``seconds`` (warm, with the
    service's garbage-collector settings): (CPU seconds, context switches) per assembly."""
    import gc
    import resource

    from contextfuse.assembler import ContextAssembler

    with ContextAssembler(repo) as assembler:
        for body in bodies[:8]:
            assembler.assemble(str(body["query"]), int(str(body["budget"])), promote=False)
        gc.set_threshold(100_000, 50, 100)  # as the service's processes
        gc.freeze()
        done = [0]
        lock = threading.Lock()
        stop_at = time.monotonic() + seconds

        def work(offset: int) -> None:
            i = offset
            while time.monotonic() < stop_at:
                body = bodies[i % len(bodies)]
                assembler.assemble(str(body["query"]), int(str(body["budget"])), promote=False)
                i += 1
                with lock:
                    done[0] += 1

        before = resource.getrusage(resource.RUSAGE_SELF)
        workers = [threading.Thread(target=work, args=(n * 7,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    switches = (after.ru_nvcsw + after.ru_nivcsw) - (before.ru_nvcsw + before.ru_nivcsw)
    return cpu / max(1, done[0]), switches / max(1, done[0])


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
    parser.add_argument(
        "--at-once",
        default="",
        help="assemblies_at_once settings to run each row with (default: the service's)",
    )
    parser.add_argument(
        "--side-by-side",
        default="",
        help="thread counts: each installation's assemblies run by that many threads at once "
        "in a process of its own (CPU and context switches per assembly)",
    )
    args = parser.parse_args()
    source = args.repo or flask_sdist()
    worker_counts = [int(n) for n in args.workers.split(",")]
    client_counts = [int(n) for n in args.clients.split(",")]
    at_once = [int(n) for n in args.at_once.split(",") if n]
    side = [int(n) for n in args.side_by_side.split(",") if n]
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
        cpu: dict[str, float] = {}
        settings: dict[int | None, Path | None] = {None: None}
        if at_once:
            settings = {n: Path(tmp) / f"at-once-{n}.toml" for n in at_once}
            for n, path in settings.items():
                assert path is not None
                path.write_text(f"[server]\nassemblies_at_once = {n}\n")
        for workers in worker_counts:
            for turns, config in settings.items():
                for code, python in codes.items():
                    process, url = start(repo, workers, python, config)
                    try:
                        load(url, "/v1/assemble", bodies, max(client_counts), 3.0)  # warm up
                        if code not in healthz:
                            healthz[code] = load(url, "/healthz", None, 30, 5.0)[0]
                        for clients in client_counts:
                            spent = tree_cpu(process.pid)
                            rate, latencies, errors = load(
                                url, "/v1/assemble", bodies, clients, args.seconds
                            )
                            spent = (tree_cpu(process.pid) - spent) / max(1, len(latencies))
                            rows.append(
                                (code, workers, turns, clients, rate, latencies, errors, spent)
                            )
                    finally:
                        stop(process)
                    if code not in cpu:  # the index exists now: the reference on it
                        cpu[code] = (
                            in_process(repo, bodies)
                            if python == sys.executable
                            else in_process_of(python, repo, bodies)
                        )

        # Each installation in a process of its own, one after the other per thread count.
        threaded = {
            (code, n): side_by_side_of(python, repo, bodies, n, args.seconds)
            for n in side
            for code, python in codes.items()
        }

    files = sum(1 for p in source.rglob("*") if p.is_file())
    print(
        f"POST /v1/assemble over {source.name} ({files} files), budget {args.budget}, "
        f"{len(asked)} distinct questions, {args.seconds:.0f} s per row, {cores} cores, "
        f"load {os.getloadavg()[0]:.2f}"
    )
    assert cpu and healthz
    ideal = cores / cpu["this"]
    print(
        "reference: one assembly in-process "
        + ", ".join(f"{seconds * 1000:.1f} ms CPU ({code})" for code, seconds in cpu.items())
        + (f", ratio {cpu['this'] / cpu['against']:.2f}" if "against" in cpu else "")
        + f" (ideal {ideal:.1f} requests/s on {cores} cores at this one's); "
        "GET /healthz, 30 clients, one worker: "
        + ", ".join(f"{rate:.0f} requests/s ({code})" for code, rate in healthz.items())
    )
    print(
        "code     workers  at once  clients  requests/s  p50 ms  p95 ms  errors  share of ideal"
        "  CPU ms/request"
    )
    for code, workers, turns, clients, rate, latencies, errors, spent in rows:
        print(
            f"{code:7s}  {workers:7d}  {turns or 'default':>7}  {clients:7d}  {rate:10.1f}"
            f"  {percentile(latencies, 0.5) * 1000:6.0f}"
            f"  {percentile(latencies, 0.95) * 1000:6.0f}  {errors:6d}  {rate / ideal:14.2f}"
            f"  {spent * 1000:14.1f}"
        )

    for (code, threads), (seconds, switches) in threaded.items():
        print(
            f"in-process, {threads} assembling at once ({code}): {seconds * 1000:.1f} ms CPU "
            f"and {switches:.0f} context switches per assembly"
        )


if __name__ == "__main__":
    main()
