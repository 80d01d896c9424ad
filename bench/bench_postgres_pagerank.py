"""PageRank over a fetched subgraph (PostgreSQL) against the whole graph (SQLite).

For each query, the SQLite store's top 20 full-text hits seed personalized PageRank in both
stores; for 1, 2 and 3 hops fetched around the seeds, prints the PostgreSQL call's p50 and
max milliseconds and the share of the SQLite store's top 30 that it also returns.

    nice -n 10 python bench/bench_postgres_pagerank.py /tmp/django/Django-4.1
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_assemble import QUERIES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    args = parser.parse_args()

    from contextfuse_postgres import PostgresStoreProvider
    from contextfuse_postgres.graph import PostgresGraphBackend
    from contextfuse_postgres.nodes import Reader
    from contextfuse_postgres.testing import throwaway_server

    from contextfuse.kb import index, open_backends

    with tempfile.TemporaryDirectory() as tmp, throwaway_server() as url:
        root = Path(tmp) / "django"
        shutil.copytree(args.repo, root, ignore=shutil.ignore_patterns(".contextfuse"))
        index(root, contributors=[])
        PostgresStoreProvider().index(root, {"url": url}, contributors=[])
        sqlite = open_backends(root)
        postgres = PostgresStoreProvider().open(root, {"url": url})
        try:
            seeds = [{h.uri: h.score for h in sqlite.text.search(q, limit=20)} for q in QUERIES]
            whole = [
                {h.uri for h in sqlite.graph.personalized_pagerank(s, limit=30)} for s in seeds
            ]
            reader = Reader(postgres.nodes._reader.pool, url, root.name)
            for hops in (1, 2, 3):
                graph = PostgresGraphBackend(reader, hops=hops)
                times: list[float] = []
                shared: list[float] = []
                for seed, expected in zip(seeds, whole, strict=True):
                    started = time.perf_counter()
                    hits = graph.personalized_pagerank(seed, limit=30)
                    times.append((time.perf_counter() - started) * 1000)
                    shared.append(len(expected & {h.uri for h in hits}) / max(1, len(expected)))
                print(
                    f"hops {hops}: p50 {statistics.median(times):.0f} ms, max {max(times):.0f} ms,"
                    f" top-30 shared with the whole graph {statistics.mean(shared):.2f}"
                )
        finally:
            sqlite.nodes.close()
            postgres.nodes.close()


if __name__ == "__main__":
    main()
