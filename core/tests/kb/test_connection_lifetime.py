"""Closing an index never pulls a connection from under a thread that is reading it."""

from __future__ import annotations

import gc
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb.store import Database

#: Closes the index while another thread runs long queries on it, many times over. Before
#: connections outlived a close, this crashed the interpreter (SIGSEGV) within a few rounds.
CLOSE_WHILE_READING = """
import sqlite3, sys, threading, time
from pathlib import Path
from contextfuse.errors import KnowledgeBaseError
from contextfuse.kb.store import Database

path = Path(sys.argv[1])
conn = sqlite3.connect(path)
conn.execute("CREATE TABLE t (x)")
conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(200_000)])
conn.commit()
conn.close()
for _ in range(20):
    db = Database(path)
    def reader():
        try:
            for _ in range(50):
                db.read("SELECT sum(x) FROM t WHERE x % 7 = 0")
        except KnowledgeBaseError:
            pass
    thread = threading.Thread(target=reader)
    thread.start()
    time.sleep(0.01)
    db.close()
    thread.join()
print("survived")
"""


def test_closing_the_index_while_another_thread_reads_it_does_not_crash(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CLOSE_WHILE_READING, str(tmp_path / "t.db")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "survived"


def test_a_reader_still_running_when_the_index_closes_is_stopped_with_a_clear_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.db"
    db = Database(path)
    db.connection().execute("CREATE TABLE t (x)")
    db.connection().executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100_000)])
    started = threading.Event()
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            started.set()
            while True:  # a strategy that outlived its request's deadline
                db.read("SELECT count(*) FROM t a, t b WHERE a.x = b.x + 1")
        except KnowledgeBaseError as exc:
            errors.append(exc)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    started.wait()
    db.close()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert len(errors) == 1
    assert "closed" in str(errors[0])


def test_the_thread_that_closes_the_index_closes_its_own_connection_at_once(
    tmp_path: Path,
) -> None:
    db = Database(tmp_path / "t.db")
    conn = db.connection()
    db.close()
    with pytest.raises(Exception, match="closed"):
        conn.execute("SELECT 1")


def _connections_alive() -> int:
    gc.collect()
    return sum(isinstance(o, sqlite3.Connection) for o in gc.get_objects())


def test_connections_of_threads_that_ended_are_let_go(tmp_path: Path) -> None:
    db = Database(tmp_path / "t.db")
    db.read("SELECT 1")
    before = _connections_alive()

    def read_once() -> None:
        db.read("SELECT 1")

    for _ in range(30):  # a thread per request, as a long-lived service may run them
        thread = threading.Thread(target=read_once)
        thread.start()
        thread.join()
    assert _connections_alive() <= before + 1
    db.close()
