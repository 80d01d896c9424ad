"""Assemble latency on a real repository through the Python API.

For each strategy alone and for the default selection, at each budget, runs every query
once to warm up and then ``--rounds`` times, and prints p50 and p95 milliseconds per
``ContextAssembler.assemble`` call. In the same run it times the floor: the bare full-text
search for the same queries (what any retrieval must at least pay), and prints the ratio.

    pip download --no-deps --no-binary Django Django==4.1 -d /tmp/django
    tar xzf /tmp/django/Django-4.1.tar.gz -C /tmp/django
    python bench/bench_assemble.py /tmp/django/Django-4.1

The repository is copied to a temporary folder so its index never touches the original.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from contextfuse.assembler import ContextAssembler

# Generic questions a developer asks about a web framework's code base.
QUERIES = [
    "QuerySet.filter raises FieldError when the lookup spans a reverse relation",
    "how does the CSRF middleware check the token on POST requests",
    "migrations autodetector does not notice a renamed field",
    "template engine escapes HTML in variables unless marked safe",
    "password hashers: upgrade the hash on login when the iterations change",
    "admin changelist search on related fields is slow",
    "URL resolver reverse() with namespaces and include",
    "ModelForm validation of unique_together fields",
    "cache middleware sets Cache-Control and Vary headers",
    "select_related with nullable foreign keys returns None",
    "Signal.connect weak references and dispatch_uid",
    "management command makemigrations --check exits with status 1",
    "TypeError: __init__() got an unexpected keyword argument 'on_delete'",
    "serializers dump natural keys for many-to-many relations",
    "timezone aware datetimes in DateTimeField when USE_TZ is True",
    'File "django/db/models/sql/compiler.py", line 1100, in execute_sql',
]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budgets", default="8000,27000")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / args.repo.name
        shutil.copytree(args.repo, repo, ignore=shutil.ignore_patterns(".contextfuse"))
        assembler = ContextAssembler(repo)
        started = time.perf_counter()
        assembler.refresh()
        print(f"index: {time.perf_counter() - started:.1f} s")
        backends = assembler.backends

        floor: list[float] = []
        for _ in range(args.rounds):
            for query in QUERIES:
                t0 = time.perf_counter()
                backends.text.search(query, limit=300)
                floor.append((time.perf_counter() - t0) * 1000)
        floor_p50 = statistics.median(floor)
        print(
            f"floor (full-text search alone): p50 {floor_p50:.1f} ms, "
            f"p95 {percentile(floor, 0.95):.1f} ms"
        )

        selections: list[tuple[str, list[str] | None]] = [
            ("simple-keyword", ["simple-keyword"]),
            ("semantic-embedding", ["semantic-embedding"]),
            ("default", None),
        ]
        print("| strategy | budget | p50 ms | p95 ms | p50 / floor | mean tokens |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, names in selections:
            for budget in (int(b) for b in args.budgets.split(",")):
                for query in QUERIES:  # warm-up: model loads, caches
                    assembler.assemble(query, budget, strategies=names)
                times: list[float] = []
                tokens: list[int] = []
                for _ in range(args.rounds):
                    for query in QUERIES:
                        t0 = time.perf_counter()
                        payload = assembler.assemble(query, budget, strategies=names)
                        times.append((time.perf_counter() - t0) * 1000)
                        tokens.append(payload.total_tokens + payload.preamble_tokens)
                p50 = statistics.median(times)
                print(
                    f"| {label} | {budget} | {p50:.0f} | {percentile(times, 0.95):.0f} | "
                    f"{p50 / floor_p50:.1f}x | {statistics.mean(tokens):.0f} |"
                )


if __name__ == "__main__":
    main()
