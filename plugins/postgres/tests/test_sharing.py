"""Several indexers and servers share one database: locks, isolation, a pool."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import psycopg
from contextfuse_postgres import PostgresStoreProvider, open_postgres_backends
from contextfuse_postgres.indexer import project_lock_key


def test_indexers_of_one_project_take_turns_and_leave_one_copy(server_url: str, repo: Path) -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            PostgresStoreProvider().index(repo, {"url": server_url})
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with psycopg.connect(server_url) as conn:
        files = conn.execute(
            "SELECT count(*) FROM cf_files WHERE project = %s", (repo.name,)
        ).fetchone()[0]
    assert errors == []
    assert files == 2


def test_an_indexer_waits_for_the_project_lock(server_url: str, repo: Path) -> None:
    done = threading.Event()
    with psycopg.connect(server_url) as holder:
        holder.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (project_lock_key(repo.name),),
        )
        worker = threading.Thread(
            target=lambda: (PostgresStoreProvider().index(repo, {"url": server_url}), done.set())
        )
        worker.start()
        assert not done.wait(1.0)  # blocked while the lock is held
        holder.rollback()  # releases the lock
        worker.join()
    assert done.is_set()


def test_a_server_reads_the_last_committed_index_while_another_indexes(
    server_url: str, repo: Path
) -> None:
    provider = PostgresStoreProvider()
    provider.index(repo, {"url": server_url})
    backends = provider.open(repo, {"url": server_url})
    try:
        with psycopg.connect(server_url) as holder:
            holder.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (project_lock_key(repo.name),),
            )
            assert [n.name for n in backends.nodes.find_symbols("beta")] == ["beta"]
    finally:
        backends.nodes.close()


def test_vector_search_uses_an_hnsw_index(server_url: str, repo: Path) -> None:
    PostgresStoreProvider().index(repo, {"url": server_url})
    backends = open_postgres_backends(server_url, repo.name)
    try:
        hashes = backends.nodes.content_hashes(
            [f"project://{repo.name}/pkg/a.py#alpha", f"project://{repo.name}/pkg/b.py#beta"]
        )
        backends.vector.upsert(
            "toy", list(hashes), list(hashes.values()), np.eye(2, 3, dtype=np.float32)
        )
    finally:
        backends.nodes.close()
    with psycopg.connect(server_url) as conn:
        indexes = [
            row[0]
            for row in conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename = 'cf_vectors'"
            )
        ]
    assert any("USING hnsw" in index and "vector(3)" in index for index in indexes)


def test_a_large_run_parses_in_worker_processes_and_stores_every_file(
    server_url: str, tmp_path: Path
) -> None:
    root = tmp_path / "many-files"
    root.mkdir()
    for i in range(450):  # above the threshold for worker processes
        (root / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    stats = PostgresStoreProvider().index(root, {"url": server_url})
    backends = open_postgres_backends(server_url, root.name)
    try:
        assert (stats.files, stats.files_parsed) == (450, 450)
        assert [n.name for n in backends.nodes.find_symbols("f449")] == ["f449"]
    finally:
        backends.nodes.close()
