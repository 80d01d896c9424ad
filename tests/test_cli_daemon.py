"""`contextfuse daemon`: a real daemon process on a real repository, asked by the real CLI.

Whatever the daemon answers must be what the command line prints without it (standard
output, standard error, exit status); whenever it cannot answer, the command runs locally
and what a dead daemon left behind is removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from contextfuse.cli.daemon_protocol import PROTOCOL, connect, recv_frame, send_frame

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "contextfuse.cli.main"]

QUERY = "why does Server.start raise PermissionError"

Run = Callable[..., subprocess.CompletedProcess[str]]


def _make_repo(base: Path, write_small_app: Callable[[Path], Path]) -> tuple[Path, dict[str, str]]:
    """A small git repository and the environment of every process about it."""
    root = write_small_app(base / "app")
    env = {k: v for k, v in os.environ.items() if k != "CONTEXTFUSE_NO_DAEMON"}
    return root, {**env, "CONTEXTFUSE_CONFIG": str(base / "no-user-config.toml")}


def _runner(root: Path, env: dict[str, str]) -> Run:
    def run(
        *args: str, stdin: str | None = None, extra: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, *args], capture_output=True, text=True, input=stdin,
                              timeout=300, cwd=root, env={**env, **(extra or {})})  # fmt: skip

    return run


@contextlib.contextmanager
def _daemon(cli: Run, root: Path) -> Iterator[dict[str, Any]]:
    """A daemon started for ``root`` the way a user starts one; stopped (or killed) after."""
    started = cli("daemon", "start", "--idle-timeout", "300")
    assert started.returncode == 0, started.stderr
    state: dict[str, Any] = json.loads((root / ".contextfuse" / "daemon.json").read_text())
    try:
        yield state
    finally:
        cli("daemon", "stop")
        if _alive(state["pid"]):
            os.kill(state["pid"], signal.SIGKILL)


@pytest.fixture(scope="module")
def shared(
    tmp_path_factory: pytest.TempPathFactory, write_small_app: Callable[[Path], Path]
) -> Iterator[tuple[Path, dict[str, str]]]:
    """One repository and its daemon for the tests that change neither."""
    root, env = _make_repo(tmp_path_factory.mktemp("shared"), write_small_app)
    with _daemon(_runner(root, env), root):
        yield root, env


@pytest.fixture
def repo(shared: tuple[Path, dict[str, str]]) -> Path:
    return shared[0]


@pytest.fixture
def env(shared: tuple[Path, dict[str, str]]) -> dict[str, str]:
    return shared[1]


@pytest.fixture
def cli(repo: Path, env: dict[str, str]) -> Run:
    return _runner(repo, env)


@pytest.fixture
def daemon(repo: Path) -> dict[str, Any]:
    state: dict[str, Any] = json.loads((repo / ".contextfuse" / "daemon.json").read_text())
    return state


@pytest.fixture
def own(
    tmp_path: Path, write_small_app: Callable[[Path], Path]
) -> Iterator[tuple[Path, Run, dict[str, Any]]]:
    """A repository and a daemon of this test's own (for tests that change or stop them)."""
    root, env = _make_repo(tmp_path, write_small_app)
    cli = _runner(root, env)
    with _daemon(cli, root) as state:
        yield root, cli, state


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (the daemon is not our child, so none should linger) counts as gone.
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


def _answered(cli: Run) -> int:
    done = cli("daemon", "status", "--format", "json")
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["answered"])


def _local(cli: Run, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return cli(*args, stdin=stdin, extra={"CONTEXTFUSE_NO_DAEMON": "1"})


def _outcome(done: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    return done.returncode, done.stdout, done.stderr


def _without_ids(text: str) -> str:
    """A JSON payload without what differs between any two runs (ULIDs, creation times)."""
    text = re.sub(r'"\d{4}-\d\d-\d\dT[\d:.]+Z?"', '"TIME"', text)
    return re.sub(r'"01[0-9A-HJKMNP-TV-Z]{24}"', '"ULID"', text)


def _wait_until(check: Callable[[], bool], seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


CASES = [
    pytest.param(("assemble", QUERY), None, id="markdown"),
    pytest.param(("assemble", QUERY, "--explain", "--budget", "600"), None, id="explain"),
    pytest.param(("assemble", "-", "--quiet"), QUERY, id="stdin-quiet"),
    pytest.param(("assemble", "app/config.py load_config", "--no-refresh"), None, id="no-refresh"),
    pytest.param(("assemble", QUERY, "--budget", "10"), None, id="budget-error"),
    pytest.param(("assemble", QUERY, "--format", "xml"), None, id="usage-error"),
    pytest.param(("assemble", QUERY, "--plan-id", "nope"), None, id="unknown-plan"),
    pytest.param(("assemble", "zzqx"), None, id="few-matches"),
]


@pytest.mark.parametrize(("args", "stdin"), CASES)
def test_the_daemon_answers_what_the_command_line_prints(
    cli: Run, daemon: dict[str, Any], args: tuple[str, ...], stdin: str | None
) -> None:
    _local(cli, *args, stdin=stdin)  # the files it delivers are promoted: settle that first
    local = _local(cli, *args, stdin=stdin)
    before = _answered(cli)
    through = cli(*args, stdin=stdin)
    assert _answered(cli) == before + 1
    assert _outcome(through) == _outcome(local)


def test_json_through_the_daemon_differs_only_in_ids_and_times(
    cli: Run, daemon: dict[str, Any]
) -> None:
    args = ("assemble", QUERY, "--format", "json", "--budget", "900")
    _local(cli, *args)
    local = _local(cli, *args)
    through = cli(*args)
    assert through.returncode == local.returncode == 0
    assert through.stderr == local.stderr
    assert _without_ids(through.stdout) == _without_ids(local.stdout)


def test_the_daemon_answers_from_a_subfolder_with_the_root_notice(
    cli: Run, daemon: dict[str, Any], repo: Path, env: dict[str, str]
) -> None:
    def run(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, "assemble", QUERY], capture_output=True, text=True,
                              cwd=repo / "app", env={**env, **extra}, timeout=300)  # fmt: skip

    run(CONTEXTFUSE_NO_DAEMON="1")
    local = run(CONTEXTFUSE_NO_DAEMON="1")
    through = run()
    assert "note: using the project at" in through.stderr
    assert _outcome(through) == _outcome(local)


def test_concurrent_commands_each_get_their_own_answer(cli: Run, daemon: dict[str, Any]) -> None:
    queries = [QUERY, "load_config reads TOML", "the README", QUERY]
    for query in queries:
        _local(cli, "assemble", query)
    expected = [_outcome(_local(cli, "assemble", q)) for q in queries]
    before = _answered(cli)
    with ThreadPoolExecutor(len(queries)) as pool:
        got = list(pool.map(lambda q: _outcome(cli("assemble", q)), queries))
    assert got == expected
    assert _answered(cli) == before + len(queries)


def test_an_edit_is_in_the_next_answer(own: tuple[Path, Run, dict[str, Any]]) -> None:
    repo, cli, _ = own
    assert "quokka_ledger" not in cli("assemble", "quokka ledger balance").stdout
    (repo / "app" / "ledger.py").write_text(
        'def quokka_ledger_balance(entries):\n    """Sum the ledger."""\n    return sum(entries)\n'
    )
    through = cli("assemble", "quokka ledger balance")
    assert through.returncode == 0, through.stderr
    assert "def quokka_ledger_balance" in through.stdout
    assert _answered(cli) == 2


def test_a_reindex_by_another_process_is_seen_without_refresh(
    own: tuple[Path, Run, dict[str, Any]],
) -> None:
    repo, cli, _ = own
    cli("assemble", "wombat tally", "--no-refresh")
    (repo / "app" / "tally.py").write_text("def wombat_tally(count):\n    return count + 1\n")
    indexed = cli("index", str(repo))
    assert indexed.returncode == 0, indexed.stderr
    through = cli("assemble", "wombat tally", "--no-refresh")
    assert "def wombat_tally" in through.stdout
    assert _answered(cli) == 2


def test_a_killed_daemon_is_cleaned_up_and_the_command_runs_locally(
    own: tuple[Path, Run, dict[str, Any]],
) -> None:
    repo, cli, daemon = own
    index_dir = repo / ".contextfuse"
    os.kill(daemon["pid"], signal.SIGKILL)
    assert _wait_until(lambda: not _alive(daemon["pid"]))
    assert (index_dir / "daemon.sock").exists() and (index_dir / "daemon.json").exists()
    local = _local(cli, "assemble", QUERY)
    through = cli("assemble", QUERY)
    assert _outcome(through) == _outcome(local)
    assert not (index_dir / "daemon.sock").exists()
    assert not (index_dir / "daemon.json").exists()


def test_status_names_pid_socket_and_uptime(cli: Run, daemon: dict[str, Any]) -> None:
    done = cli("daemon", "status")
    assert done.returncode == 0, done.stderr
    assert f"pid: {daemon['pid']}" in done.stdout
    assert f"socket: {daemon['socket']}" in done.stdout
    assert re.search(r"uptime: \d+m \d\ds", done.stdout)


def test_stop_ends_the_process_and_removes_socket_and_state(
    own: tuple[Path, Run, dict[str, Any]],
) -> None:
    repo, cli, daemon = own
    stopped = cli("daemon", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert _wait_until(lambda: not _alive(daemon["pid"]))
    assert not (repo / ".contextfuse" / "daemon.sock").exists()
    assert not (repo / ".contextfuse" / "daemon.json").exists()
    status = cli("daemon", "status")
    assert status.returncode == 1
    assert "no daemon runs" in status.stderr


def test_a_second_start_leaves_the_running_daemon_alone(cli: Run, daemon: dict[str, Any]) -> None:
    again = cli("daemon", "start")
    assert again.returncode == 0
    assert "already runs for" in again.stderr and str(daemon["pid"]) in again.stderr
    assert _alive(daemon["pid"])


def test_socket_and_state_file_are_the_users_alone(daemon: dict[str, Any], repo: Path) -> None:
    for name in ("daemon.sock", "daemon.json"):
        info = (repo / ".contextfuse" / name).stat()
        assert stat.S_IMODE(info.st_mode) == 0o600
        assert info.st_uid == os.getuid()


def test_an_idle_daemon_exits_and_cleans_up(
    tmp_path: Path, write_small_app: Callable[[Path], Path]
) -> None:
    repo, env = _make_repo(tmp_path, write_small_app)
    cli = _runner(repo, env)
    started = cli("daemon", "start", "--idle-timeout", "0.2")
    assert started.returncode == 0, started.stderr
    pid = json.loads((repo / ".contextfuse" / "daemon.json").read_text())["pid"]
    assert _wait_until(lambda: not _alive(pid))
    assert not (repo / ".contextfuse" / "daemon.sock").exists()
    assert not (repo / ".contextfuse" / "daemon.json").exists()
    assert "stopped: idle for 0.2 s" in (repo / ".contextfuse" / "daemon.log").read_text()


def test_sigterm_stops_the_daemon_and_cleans_up(own: tuple[Path, Run, dict[str, Any]]) -> None:
    repo, _, daemon = own
    os.kill(daemon["pid"], signal.SIGTERM)
    assert _wait_until(lambda: not _alive(daemon["pid"]))
    assert not (repo / ".contextfuse" / "daemon.sock").exists()
    assert not (repo / ".contextfuse" / "daemon.json").exists()


def test_the_opt_outs_answer_locally(cli: Run, daemon: dict[str, Any]) -> None:
    before = _answered(cli)
    cli("assemble", QUERY, "--no-daemon")
    cli("assemble", QUERY, extra={"CONTEXTFUSE_NO_DAEMON": "1"})
    assert _answered(cli) == before


def test_a_client_with_another_environment_runs_locally(cli: Run, daemon: dict[str, Any]) -> None:
    extra = {"CONTEXTFUSE_SOME_SETTING": "other"}
    local = _local(cli, "assemble", QUERY)
    before = _answered(cli)
    through = cli("assemble", QUERY, extra=extra)
    assert _outcome(through) == _outcome(local)
    assert _answered(cli) == before
    assert _alive(daemon["pid"])


def _raw(daemon: dict[str, Any], *frames: bytes) -> dict[str, Any] | None:
    """Send ``frames`` to the daemon; its answer, or None if it closed without one."""
    with connect(daemon["socket"], timeout=30) as sock:
        for frame in frames:
            send_frame(sock, frame)
        sock.shutdown(socket.SHUT_WR)
        try:
            answer = json.loads(recv_frame(sock))
        except Exception:
            return None
    assert isinstance(answer, dict)
    return answer


def _client_fingerprint(env: dict[str, str]) -> dict[str, str]:
    code = "import json; from contextfuse.cli.daemon_protocol import fingerprint; " \
           "print(json.dumps(fingerprint()))"  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)  # fmt: skip
    return dict(json.loads(done.stdout))


def _run_request(argv: list[str], cwd: Path, fingerprint: dict[str, str]) -> bytes:
    pair = ["utf-8", "strict"]
    return json.dumps({
        "protocol": PROTOCOL, "op": "run", "argv": argv, "cwd": str(cwd),
        "fingerprint": fingerprint, "streams": {"stdin": pair, "stdout": pair, "stderr": pair},
    }).encode()  # fmt: skip


@pytest.mark.parametrize(
    ("frames", "says"),
    [
        pytest.param([b"not json", b""], "bad request", id="not-json"),
        pytest.param([b"[1, 2]", b""], "a request is a JSON object", id="not-an-object"),
        pytest.param([b'{"protocol": 999, "op": "status"}', b""], "protocol 999", id="protocol"),
        pytest.param(
            [json.dumps({"protocol": PROTOCOL, "op": "rm"}).encode(), b""], "unknown op", id="op"
        ),
        pytest.param(
            [json.dumps({"protocol": PROTOCOL, "op": "run", "argv": ["index", "."]}).encode(), b""],
            "the daemon answers assemble",
            id="command",
        ),
        pytest.param([(1 << 40).to_bytes(8, "big")], "over the limit", id="huge-frame"),
        pytest.param([b"\x00\x00\x00\x00\x00\x00\x00\x10{"], None, id="cut-short"),
    ],
)
def test_a_bad_request_gets_an_error_and_the_daemon_goes_on(
    cli: Run, daemon: dict[str, Any], frames: list[bytes], says: str | None
) -> None:
    before = _answered(cli)
    with connect(daemon["socket"], timeout=30) as sock:
        for frame in frames:
            sock.sendall(frame) if frame.startswith(b"\x00") else send_frame(sock, frame)
        sock.shutdown(socket.SHUT_WR)
        answer = json.loads(recv_frame(sock))
    assert answer["status"] == "error"
    if says is not None:
        assert says in answer["error"]
    assert _answered(cli) == before  # still up, still answering
    assert _alive(daemon["pid"])


def test_a_command_about_another_project_is_refused(
    daemon: dict[str, Any], env: dict[str, str], tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "main.py").write_text("print('hi')\n")
    request = _run_request(["assemble", "hi", "--repo", str(other)], other,
                           _client_fingerprint(env))  # fmt: skip
    answer = _raw(daemon, request, b"")
    assert answer is not None and answer["status"] == "refused"
    assert "this daemon serves" in answer["reason"]
    assert not (other / ".contextfuse").exists()  # the daemon wrote nothing there


def test_a_client_of_another_interpreter_is_refused(
    daemon: dict[str, Any], env: dict[str, str], repo: Path
) -> None:
    fingerprint = {**_client_fingerprint(env), "python": "/elsewhere/python\x003.99"}
    answer = _raw(daemon, _run_request(["assemble", QUERY], repo, fingerprint), b"")
    assert answer is not None and answer["status"] == "refused"
    assert _alive(daemon["pid"])
