"""Storage tiers that move content: what compaction saves and what reading cold files costs.

For each store (SQLite, and PostgreSQL on a throwaway server): index the corpus, then

- the full text stored for every file, and the size of the store, with every file warm;
- the same after every file is demoted to cold and compacted (``TierStore.apply`` with the
  clock moved past ``warm_days``): the compacted files' source bytes against their stored
  bytes, and the store's size (SQLite: the file after ``VACUUM``; PostgreSQL: ``cf_files``
  with its TOAST table, after ``VACUUM FULL``);
- ``ContextAssembler.assemble`` p50/p95 over the queries with every file warm, and with
  every file cold (compacted again before each query, since an assembly stores the files
  it delivers whole again): the cost of decompressing on read.

    pip download --no-deps --no-binary :all: Django==4.1 -d /tmp/django
    tar xzf /tmp/django/Django-4.1.tar.gz -C /tmp/django
    nice -n 10 python bench/bench_tiers.py /tmp/django/Django-4.1

The repository is copied to a temporary folder first.
"""

from __future__ import annotations

import argparse
import json
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
_DAY = 86_400.0


def _store_bytes(root: Path, url: str | None) -> int:
    """The store's size on disk after reclaiming free space."""
    if url is None:
        import sqlite3

        path = root / ".contextfuse" / "index.db"
        conn = sqlite3.connect(path)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
        finally:
            conn.close()
        return path.stat().st_size
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM FULL cf_files")
        row = conn.execute("SELECT pg_total_relation_size('cf_files')").fetchone()
    assert row is not None
    return int(row[0])


def _latencies(assembler: Any, tiers: Any, cold: bool, rounds: int) -> list[float]:
    """Assembly latencies (ms) of every query, ``rounds`` times, after one warm-up pass."""
    later = time.time() + 31 * _DAY
    for query in QUERIES:
        assembler.assemble(query, _BUDGET)
    times: list[float] = []
    for _ in range(rounds):
        for query in QUERIES:
            if cold:
                tiers.apply(later)  # what the previous assembly stored whole goes cold again
            started = time.perf_counter()
            assembler.assemble(query, _BUDGET)
            times.append((time.perf_counter() - started) * 1000)
    return times


def _measure(root: Path, url: str | None, rounds: int) -> dict[str, Any]:
    from contextfuse.assembler import ContextAssembler
    from contextfuse.config import load_config
    from contextfuse.kb.tiers import tier_store_of

    started = time.perf_counter()
    if url is None:  # no index contributors (embeddings) in either store
        from contextfuse.kb import index

        stats = index(root, contributors=[])
    else:
        from contextfuse_postgres import PostgresStoreProvider

        stats = PostgresStoreProvider().index(root, {"url": url}, contributors=[])
    indexed = time.perf_counter() - started
    assembler = ContextAssembler(root, config=load_config(root).with_index(store=url))
    try:
        tiers = tier_store_of(assembler.backends)
        assert tiers is not None
        tiers.apply()
        warm_bytes = _store_bytes(root, url)
        warm = _latencies(assembler, tiers, cold=False, rounds=rounds)
        started = time.perf_counter()
        moved = tiers.apply(time.time() + 31 * _DAY)
        compaction = time.perf_counter() - started
        storage = tiers.storage()
        cold_bytes = _store_bytes(root, url)
        cold = _latencies(assembler, tiers, cold=True, rounds=rounds)
    finally:
        assembler.close()
    return {
        "files": stats.files,
        "index_s": round(indexed, 1),
        "compacted_files": moved["compacted"],
        "compaction_s": round(compaction, 2),
        "source_mb": round(storage["source_bytes"] / 1e6, 1),
        "stored_mb": round(storage["stored_bytes"] / 1e6, 1),
        "store_mb_warm": round(warm_bytes / 1e6, 1),
        "store_mb_cold": round(cold_bytes / 1e6, 1),
        "warm_p50_ms": round(statistics.median(warm)),
        "warm_p95_ms": round(percentile(warm, 0.95)),
        "cold_p50_ms": round(statistics.median(cold)),
        "cold_p95_ms": round(percentile(cold, 0.95)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    from contextfuse_postgres.testing import throwaway_server

    results: dict[str, Any] = {"corpus": args.repo.name, "queries": len(QUERIES)}
    with tempfile.TemporaryDirectory() as tmp, throwaway_server() as url:
        for name, store in (("sqlite", None), ("postgresql", url)):
            root = Path(tmp) / name / args.repo.name
            shutil.copytree(args.repo, root, ignore=shutil.ignore_patterns(".contextfuse"))
            results[name] = _measure(root, store, args.rounds)
            print(name, json.dumps(results[name]), file=sys.stderr, flush=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
