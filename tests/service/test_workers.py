"""The service in several worker processes over one index, refreshed by the main process."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from contextfuse.kb import index
from contextfuse.server.gate import ServiceGate
from contextfuse.server.workers import ServedProject


@contextmanager
def workers_serving(
    served_process: Callable[..., Any], repo: Path, *options: str
) -> Iterator[tuple[str, int]]:
    """``contextfuse serve --port 0 ...`` as a process: its URL and pid."""
    with served_process("serve", "--port", "0", "--project", f"demo={repo}", *options) as url:
        yield url, server_pid()


def server_pid() -> int:
    """The ``contextfuse serve`` process this test started."""
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"serve" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0"):
                return int(child)
    raise AssertionError("no server process")


def worker_pids(pid: int) -> set[int]:
    """The worker processes of the server ``pid`` (its spawned children)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            command = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"spawn_main" in command:
                found.add(int(child))
    return found


def fragments(response: httpx.Response) -> list[tuple[str, int, str]]:
    assert response.status_code == 200, response.text
    payload = response.json()
    return [(f["uko_node"], f["detail_depth"], f["content"]) for f in payload["fragments"]]


def ask(url: str, query: str) -> httpx.Response:
    body = {"query": query, "project": "demo", "budget": 2000}
    return httpx.post(url + "/v1/assemble", json=body, timeout=120)


@pytest.mark.slow
def test_workers_answer_as_one_process_does(
    new_repo: Callable[[Path], Path], tmp_path: Path, served_process: Callable[..., Any]
) -> None:
    repo = new_repo(tmp_path / "demo")
    with workers_serving(served_process, repo, "--workers", "2") as (url, pid):
        assert len(worker_pids(pid)) == 2
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: fragments(ask(url, "add two numbers")), range(16)))
    assert all(answer == answers[0] for answer in answers)
    assert any("def add" in content for _, _, content in answers[0])


@pytest.mark.slow
def test_a_refresh_while_serving_loses_no_request_and_shows_the_change(
    new_repo: Callable[[Path], Path], tmp_path: Path, served_process: Callable[..., Any]
) -> None:
    repo = new_repo(tmp_path / "demo")
    options = ("--workers", "2", "--refresh-interval", "0.1")
    with workers_serving(served_process, repo, *options) as (url, _):
        stop = threading.Event()

        def edit() -> None:
            n = 0
            while not stop.is_set():
                (repo / f"extra_{n % 4}.py").write_text(f"def extra_{n}():\n    return {n}\n")
                n += 1
                time.sleep(0.05)

        editor = threading.Thread(target=edit)
        editor.start()
        try:
            with ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(lambda _: ask(url, "extra"), range(48)))
        finally:
            stop.set()
            editor.join()
        (repo / "matrix.py").write_text("def multiply_matrices(a, b):\n    return a @ b\n")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any("multiply_matrices" in c for _, _, c in fragments(ask(url, "multiply"))):
                break
            time.sleep(0.2)
        else:
            pytest.fail("the service never showed the new file")
    assert [(a.status_code, a.text[:300]) for a in answers if a.status_code != 200] == []


@pytest.mark.slow
def test_a_worker_that_dies_is_replaced(
    new_repo: Callable[[Path], Path], tmp_path: Path, served_process: Callable[..., Any]
) -> None:
    repo = new_repo(tmp_path / "demo")
    with workers_serving(served_process, repo, "--workers", "2") as (url, pid):
        first = worker_pids(pid)
        os.kill(next(iter(first)), signal.SIGKILL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            now = worker_pids(pid)
            if len(now) == 2 and now != first:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the dead worker was not replaced")
        assert all(ask(url, "add").status_code == 200 for _ in range(6))


def test_a_request_waits_while_an_index_run_writes(
    new_repo: Callable[[Path], Path], tmp_path: Path
) -> None:
    repo = new_repo(tmp_path / "demo")
    index(repo)
    gate = ServiceGate(tmp_path, "demo")
    project = ServedProject("demo", repo, gate=gate)
    answers: list[Any] = []
    try:
        with gate.exclusive():  # as the refresher holds it for a run that writes
            asking = threading.Thread(
                target=lambda: answers.append(project.assemble("multiply matrices", 2000))
            )
            asking.start()
            time.sleep(0.5)
            assert asking.is_alive()  # the request waits, it is not answered meanwhile
            (repo / "matrix.py").write_text("def multiply_matrices(a, b):\n    return a @ b\n")
            index(repo)
        asking.join(timeout=120)
    finally:
        project.close()
    assert any("multiply_matrices" in f.content for f in answers[0].fragments)
