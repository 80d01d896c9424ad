"""Fuzz the running service for minutes while its repository changes under it.

A copy of a repository (``REPO``, e.g. an unpacked PyPI sdist) is served by a real
``contextfuse serve --refresh-interval 1`` on loopback. For ``--seconds``, at once:

* schemathesis runs against the published OpenAPI schema, again and again (every check but
  ``positive_data_acceptance``: responses are validated against the schema, so a body that
  does not match it is a failure);
* adversarial bodies: 100,000-character queries of one character run (letters, digits,
  ``_``, ``-``, ``.``, ``/``, non-ASCII), lone surrogates, deeply nested JSON, wrong types;
* files of the copy are edited, created and deleted, so every refresh re-indexes;
* ``/healthz`` is polled every 0.1 s, its latency recorded.

It prints the requests sent, the 5xx answers (must be 0), whether the server process is
still alive (crashes: must be 0), schemathesis's verdict and the worst ``/healthz`` latency
(must stay under 1 s). It exits 1 if any of these fails.

    pip install schemathesis
    pip download --no-deps --no-binary :all: flask==3.0.3 -d /tmp/fz
    tar xzf /tmp/fz/flask-3.0.3.tar.gz -C /tmp/fz
    python bench/fuzz_service.py /tmp/fz/flask-3.0.3 --seconds 300
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

RUNS = ["a", "1", "A", "_", "-", ".", "/", "é", "a-", "a.", "a/", "-a", "aA", "a1", " ", "\u4e00"]
LIMIT = 100_000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def copy_repository(source: Path, into: Path) -> Path:
    target = into / "served"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".contextfuse"))
    if not (target / ".git").exists():
        ident = ["-c", "user.name=fuzz", "-c", "user.email=fuzz@example.invalid"]
        subprocess.run(["git", "init", "-q"], cwd=target, check=True)
        subprocess.run(["git", "add", "-A"], cwd=target, check=True)
        subprocess.run(["git", *ident, "commit", "-qm", "copy"], cwd=target, check=True)
    return target


def adversarial_bodies(rng: random.Random) -> list[bytes]:
    """One round of bodies no well-behaved client sends."""
    bodies: list[bytes] = []
    for run in RUNS:
        query = (run * (LIMIT // len(run) + 1))[:LIMIT]
        bodies.append(json.dumps({"query": query, "project": "fuzz"}).encode())
    bodies.append(b'{"query": "\\ud800 blueprint \\udfff", "project": "fuzz"}')
    bodies.append(b'{"query": "x", "project": "fuzz", "plan_id": "\\udc80"}')
    depth = rng.choice([100, 1000, 10_000, 100_000])
    bodies.append(b'{"query": ' + b"[" * depth + b"]" * depth + b', "project": "fuzz"}')
    bodies.append(b'{"messages": ' + b"[" * depth + b"]" * depth + b"}")
    bodies.append(b'{"query": {"a": ' * 500 + b"1" + b"}" * 500 + b', "project": "fuzz"}')
    bodies.append(json.dumps({"query": "x", "project": "fuzz", "budget": 10**30}).encode())
    bodies.append(json.dumps({"query": "x" * (LIMIT + 1), "project": "fuzz"}).encode())
    bodies.append(b"\xff\xfe not json")
    return bodies


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.statuses: Counter[int] = Counter()
        self.errors: Counter[str] = Counter()
        self.worst_health = 0.0
        self.health_polls = 0
        self.edits = 0
        self.server_errors: list[str] = []

    def record(self, status: int, what: str) -> None:
        with self.lock:
            self.statuses[status] += 1
            if status >= 500:
                self.server_errors.append(what)


def adversary(url: str, stop: threading.Event, tally: Tally) -> None:
    rng = random.Random(16)
    with httpx.Client(base_url=url, timeout=120) as client:
        while not stop.is_set():
            for body in adversarial_bodies(rng):
                if stop.is_set():
                    return
                path = "/v1/compact" if body.startswith(b'{"messages"') else "/v1/assemble"
                try:
                    response = client.post(
                        path, content=body, headers={"content-type": "application/json"}
                    )
                    tally.record(response.status_code, f"{path} {body[:60]!r}")
                except httpx.HTTPError as exc:
                    with tally.lock:
                        tally.errors[type(exc).__name__] += 1


def small_queries(url: str, stop: threading.Event, tally: Tally) -> None:
    words = ["blueprint", "register", "route", "request context", "config from file", "json"]
    with httpx.Client(base_url=url, timeout=120) as client:
        for word in itertools.cycle(words):
            if stop.wait(0.3):
                return
            try:
                response = client.post(
                    "/v1/assemble", json={"query": word, "project": "fuzz", "budget": 4000}
                )
                tally.record(response.status_code, f"small {word}")
            except httpx.HTTPError as exc:
                with tally.lock:
                    tally.errors[type(exc).__name__] += 1


def health(url: str, stop: threading.Event, tally: Tally) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        while not stop.wait(0.1):
            started = time.perf_counter()
            try:
                status = client.get("/healthz").status_code
            except httpx.HTTPError as exc:
                status = 599
                with tally.lock:
                    tally.errors[f"healthz {type(exc).__name__}"] += 1
            took = time.perf_counter() - started
            with tally.lock:
                tally.health_polls += 1
                tally.worst_health = max(tally.worst_health, took)
            tally.record(status, "healthz")


def editor(repo: Path, stop: threading.Event, tally: Tally) -> None:
    rng = random.Random(7)
    sources = sorted(p for p in repo.rglob("*.py") if ".git" not in p.parts)
    n = 0
    while not stop.wait(0.2):
        n += 1
        action = rng.choice(["append", "create", "delete"])
        if action == "append" and sources:
            with rng.choice(sources).open("a", encoding="utf-8") as handle:
                handle.write(f"\n\ndef fuzz_edit_{n}(value):\n    return value + {n}\n")
        elif action == "create":
            (repo / f"fuzz_new_{n % 20}.py").write_text(f"FUZZ_{n} = {n}\n")
        else:
            victim = repo / f"fuzz_new_{rng.randrange(20)}.py"
            victim.unlink(missing_ok=True)
        with tally.lock:
            tally.edits += 1


def schemathesis_rounds(url: str, stop: threading.Event, results: list[tuple[int, str]]) -> None:
    while not stop.is_set():
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "schemathesis.cli",
                "run",
                f"{url}/openapi.json",
                "--checks",
                "all",
                # Schema-valid but refused by a rule no static schema states (the project
                # must be one the server was started with): a 422 there is the right answer.
                "--exclude-checks",
                "positive_data_acceptance",
                "--max-examples",
                "60",
                "--request-timeout",
                "120",
                "--no-color",
            ],
            capture_output=True,
            text=True,
        )
        results.append((done.returncode, done.stdout[-3000:]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--seconds", type=float, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="contextfuse-fuzz-") as tmp:
        repo = copy_repository(args.repo.resolve(), Path(tmp))
        port = free_port()
        log = open(Path(tmp) / "server.log", "w")  # noqa: SIM115 (closed below)
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "contextfuse.cli.main",
                "serve",
                "--project",
                f"fuzz={repo}",
                "--port",
                str(port),
                "--refresh-interval",
                "1",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        tally = Tally()
        stop = threading.Event()
        verdicts: list[tuple[int, str]] = []
        threads = [
            threading.Thread(target=adversary, args=(url, stop, tally)),
            threading.Thread(target=small_queries, args=(url, stop, tally)),
            threading.Thread(target=health, args=(url, stop, tally)),
            threading.Thread(target=editor, args=(repo, stop, tally)),
            threading.Thread(target=schemathesis_rounds, args=(url, stop, verdicts)),
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        stop.wait(args.seconds)
        stop.set()
        for thread in threads:
            thread.join()
        seconds = time.monotonic() - started
        alive = server.poll() is None
        server.terminate()
        server.wait(timeout=60)
        log.close()
        server_log = (Path(tmp) / "server.log").read_text(errors="replace")
    five = sum(n for status, n in tally.statuses.items() if status >= 500)
    schema_failed = [out for code, out in verdicts if code != 0]
    print(f"fuzz run: {seconds:.0f} s against {args.repo.name}, {tally.edits} file edits")
    statuses = dict(sorted(tally.statuses.items()))
    print(f"requests (ours): {sum(statuses.values())}, by status: {statuses}")
    print(f"schemathesis rounds: {len(verdicts)}, failed: {len(schema_failed)}")
    print(f"5xx answers: {five}")
    print(f"transport errors: {dict(tally.errors)}")
    print(f"crashes (server process died): {0 if alive else 1}")
    print(f"/healthz polls: {tally.health_polls}, worst latency: {tally.worst_health:.3f} s")
    for what in tally.server_errors[:10]:
        print("  5xx:", what)
    if schema_failed:
        print(schema_failed[-1])
    if "Traceback" in server_log or not alive:
        print(server_log[-3000:])
    ok = five == 0 and alive and not schema_failed and tally.worst_health < 1.0
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
