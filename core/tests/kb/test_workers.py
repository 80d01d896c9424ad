"""Worker processes build exactly the index one process builds."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import contextfuse


def dump(index_db: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(index_db)
    try:
        return conn.execute(
            "SELECT n.uri, n.content_hash, r.depth, r.content, r.token_count, r.line_start,"
            " r.line_end FROM nodes n JOIN renderings r ON r.node_id = n.id ORDER BY 1, 3"
        ).fetchall()
    finally:
        conn.close()


def test_parallel_workers_build_the_same_index(
    repo: Path, tmp_path: Path, build: Callable[..., Any]
) -> None:
    one = build(repo, index_dir=tmp_path / "one", workers=1)
    two = build(repo, index_dir=tmp_path / "two", workers=2)
    assert (one.files, one.nodes, one.edges, one.tokens) == (
        two.files,
        two.nodes,
        two.edges,
        two.tokens,
    )
    assert dump(tmp_path / "one" / "index.db") == dump(tmp_path / "two" / "index.db")


def test_spawned_workers_build_the_same_index(
    repo: Path, tmp_path: Path, build: Callable[..., Any]
) -> None:
    # Another thread makes forking unsafe: the workers are spawned instead.
    stop = threading.Event()
    waiter = threading.Thread(target=stop.wait)
    waiter.start()
    try:
        build(repo, index_dir=tmp_path / "spawned", workers=2)
    finally:
        stop.set()
        waiter.join()
    build(repo, index_dir=tmp_path / "one", workers=1)
    assert dump(tmp_path / "spawned" / "index.db") == dump(tmp_path / "one" / "index.db")


def test_a_script_without_main_guard_still_indexes(repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import threading\n"
        "from contextfuse.kb import index\n"
        "stop = threading.Event()\n"
        "threading.Thread(target=stop.wait, daemon=True).start()  # forces spawn\n"
        f"stats = index({str(repo)!r}, contributors=[], workers=2)\n"
        "print('FILES', stats.files)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(contextfuse.__file__).parents[1])},
    )
    assert done.returncode == 0, done.stderr
    assert "FILES" in done.stdout.splitlines()[-1]


class _NamedCounter:
    """A tokenizer that remembers whether it counted (one word, one token)."""

    name = "test:words"

    def __init__(self) -> None:
        self.counted = 0

    def count(self, text: str) -> int:
        self.counted += 1
        return len(text.split())

    def count_many(self, texts: list[str]) -> list[int]:
        return [self.count(t) for t in texts]


def test_a_worker_counts_every_batch_with_the_first_tokenizer_it_was_sent(
    tmp_path: Path,
) -> None:
    # Every batch brings its own unpickled copy; what the first one loaded must be kept.
    import pickle

    from contextfuse.kb import process
    from contextfuse.kb.files import Candidate

    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    stat = (tmp_path / "a.py").stat()
    candidate = Candidate("a.py", stat.st_size, stat.st_mtime_ns)
    todo = process.Todo(candidate, "python", "code", "", None)
    first, second = _NamedCounter(), _NamedCounter()
    process._TOKENIZERS.pop(first.name, None)
    try:
        process.process_batch(tmp_path, "p", [todo], 1 << 20, pickle.loads(pickle.dumps(first)))
        kept = process._TOKENIZERS[first.name]
        process.process_batch(tmp_path, "p", [todo], 1 << 20, second)
    finally:
        process._TOKENIZERS.pop(first.name, None)
    assert second.counted == 0
    assert kept.counted > 0 and kept.counted % 2 == 0  # the same texts, counted twice


class _PreparedCounter(_NamedCounter):
    """A tokenizer that notes being told to prepare for counting in bulk."""

    name = "test:prepared"

    def __init__(self) -> None:
        super().__init__()
        self.prepared = 0

    def prepare_bulk(self) -> None:
        self.prepared += 1


def test_a_worker_prepares_the_tokenizer_it_keeps_for_counting_in_bulk(tmp_path: Path) -> None:
    from contextfuse.kb import process
    from contextfuse.kb.files import Candidate

    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    stat = (tmp_path / "a.py").stat()
    todo = process.Todo(
        Candidate("a.py", stat.st_size, stat.st_mtime_ns), "python", "code", "", None
    )
    tokenizer = _PreparedCounter()
    process._TOKENIZERS.pop(tokenizer.name, None)
    try:
        for _ in range(2):
            process.process_batch(tmp_path, "p", [todo], 1 << 20, tokenizer)
    finally:
        process._TOKENIZERS.pop(tokenizer.name, None)
    assert tokenizer.prepared == 1 and tokenizer.counted > 0


def test_the_default_tokenizer_prepared_for_bulk_counts_with_tiktoken_at_once() -> None:
    from contextfuse.tokenizer import TiktokenTokenizer

    text = "def f():\n    return 1\n"
    tokenizer = TiktokenTokenizer()
    tokenizer.prepare_bulk()
    assert tokenizer.count(text) == TiktokenTokenizer().count(text)
    assert tokenizer._quick_chars == 0  # nothing went through the pure-Python encoder


def test_a_tokenizer_prepared_for_bulk_counts_pieces_without_its_own_memory() -> None:
    from contextfuse.tokenizer import TiktokenTokenizer

    text = "    return {'ünïcode': 1}  # ok\n"
    tokenizer = TiktokenTokenizer()
    assert tokenizer.plain_counter() is None  # the quick encoder serves a few texts first
    tokenizer.prepare_bulk()
    plain = tokenizer.plain_counter()
    assert plain is not None
    assert plain(text) == TiktokenTokenizer().count(text)
    assert plain("") == 0
    assert tokenizer._known == {}  # the piece counter remembers, not the tokenizer
