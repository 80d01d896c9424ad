"""A full disk, for real: the index folder is a small RAM disk (tmpfs) that fills up.

The tmpfs is mounted in a private mount namespace (``unshare -m``, or ``unshare -rm`` for a
user without privileges where user namespaces are allowed), so nothing outside the test
sees it and it goes away with the processes. Where neither works, the tests are skipped.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

CLI = [sys.executable, "-m", "contextfuse.cli.main"]
DISK = "16m"
#: The URL, the repository, the index folder (through /proc/<pid>/root), the server process.
Served = tuple[str, Path, Path, "subprocess.Popen[str]"]
Launch = Callable[..., tuple["subprocess.Popen[str]", str | None]]


def _namespace_prefix() -> list[str] | None:
    """``unshare`` options under which a process may mount a tmpfs, or None."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return None
    for prefix in (["unshare", "-m"], ["unshare", "-rm"]):
        probe = subprocess.run(
            [*prefix, "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
            capture_output=True,
            timeout=30,
        )
        if probe.returncode == 0:
            return prefix
    return None


PREFIX = _namespace_prefix()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PREFIX is None, reason="cannot mount a tmpfs in a mount namespace here"),
]


def _module(name: str, functions: int) -> str:
    return "\n\n".join(
        f"def {name}_{n}(value):\n    return value * {n}  # {name} step {n}"
        for n in range(functions)
    )


def make_repo(root: Path) -> Path:
    """A folder (no git) with a few Python files."""
    root.mkdir(parents=True)
    for n in range(3):
        (root / f"old{n}.py").write_text(_module(f"old{n}", 40))
    return root


def add_files(root: Path) -> None:
    """Enough new code that its index cannot fit in the room the filler leaves."""
    for n in range(20):
        (root / f"new{n}.py").write_text(_module(f"fresh{n}", 150))


def fill(folder: Path, leave: int) -> Path:
    """Take all the free space of ``folder``'s disk but ``leave`` bytes."""
    filler = folder / "filler"
    size = max(0, shutil.disk_usage(folder).free - leave)
    with open(filler, "wb") as out:
        while size > 0:
            chunk = min(size, 1 << 20)
            out.write(b"\0" * chunk)
            size -= chunk
    return filler


#: Runs inside the mount namespace: mounts the tmpfs on the index folder, indexes, fills the
#: disk, indexes again, looks at the index, frees the space and indexes a third time.
DRIVER = r"""
import json, os, shutil, sqlite3, subprocess, sys
from pathlib import Path

{helpers}
repo = sys.argv[1]
index = os.path.join(repo, ".contextfuse")
os.makedirs(index)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + sys.argv[2], "tmpfs", index], check=True)
CLI = [sys.executable, "-m", "contextfuse.cli.main"]

def cli(*args):
    done = subprocess.run([*CLI, *args], cwd=repo, capture_output=True, text=True)
    return {"code": done.returncode, "out": done.stdout, "err": done.stderr}

def state():
    conn = sqlite3.connect(os.path.join(index, "index.db"))
    try:
        return {
            "files": conn.execute("SELECT path, sha256 FROM files ORDER BY path").fetchall(),
            "nodes": conn.execute("SELECT count(*) FROM nodes").fetchone()[0],
            "integrity": conn.execute("PRAGMA integrity_check").fetchall(),
        }
    finally:
        conn.close()

out = {"first": cli("index", "-q"), "before": state()}
add_files(Path(repo))
filler = fill(Path(index), 160 * 1024)
out["full"] = cli("index", "-q")
out["after"] = state()
out["assemble"] = cli("assemble", "old1_7", "--no-refresh", "--budget", "400")
os.rename(filler, filler.with_name("filler1"))
second = fill(Path(index), 0)  # not a byte left, not even for the lock file's process id
out["no_room_at_all"] = cli("index", "-q")
out["after_no_room"] = state()
os.remove(second)
os.remove(filler.with_name("filler1"))
out["freed"] = cli("index", "-q")
out["end"] = state()
print(json.dumps(out))
"""


HELPERS = "".join(inspect.getsource(f) + "\n" for f in (_module, add_files, fill))


def test_a_full_disk_fails_the_index_run_clearly_and_leaves_the_index_as_it_was(
    tmp_path: Path,
) -> None:
    assert PREFIX is not None
    repo = make_repo(tmp_path / "repo")
    done = subprocess.run(
        [*PREFIX, sys.executable, "-c", DRIVER.replace("{helpers}", HELPERS), str(repo), DISK],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout)
    assert seen["first"]["code"] == 0, seen["first"]["err"]

    full = seen["full"]
    assert full["code"] == 2
    assert "Traceback" not in full["err"]
    assert full["err"].startswith(
        "error: the disk holding .contextfuse is full: the index was left as it was. "
        "Free some space there, then run the same command again"
    ), full["err"]
    assert "--rebuild" not in full["err"] and str(repo) not in full["err"]

    before, after = seen["before"], seen["after"]
    assert after == before  # the same files, the same content, the same nodes
    assert after["integrity"] == [["ok"]]
    assert seen["assemble"]["code"] == 0, seen["assemble"]["err"]
    assert "def old1_7(value):" in seen["assemble"]["out"]

    no_room = seen["no_room_at_all"]
    assert no_room["code"] == 2 and "Traceback" not in no_room["err"]
    assert "the disk holding .contextfuse is full" in no_room["err"]
    assert seen["after_no_room"] == before

    assert seen["freed"]["code"] == 0, seen["freed"]["err"]
    paths = {path for path, _ in seen["end"]["files"]}
    assert paths == {f"old{n}.py" for n in range(3)} | {f"new{n}.py" for n in range(20)}
    assert seen["end"]["integrity"] == [["ok"]]


@pytest.fixture
def served_on_a_small_disk(tmp_path: Path, launch: Launch) -> Iterator[Served]:
    """``contextfuse serve`` whose project's index folder is a tmpfs of its own namespace.

    Yields the URL, the repository, the index folder as this process sees it (through
    ``/proc/<pid>/root``) and the server process.
    """
    assert PREFIX is not None
    repo = make_repo(tmp_path / "repo")
    index = repo / ".contextfuse"
    index.mkdir()
    serve = [*CLI, "serve", "--port", "0", "--project", f"web={repo}", "--refresh-interval", "0"]
    script = f'mount -t tmpfs -o size={DISK} tmpfs "$1" && shift && exec "$@"'
    process, url = launch([*PREFIX, "sh", "-c", script, "sh", str(index), *serve], 300)
    try:
        assert url, "the server did not announce its URL"
        inside = Path(f"/proc/{process.pid}/root") / str(index).lstrip(os.sep)
        yield url, repo, inside, process
    finally:
        process.terminate()
        process.wait(timeout=60)


def _assemble(url: str, query: str) -> httpx.Response:
    body = {"project": "web", "query": query, "budget": 600}
    return httpx.post(f"{url}/v1/assemble", json=body, timeout=300)


def test_the_service_serves_the_index_as_it_was_while_the_disk_is_full(
    served_on_a_small_disk: Served,
) -> None:
    url, repo, index, process = served_on_a_small_disk
    assert _assemble(url, "old2_5").status_code == 200
    add_files(repo)
    filler = fill(index, 160 * 1024)

    stale = _assemble(url, "fresh3_17 old2_5")  # refreshes first (interval 0): the disk is full
    assert stale.status_code == 200, stale.text
    contents = "\n".join(f["content"] for f in stale.json()["fragments"])
    assert "def old2_5(value):" in contents and "def fresh" not in contents
    health = httpx.get(f"{url}/healthz").json()
    assert health["status"] == "ok"
    assert "the disk holding" in health["stale"]["web"]
    assert "is full: the index was left as it was" in health["stale"]["web"]

    filler.unlink()
    fresh = _assemble(url, "fresh3_17")
    assert fresh.status_code == 200, fresh.text
    assert any("def fresh" in f["content"] for f in fresh.json()["fragments"])
    assert httpx.get(f"{url}/healthz").json()["stale"] == {}

    process.terminate()
    _, errors = process.communicate(timeout=60)
    assert "Traceback" not in errors
    assert errors.count("serving the index as it was") == 1
