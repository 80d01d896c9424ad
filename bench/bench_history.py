"""Latency of temporal-archaeology and plan-decision-context on a history of thousands of commits.

The history is made from successive Django releases (PyPI sdists): the first release is one
commit, then every file that changed before the next release is one small commit (its
message names the file and the functions and classes its new lines define), then the next
release's version bump. A plan hierarchy three levels deep with superseded decisions is
added to the plan store. Then, in one process: a cold index (with the history read), the
bare commit search (the floor), and ``ContextAssembler.assemble`` with each strategy alone
at a budget, every query once to warm up and ``--rounds`` times measured: p50 and p95.

    pip download --no-deps --no-binary :all: Django==3.2 -d /tmp/dj   # and 4.0, 4.1
    tar xzf ... -C /tmp/dj
    python bench/bench_history.py /tmp/dj/Django-3.2 /tmp/dj/Django-4.0 /tmp/dj/Django-4.1
    python bench/bench_history.py ... --small-commits 30000   # tens of thousands of commits
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from random import Random

from contextfuse.assembler import ContextAssembler
from contextfuse.config import ContextfuseConfig
from contextfuse.kb import index, open_backends, open_plan_store
from contextfuse.plugin_manager import make_plugin_manager

QUERIES = [
    "why does QuerySet.bulk_create handle update_conflicts and unique_fields",
    "when did the CSRF middleware start rotating the token",
    "history of the migrations autodetector renamed field detection",
    "what changed in the password hashers iterations",
    "redis cache backend was added",
    "async views and middleware support",
    "why is the template engine escaping changed",
    "admin changelist search on related fields",
    "select_related with nullable foreign keys",
    "JSONField key transforms on SQLite and Oracle",
    "functional unique constraints and expressions in indexes",
    "scrypt password hasher",
]

_DEFINES = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)


def _files(root: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def _data(payload: bytes) -> bytes:
    return b"data %d\n%s\n" % (len(payload), payload)


def build_history(releases: list[Path], repo: Path, small_commits: int = 0) -> int:
    """A git repository replaying ``releases``; returns the number of commits.

    ``small_commits`` more commits follow, each editing one of 500 small notes files with a
    message made of identifiers of the last release (to reach tens of thousands quickly).
    """
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    stream = bytearray()
    mark = 0
    timestamp = 1_600_000_000
    previous: dict[str, bytes] = {}

    def commit(message: str, changes: bytes) -> None:
        nonlocal mark, timestamp
        mark += 1
        timestamp += 3600
        who = b"Release Bot <bot@example.com> %d +0000\n" % timestamp
        stream.extend(b"commit refs/heads/main\nmark :%d\nauthor %scommitter %s" % (mark, who, who))
        stream.extend(_data(message.encode()))
        if mark > 1:
            stream.extend(b"from :%d\n" % (mark - 1))
        stream.extend(changes)

    for release in releases:
        version = release.name.split("-", 1)[-1]
        files = _files(release)
        if not previous:
            changes = b"".join(
                b"M 100644 inline %s\n%s" % (p.encode(), _data(d)) for p, d in files.items()
            )
            commit(f"Django {version}", changes)
        else:
            for path, data in files.items():
                old = previous.get(path)
                if old == data:
                    continue
                added = set(data.decode("utf-8", "replace").splitlines())
                added -= set((old or b"").decode("utf-8", "replace").splitlines())
                names = sorted(set(_DEFINES.findall("\n".join(added))))[:8]
                verb = "Add" if old is None else "Update"
                body = f"\n\nChanges {', '.join(names)}." if names else ""
                change = b"M 100644 inline %s\n%s" % (path.encode(), _data(data))
                commit(f"{verb} {path} for Django {version}{body}", change)
            for path in sorted(set(previous) - set(files)):
                commit(f"Remove {path} for Django {version}", b"D %s\n" % path.encode())
            commit(f"Django {version}", b"")
        previous = files
    vocabulary = sorted(
        {
            name
            for data in previous.values()
            for name in _DEFINES.findall(data.decode("utf-8", "replace"))
        }
    )
    random = Random(42)
    for n in range(small_commits):
        words = random.sample(vocabulary, 3)
        path = f"notes/n{n % 500}.txt"
        note = f"Note {n}: {' '.join(words)}\n".encode()
        commit(
            f"Tweak {words[0]} and {words[1]} in {path}",
            b"M 100644 inline %s\n%s" % (path.encode(), _data(note)),
        )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=bytes(stream), check=True)
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=repo, check=True)
    return mark


def add_plans(repo: Path) -> str:
    """Three levels of plans with ten decisions each, some superseded; the leaf plan's id."""
    store = open_plan_store(repo)
    try:
        parent: str | None = None
        for level, title in enumerate(["Django 4.2 release", "ORM work", "bulk_create upsert"]):
            plan = store.add_plan(title, f"Level {level} of the plan.", parent=parent)
            previous: str | None = None
            for n in range(10):
                supersedes = [previous] if previous and n % 3 == 0 else []
                made = store.decide(
                    plan.id,
                    f"Decision {n} on {title}",
                    f"Use unique_fields and update_fields in step {n}; keep the SQL compiler.",
                    supersedes=supersedes,
                )
                previous = made.id
            parent = plan.id
        assert parent is not None
        return parent
    finally:
        store.close()


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("releases", nargs="+", type=Path)
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--small-commits", type=int, default=0, help="one-line commits added after the releases"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cf-history-") as tmp:
        repo = Path(tmp) / "django"
        started = time.perf_counter()
        commits = build_history(args.releases, repo, args.small_commits)
        print(
            f"history     {commits} commits from {len(args.releases)} releases, built in "
            f"{time.perf_counter() - started:.1f} s"
        )
        pm = make_plugin_manager(autoload=False)
        started = time.perf_counter()
        stats = index(repo, pm=pm, contributors=[])
        print(
            f"index       cold {time.perf_counter() - started:.1f} s: {stats.files} files, "
            f"{stats.commits} commits"
        )
        started = time.perf_counter()
        again = index(repo, pm=pm, contributors=[])
        print(
            f"            refresh, no change {time.perf_counter() - started:.2f} s "
            f"({again.commits_added} commits added)"
        )
        plan_id = add_plans(repo)
        backends = open_backends(repo)
        try:
            floor = []
            for query in QUERIES:
                backends.temporal.search(query, limit=40)
                begin = time.perf_counter()
                backends.temporal.search(query, limit=40)
                floor.append((time.perf_counter() - begin) * 1000)
            p50, p95 = percentiles(floor)
            print(f"floor       commit search alone: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
        finally:
            backends.nodes.close()
        assembler = ContextAssembler(repo, config=ContextfuseConfig())
        try:
            for strategy in ("temporal-archaeology", "plan-decision-context"):
                samples: list[float] = []
                plan = plan_id if strategy == "plan-decision-context" else None
                for query in QUERIES:
                    assembler.assemble(query, args.budget, strategies=[strategy], plan_id=plan)
                for _ in range(args.rounds):
                    for query in QUERIES:
                        begin = time.perf_counter()
                        payload = assembler.assemble(
                            query, args.budget, strategies=[strategy], plan_id=plan
                        )
                        samples.append((time.perf_counter() - begin) * 1000)
                        assert payload.is_within_budget
                p50, p95 = percentiles(samples)
                print(
                    f"assemble    {strategy:<22} budget {args.budget}: p50 {p50:6.1f} ms, "
                    f"p95 {p95:6.1f} ms over {len(samples)} calls, last payload "
                    f"{len(payload.fragments)} fragments"
                )
        finally:
            assembler.backends.nodes.close()
        print(f"load        {os.getloadavg()[0]:.2f} (1-minute average, {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
