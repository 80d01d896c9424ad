"""Record the agent transcripts of the compaction facts benchmark (bench/agent_transcripts/).

Each scenario is a coding agent's session replayed for real in a scratch folder: every tool
result is what the command, the file or the search really gave (pytest, python, grep, the
source of installed packages: starlette, pathspec, pydantic, httpx). The agent's own words
(its notes, decisions and answer) are written here. Each transcript is saved with ``facts``:
short strings from the session that a summary must keep for the agent to carry on (the
failures and error messages, the last frame of a traceback, the files it changed, what it
decided or found).

The saved transcripts are the benchmark's data; re-recording with other package versions
changes their tool outputs (the facts are checked to occur in the transcript).

    python bench/record_agent_transcripts.py            # writes bench/agent_transcripts/*.json
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from transcripts import plain_text

OUT = Path(__file__).parent / "agent_transcripts"
SYSTEM = (
    "You are a coding agent working in the user's repository. Use the tools to read files, "
    "search, edit and run commands. Think before you act, keep changes minimal, and run the "
    "tests before you say you are done."
)
MAX_LINES = 400  # the tool truncates longer outputs, as agent tools do


def package_dir(name: str) -> Path:
    module = __import__(name)
    return Path(module.__file__).parent


def copy_package(name: str, root: Path) -> None:
    """The installed package's source, as the repository's own folder ``name``."""
    shutil.copytree(package_dir(name), root / name, ignore=shutil.ignore_patterns("__pycache__"))


class Session:
    """A transcript being recorded: tool calls run for real in ``root``."""

    def __init__(self, root: Path, kind: str, task: str) -> None:
        self.root = root
        self.kind = kind
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": task},
        ]
        self.facts: list[str] = []
        self._calls = 0

    def _call(self, note: str | None, name: str, arguments: dict[str, Any], output: str) -> str:
        self._calls += 1
        call_id = f"call_{self._calls:03d}"
        self.messages.append(
            {
                "role": "assistant",
                "content": note,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            }
        )
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        return output

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def read(self, path: str | Path, note: str | None = None, start: int = 1) -> str:
        target = Path(path) if Path(path).is_absolute() else self.root / path
        lines = target.read_text(encoding="utf-8").splitlines()[start - 1 :]
        shown = lines[:MAX_LINES]
        body = "\n".join(f"{start + i:6}\t{line}" for i, line in enumerate(shown))
        if len(lines) > MAX_LINES:
            body += f"\n... ({len(lines) - MAX_LINES} more lines)"
        return self._call(note, "read_file", {"path": str(path), "offset": start}, body)

    def run(self, command: str, note: str | None = None) -> str:
        done = subprocess.run(
            command,
            shell=True,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "120"},
        )
        lines = (done.stdout + done.stderr).rstrip("\n").splitlines()
        text = "\n".join(lines[:MAX_LINES])
        if len(lines) > MAX_LINES:
            text += f"\n... ({len(lines) - MAX_LINES} more lines)"
        text += f"\n[exit code {done.returncode}]"
        return self._call(note, "bash", {"command": command}, text)

    def write(self, path: str, content: str, note: str | None = None) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        self._call(
            note,
            "write_file",
            {"path": path, "content": content},
            f"Wrote {len(content.splitlines())} lines to {path}",
        )

    def edit(self, path: str, old: str, new: str, note: str | None = None) -> None:
        target = self.root / path
        text = target.read_text(encoding="utf-8")
        if text.count(old) != 1:
            raise SystemExit(f"{self.kind}: the edit of {path} does not match exactly once")
        target.write_text(text.replace(old, new), encoding="utf-8")
        self._call(
            note,
            "edit_file",
            {"path": path, "old_string": old, "new_string": new},
            f"The file {path} has been updated.",
        )

    def fact(self, *facts: str) -> None:
        self.facts.extend(facts)

    def save(self) -> None:
        missing = [f for f in self.facts if f not in plain_text(self.messages)]
        if missing:
            if not os.environ.get("RECORD_DRAFT"):
                raise SystemExit(f"{self.kind}: facts not in the transcript: {missing}")
            print(f"{self.kind}: facts not in the transcript: {missing}")
        OUT.mkdir(exist_ok=True)
        record = {"kind": self.kind, "facts": self.facts, "messages": self.messages}
        (OUT / f"{self.kind}.json").write_text(json.dumps(record, indent=1) + "\n")
        size = len(json.dumps(self.messages).encode())
        print(f"{self.kind}: {len(self.messages)} messages, {size:,} bytes")


def files(root: Path, tree: dict[str, str]) -> None:
    for name, text in tree.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def git_init(root: Path) -> None:
    git = ["git", "-c", "user.name=dev", "-c", "user.email=dev@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "initial"], cwd=root, check=True)


# ---- 1. debugging a failing test -------------------------------------------------------------

SESSIONKIT = {
    "README.md": """
        # sessionkit

        Signed cookie sessions for small WSGI apps. `SessionStore` loads the session from the
        request cookie and `SessionStore.save()` writes the `Set-Cookie` header.
    """,
    "sessionkit/__init__.py": """
        from sessionkit.store import SessionStore, sign, unsign

        __all__ = ["SessionStore", "sign", "unsign"]
    """,
    "sessionkit/store.py": '''
        """Cookie sessions: a dict that remembers whether it changed."""

        import base64
        import hashlib
        import hmac
        import json


        class BadSignature(Exception):
            """The cookie was not signed with our secret."""


        def sign(data: bytes, secret: str) -> str:
            mac = hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()[:32]
            return base64.urlsafe_b64encode(data).decode() + "." + mac


        def unsign(value: str, secret: str) -> bytes:
            payload, _, mac = value.rpartition(".")
            try:
                data = base64.urlsafe_b64decode(payload.encode())
            except ValueError as exc:
                raise BadSignature("cookie is not base64") from exc
            expected = hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()[:32]
            if not hmac.compare_digest(mac, expected):
                raise BadSignature("signature mismatch")
            return data


        class Session(dict):
            """A dict that records changes made through its methods."""

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.modified = False

            def __setitem__(self, key, value):
                super().__setitem__(key, value)
                self.modified = True

            def __delitem__(self, key):
                super().__delitem__(key)
                self.modified = True

            def clear(self):
                super().clear()
                self.modified = True

            def pop(self, key, *default):
                self.modified = True
                return super().pop(key, *default)


        class SessionStore:
            """Loads and saves the session of one request."""

            cookie_name = "session"

            def __init__(self, secret: str, cookies: dict):
                self.secret = secret
                self._session = Session()
                raw = cookies.get(self.cookie_name)
                if raw:
                    try:
                        self._session = Session(json.loads(unsign(raw, secret)))
                    except (BadSignature, ValueError):
                        self._session = Session()
                self.had_cookie = bool(raw)

            @property
            def session(self) -> Session:
                return self._session

            @session.setter
            def session(self, value: dict) -> None:
                self._session = Session(value)

            def save(self, headers: list) -> None:
                """Append the Set-Cookie header the response needs, if any."""
                if not self._session.modified:
                    return
                if self._session:
                    data = json.dumps(dict(self._session)).encode()
                    value = sign(data, self.secret)
                    headers.append(("Set-Cookie", f"{self.cookie_name}={value}; Path=/; HttpOnly"))
                elif self.had_cookie:
                    headers.append(
                        ("Set-Cookie", f"{self.cookie_name}=; Path=/; Max-Age=0; HttpOnly")
                    )
    ''',
    "tests/test_session.py": """
        from sessionkit import SessionStore, sign


        SECRET = "s3cret"


        def cookies_for(data: str) -> dict:
            return {"session": sign(data.encode(), SECRET)}


        def set_cookies(headers):
            return [v for k, v in headers if k == "Set-Cookie"]


        def test_new_session_sets_no_cookie():
            store = SessionStore(SECRET, {})
            headers = []
            store.save(headers)
            assert headers == []


        def test_setting_a_key_sets_the_cookie():
            store = SessionStore(SECRET, {})
            store.session["user"] = "ada"
            headers = []
            store.save(headers)
            assert set_cookies(headers)[0].startswith("session=")


        def test_existing_cookie_is_loaded():
            store = SessionStore(SECRET, cookies_for('{"user": "ada"}'))
            assert store.session == {"user": "ada"}


        def test_tampered_cookie_gives_an_empty_session():
            cookies = cookies_for('{"user": "ada"}')
            cookies["session"] = cookies["session"][:-2] + "00"
            assert SessionStore(SECRET, cookies).session == {}


        def test_session_cleared_with_clear():
            store = SessionStore(SECRET, cookies_for('{"user": "ada"}'))
            store.session.clear()
            headers = []
            store.save(headers)
            assert set_cookies(headers) == ["session=; Path=/; Max-Age=0; HttpOnly"]


        def test_session_cleared_by_assignment():
            store = SessionStore(SECRET, cookies_for('{"user": "ada"}'))
            store.session = {}
            headers = []
            store.save(headers)
            assert set_cookies(headers) == ["session=; Path=/; Max-Age=0; HttpOnly"], (
                "cookie still present"
            )


        def test_unchanged_session_is_not_rewritten():
            store = SessionStore(SECRET, cookies_for('{"user": "ada"}'))
            headers = []
            store.save(headers)
            assert headers == []


        def test_replacing_the_session_keeps_the_new_values():
            store = SessionStore(SECRET, {})
            store.session = {"cart": [1, 2]}
            headers = []
            store.save(headers)
            assert set_cookies(headers)
    """,
}


def debug_failing_test(root: Path) -> Session:
    files(root, SESSIONKIT)
    git_init(root)
    s = Session(
        root,
        "debug-failing-test",
        "CI is red on main: a session test fails. Find out why and fix it without breaking "
        "the other tests.",
    )
    s.run("git log --oneline | head -5 && ls -R sessionkit tests", "Let me look around first.")
    s.read("README.md")
    s.run(f"{sys.executable} -m pytest -q tests", "Reproduce the failure.")
    s.fact(
        "FAILED tests/test_session.py::test_session_cleared_by_assignment",
        "FAILED tests/test_session.py::test_replacing_the_session_keeps_the_new_values",
        "AssertionError: cookie still present",
        "tests/test_session.py:54: AssertionError",
        "2 failed, 6 passed",
    )
    s.read("tests/test_session.py", "Read the failing test and its neighbours.")
    s.read("sessionkit/store.py", "Now the store.")
    starlette = package_dir("starlette")
    s.read(
        starlette / "middleware" / "sessions.py",
        "For comparison, how does Starlette decide to delete the cookie?",
    )
    s.say(
        "Starlette deletes the cookie when the session is empty and the request had one; it "
        "does not track modification at all. Our `save()` returns early unless "
        "`self._session.modified` is set, and the `session` setter builds a fresh `Session`, "
        "whose `modified` is False. So `store.session = {}` never reaches the delete branch. "
        "`clear()` works because it sets `modified`."
    )
    s.run("grep -rn 'modified' sessionkit tests", "Who reads or writes `modified`?")
    s.say(
        "Decision: mark the session modified in the `session` setter instead of comparing "
        "old and new contents in `save()`; assigning a session is a change even when the "
        "values are equal, and it keeps `save()` cheap."
    )
    s.edit(
        "sessionkit/store.py",
        "        self._session = Session(value)\n",
        "        self._session = Session(value)\n        self._session.modified = True\n",
    )
    s.run(f"{sys.executable} -m pytest -q tests", "Run the tests again.")
    s.run(
        f"{sys.executable} -c \"from sessionkit import SessionStore; s = SessionStore('k', {{}});"
        ' s.session = None; print(s.session)"',
        "Check that assigning None is refused clearly rather than half-working.",
    )
    s.fact("TypeError: 'NoneType' object is not iterable", 'store.py", line 34, in __init__')
    s.say(
        "Assigning None fails inside dict() with a TypeError from deep in the constructor. I "
        "will leave that behaviour as it is (out of scope) and note it for the user."
    )
    s.run("git diff --stat && git diff", "Review the change.")
    s.fact("sessionkit/store.py", "mark the session modified in the `session` setter")
    s.run(f"{sys.executable} -m pytest -q tests", "Final run.")
    s.say(
        "Fixed: `SessionStore.session`'s setter now marks the new session modified, so "
        "`store.session = {}` deletes the cookie (test_session_cleared_by_assignment passes; "
        "8 passed). Note: `store.session = None` raises TypeError; tell me if it should clear "
        "the session instead."
    )
    return s


# ---- 2. a refactor -----------------------------------------------------------------------------


def refactor(root: Path) -> Session:
    copy_package("pathspec", root)
    files(
        root,
        {
            "smoke.py": """
                import pathspec

                spec = pathspec.PathSpec.from_lines("gitwildmatch", ["*.py", "!setup.py"])
                assert spec.match_file("src/a.py")
                assert not spec.match_file("setup.py")
                assert list(spec.match_files(["a.py", "b.txt"])) == ["a.py"]
                print("smoke ok")
            """
        },
    )
    git_init(root)
    s = Session(
        root,
        "refactor",
        "In our vendored pathspec, rename util.normalize_file to normalize_path (it also "
        "takes directories now). Update every caller; keep the package importable.",
    )
    s.run("ls pathspec pathspec/patterns && wc -l pathspec/*.py", "Survey the package.")
    s.run("grep -rn 'normalize_file' --include=*.py .", "Find every use.")
    s.read("pathspec/util.py", "Read util.py, where it is defined.", start=440)
    s.say(
        "normalize_file is defined in util.py and imported by name in pathspec.py; "
        "normalize_files (deprecated) calls it too. Plan: rename the definition, then the "
        "callers."
    )
    s.edit(
        "pathspec/util.py",
        "def normalize_file(\n",
        "def normalize_path(\n",
        "Rename the definition first.",
    )
    s.run(f"{sys.executable} smoke.py", "Does it still import?")
    s.fact(
        "ImportError: cannot import name 'normalize_file' from 'pathspec.util'",
        'pathspec/pathspec.py", line 44, in <module>',
    )
    s.say(
        "As expected pathspec.py still imports the old name. Decision: keep `normalize_file` "
        "as a deprecated alias of `normalize_path` for one release, because third-party code "
        "imports it from pathspec.util; rename every internal caller."
    )
    s.run(
        "sed -i 's/normalize_file(/normalize_path(/g; s/\\tnormalize_file)/\\tnormalize_path)/; "
        "s/:func:`.normalize_file`/:func:`.normalize_path`/g' pathspec/pathspec.py "
        "pathspec/util.py && grep -rn 'normalize_file' --include=*.py pathspec",
        "Rename the callers and the doc references.",
    )
    s.read("pathspec/pathspec.py", "Check the import block.", start=30)
    s.run(f"{sys.executable} smoke.py", "Smoke test again.")
    alias = (
        "def normalize_file(*args, **kwargs):\n"
        '\t"""Deprecated alias of :func:`.normalize_path`."""\n'
        "\twarnings.warn(\n"
        '\t\t"pathspec.util.normalize_file() is deprecated; use normalize_path()",\n'
        "\t\tDeprecationWarning,\n"
        "\t\tstacklevel=2,\n"
        "\t)\n"
        "\treturn normalize_path(*args, **kwargs)\n\n\n"
    )
    decorator = (
        "@deprecated((\n"
        '\t"pathspec.util.normalize_files() is deprecated. Use normalize_path() with a "\n'
        '\t"loop for better results."\n'
        "))\n"
    )
    check = (
        f"{sys.executable} -W error::DeprecationWarning -c "
        "\"from pathspec.util import normalize_file; normalize_file('a/b')\""
    )
    s.edit(
        "pathspec/util.py",
        "def normalize_files(\n",
        alias + "def normalize_files(\n",
        "Add the deprecated alias.",
    )
    s.run(check, "The alias must warn.")
    s.say(
        "Wrong warning: the alias landed between normalize_files' @deprecated decorator and "
        "its def, so it took that decorator. Move the alias above the decorator."
    )
    s.edit("pathspec/util.py", decorator + alias, alias + decorator)
    s.run(check)
    s.fact("NameError: name 'warnings' is not defined")
    s.edit("pathspec/util.py", "import os\n", "import os\nimport warnings\n")
    s.run(check)
    s.run("grep -rn 'normalize_file\\|normalize_path' --include=*.py pathspec | head -20")
    s.run("git diff --stat", "What changed?")
    s.fact("pathspec/util.py", "pathspec/pathspec.py", "deprecated alias")
    s.run(f"{sys.executable} smoke.py && {sys.executable} -m compileall -q pathspec")
    s.say(
        "Renamed util.normalize_file to normalize_path and updated pathspec.py (imports, "
        "calls, docstrings). normalize_file stays as a deprecated alias that warns. "
        "smoke.py passes."
    )
    return s


# ---- 3. a feature ------------------------------------------------------------------------------

TODO = {
    "todo/__init__.py": "",
    "todo/store.py": '''
        """Tasks kept in a JSON lines file."""

        import json
        from dataclasses import dataclass, field
        from datetime import date
        from pathlib import Path


        @dataclass
        class Task:
            title: str
            due: date | None = None
            done: bool = False
            tags: list[str] = field(default_factory=list)


        def load(path: Path) -> list[Task]:
            tasks = []
            if not path.exists():
                return tasks
            for line in path.read_text().splitlines():
                raw = json.loads(line)
                due = date.fromisoformat(raw["due"]) if raw.get("due") else None
                tasks.append(Task(raw["title"], due, raw.get("done", False), raw.get("tags", [])))
            return tasks


        def save(path: Path, tasks: list[Task]) -> None:
            lines = []
            for task in tasks:
                due = task.due.isoformat() if task.due else None
                lines.append(json.dumps({"title": task.title, "due": due, "done": task.done,
                                         "tags": task.tags}))
            path.write_text("\\n".join(lines) + "\\n")
    ''',
    "todo/cli.py": '''
        """todo: a tiny task list on the command line."""

        import argparse
        import sys
        from datetime import date
        from pathlib import Path

        from todo.store import Task, load, save

        DEFAULT_FILE = Path.home() / ".todo.jsonl"


        def build_parser() -> argparse.ArgumentParser:
            parser = argparse.ArgumentParser(prog="todo")
            parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
            commands = parser.add_subparsers(dest="command", required=True)
            add = commands.add_parser("add")
            add.add_argument("title")
            add.add_argument("--due", type=date.fromisoformat)
            add.add_argument("--tag", action="append", default=[])
            listing = commands.add_parser("list")
            listing.add_argument("--all", action="store_true", help="include done tasks")
            done = commands.add_parser("done")
            done.add_argument("index", type=int)
            return parser


        def main(argv=None, out=sys.stdout) -> int:
            args = build_parser().parse_args(argv)
            tasks = load(args.file)
            if args.command == "add":
                tasks.append(Task(args.title, args.due, tags=args.tag))
                save(args.file, tasks)
            elif args.command == "list":
                for i, task in enumerate(tasks):
                    if task.done and not args.all:
                        continue
                    due = f" (due {task.due})" if task.due else ""
                    print(f"{i}. [{'x' if task.done else ' '}] {task.title}{due}", file=out)
            elif args.command == "done":
                tasks[args.index].done = True
                save(args.file, tasks)
            return 0
    ''',
    "tests/test_cli.py": """
        import io

        from todo.cli import main


        def run(tmp_path, *argv):
            out = io.StringIO()
            main(["--file", str(tmp_path / "t.jsonl"), *argv], out=out)
            return out.getvalue()


        def test_add_then_list(tmp_path):
            run(tmp_path, "add", "buy milk", "--due", "2026-12-24")
            assert run(tmp_path, "list") == "0. [ ] buy milk (due 2026-12-24)\\n"


        def test_done_tasks_are_hidden_unless_all(tmp_path):
            run(tmp_path, "add", "a")
            run(tmp_path, "done", "0")
            assert run(tmp_path, "list") == ""
            assert "[x] a" in run(tmp_path, "list", "--all")
    """,
}


def feature(root: Path) -> Session:
    files(root, TODO)
    git_init(root)
    s = Session(
        root,
        "feature",
        "Add `todo list --json` that prints the tasks as a JSON array so scripts can read "
        "them. Include the due date and tags.",
    )
    s.run("ls -R todo tests && git log --oneline", "Survey.")
    s.read("todo/cli.py")
    s.read("todo/store.py")
    s.read("tests/test_cli.py")
    s.say(
        "Decision: `--json` prints one JSON array of objects with title, due, done and tags, "
        "respecting `--all` like the text listing; due dates as ISO 8601 strings (null when "
        "absent). I'll write the test first."
    )
    s.edit(
        "tests/test_cli.py",
        "def test_done_tasks_are_hidden_unless_all(tmp_path):\n",
        "def test_list_json_prints_an_array(tmp_path):\n"
        '    run(tmp_path, "add", "buy milk", "--due", "2026-12-24", "--tag", "home")\n'
        '    data = json.loads(run(tmp_path, "list", "--json"))\n'
        '    assert data == [{"title": "buy milk", "due": "2026-12-24", "done": False, '
        '"tags": ["home"]}]\n\n\n'
        "def test_done_tasks_are_hidden_unless_all(tmp_path):\n",
    )
    s.edit("tests/test_cli.py", "import io\n", "import io\nimport json\n")
    s.run(f"{sys.executable} -m pytest -q tests", "The new test should fail.")
    s.fact(
        "FAILED tests/test_cli.py::test_list_json_prints_an_array - SystemExit: 2",
        "error: unrecognized arguments: --json",
    )
    s.edit(
        "todo/cli.py",
        '    listing.add_argument("--all", action="store_true", help="include done tasks")\n',
        '    listing.add_argument("--all", action="store_true", help="include done tasks")\n'
        '    listing.add_argument("--json", action="store_true", help="print a JSON array")\n',
        "Add the flag.",
    )
    s.edit(
        "todo/cli.py",
        '    elif args.command == "list":\n        for i, task in enumerate(tasks):\n',
        '    elif args.command == "list" and args.json:\n'
        "        shown = [vars(t) for t in tasks if args.all or not t.done]\n"
        "        print(json.dumps(shown), file=out)\n"
        '    elif args.command == "list":\n        for i, task in enumerate(tasks):\n',
        "Print the tasks as JSON.",
    )
    s.edit("todo/cli.py", "import argparse\n", "import argparse\nimport json\n")
    s.run(f"{sys.executable} -m pytest -q tests", "Run the tests.")
    s.fact("TypeError: Object of type date is not JSON serializable", "todo/cli.py:38: in main")
    s.say(
        "json.dumps cannot serialize `date`. As decided, dates go out as ISO strings: convert "
        "`due` with isoformat() in the row, rather than a custom JSON encoder."
    )
    s.edit(
        "todo/cli.py",
        "        shown = [vars(t) for t in tasks if args.all or not t.done]\n",
        "        shown = [\n"
        '            {**vars(t), "due": t.due.isoformat() if t.due else None}\n'
        "            for t in tasks\n"
        "            if args.all or not t.done\n"
        "        ]\n",
    )
    s.run(f"{sys.executable} -m pytest -q tests", "Again.")
    s.run(
        f"{sys.executable} -m todo.cli --help >/dev/null; {sys.executable} -c "
        "\"from todo.cli import build_parser; build_parser().parse_args(['list', '--help'])\"",
        "Check the help text.",
    )
    s.run("git diff --stat")
    s.fact("todo/cli.py", "tests/test_cli.py", "due dates as ISO 8601 strings")
    s.user("Also make sure `--json` works with `--all`.")
    s.edit(
        "tests/test_cli.py",
        "def test_done_tasks_are_hidden_unless_all(tmp_path):\n",
        "def test_list_json_all_includes_done(tmp_path):\n"
        '    run(tmp_path, "add", "a")\n'
        '    run(tmp_path, "done", "0")\n'
        '    assert json.loads(run(tmp_path, "list", "--json")) == []\n'
        '    assert json.loads(run(tmp_path, "list", "--json", "--all"))[0]["done"] is True\n\n\n'
        "def test_done_tasks_are_hidden_unless_all(tmp_path):\n",
    )
    s.run(f"{sys.executable} -m pytest -q tests")
    s.say(
        "`todo list --json` prints a JSON array (title, due as an ISO date or null, done, "
        "tags) and honours `--all`. Tests: 4 passed."
    )
    return s


# ---- 4. a dependency upgrade -------------------------------------------------------------------

SETTINGS_APP = {
    "requirements.txt": "pydantic>=1.10,<2\n",
    "app/__init__.py": "",
    "app/config.py": """
        from pydantic import BaseSettings


        class Settings(BaseSettings):
            database_url: str = "sqlite:///app.db"
            debug: bool = False

            class Config:
                env_prefix = "APP_"
    """,
    "app/models.py": """
        from pydantic import BaseModel, validator


        class User(BaseModel):
            name: str
            email: str
            tags: list[str] = []

            class Config:
                orm_mode = True

            @validator("email")
            def lower_email(cls, value):
                return value.lower()


        def export(user: User) -> dict:
            return user.dict(exclude={"tags"})


        def parse(data: dict) -> User:
            return User.parse_obj(data)
    """,
    "tests/test_models.py": """
        from app.config import Settings
        from app.models import User, export, parse


        def test_email_is_lowered():
            assert parse({"name": "Ada", "email": "ADA@EXAMPLE.ORG"}).email == "ada@example.org"


        def test_export_leaves_out_tags():
            user = User(name="Ada", email="a@b.c", tags=["x"])
            assert export(user) == {"name": "Ada", "email": "a@b.c"}


        def test_settings_read_the_environment(monkeypatch):
            monkeypatch.setenv("APP_DEBUG", "1")
            assert Settings().debug is True
    """,
}


def dependency_upgrade(root: Path) -> Session:
    files(root, SETTINGS_APP)
    git_init(root)
    s = Session(
        root,
        "dependency-upgrade",
        "We are moving to pydantic 2 (already installed in this environment). Update the "
        "code and requirements so the tests pass without deprecation warnings.",
    )
    s.run(f"cat requirements.txt && {sys.executable} -m pip show pydantic | head -3")
    s.run(f"{sys.executable} -m pytest -q tests", "Where do we stand?")
    s.fact(
        "`BaseSettings` has been moved to the `pydantic-settings` package",
        "ERROR tests/test_models.py",
        "app/config.py:1: in <module>",
    )
    s.read("app/config.py")
    s.read("app/models.py")
    pydantic = package_dir("pydantic")
    s.read(pydantic / "_migration.py", "How does pydantic report moved names?")
    s.say(
        "Decision: no new dependency for two settings; read APP_DATABASE_URL and APP_DEBUG in "
        "a small classmethod `Settings.from_env()` on a plain BaseModel instead of adding "
        "pydantic-settings."
    )
    s.write(
        "app/config.py",
        textwrap.dedent(
            """
            import os

            from pydantic import BaseModel


            class Settings(BaseModel):
                database_url: str = "sqlite:///app.db"
                debug: bool = False

                @classmethod
                def from_env(cls, prefix: str = "APP_") -> "Settings":
                    values = {
                        name: os.environ[prefix + name.upper()]
                        for name in cls.model_fields
                        if prefix + name.upper() in os.environ
                    }
                    return cls(**values)
            """
        ).lstrip(),
    )
    s.edit(
        "tests/test_models.py",
        "    assert Settings().debug is True\n",
        "    assert Settings.from_env().debug is True\n",
    )
    s.run(f"{sys.executable} -m pytest -q -W default tests", "Run again, warnings shown.")
    s.fact(
        "The `dict` method is deprecated; use `model_dump` instead.",
        "The `parse_obj` method is deprecated; use `model_validate` instead.",
        "'orm_mode' has been renamed to 'from_attributes'",
    )
    s.say(
        "Tests pass but with deprecation warnings: class Config, @validator, .dict() and "
        "parse_obj(). Replace them with model_config, field_validator, model_dump() and "
        "model_validate()."
    )
    s.write(
        "app/models.py",
        textwrap.dedent(
            """
            from pydantic import BaseModel, ConfigDict, field_validator


            class User(BaseModel):
                model_config = ConfigDict(from_attributes=True)

                name: str
                email: str
                tags: list[str] = []

                @field_validator("email")
                @classmethod
                def lower_email(cls, value: str) -> str:
                    return value.lower()


            def export(user: User) -> dict:
                return user.model_dump(exclude={"tags"})


            def parse(data: dict) -> User:
                return User.model_validate(data)
            """
        ).lstrip(),
    )
    s.write("requirements.txt", "pydantic>=2.6,<3\n")
    s.run(f"{sys.executable} -m pytest -q -W error tests", "Warnings as errors now.")
    s.run("git diff --stat")
    s.fact(
        "app/config.py", "app/models.py", "requirements.txt", "instead of adding pydantic-settings"
    )
    s.say(
        "Moved to pydantic 2: requirements now `pydantic>=2.6,<3`; Settings is a BaseModel "
        "with `from_env()` (no pydantic-settings dependency); User uses model_config, "
        "field_validator, model_dump and model_validate. 3 passed with -W error."
    )
    return s


# ---- 5. exploring a codebase --------------------------------------------------------------------


def explore_codebase(root: Path) -> Session:
    copy_package("httpx", root)
    git_init(root)
    s = Session(
        root,
        "explore-codebase",
        "I'm new to this codebase (httpx). How does the client decide whether to follow a "
        "redirect, and where is the limit on redirects enforced? Don't change anything.",
    )
    s.run("ls httpx && wc -l httpx/*.py | sort -n | tail -8", "Get the lay of the land.")
    s.run("grep -rn 'follow_redirects' httpx/*.py | head -40", "Where is the switch?")
    s.read("httpx/_client.py", "The client is the obvious place.", start=1)
    s.say(
        "Finding: `follow_redirects` is a client attribute (default False) that "
        "`send(..., follow_redirects=...)` can override per request; `send` passes it on to "
        "`_send_handling_auth` then `_send_handling_redirects`."
    )
    s.run("grep -n '_send_handling_redirects\\|max_redirects\\|TooManyRedirects' httpx/_client.py")
    s.read("httpx/_client.py", "Read the redirect loop.", start=940)
    s.say(
        "Finding: the limit is enforced in `Client._send_handling_redirects` (httpx/_client.py): "
        "`if len(history) > self.max_redirects: raise TooManyRedirects(...)`; the async client "
        "has the same loop."
    )
    s.run("grep -rn 'DEFAULT_MAX_REDIRECTS' httpx", "Where does the default come from?")
    s.read("httpx/_config.py", start=200)
    s.fact("DEFAULT_MAX_REDIRECTS = 20")
    s.read("httpx/_models.py", "How does a response know it is a redirect?", start=1)
    s.run("grep -n 'def has_redirect_location\\|def is_redirect\\|next_request' httpx/_models.py")
    s.say(
        "Finding: `Response.has_redirect_location` (httpx/_models.py) is true for 301, 302, "
        "303, 307 and 308 with a Location header; `_build_redirect_request` builds the next "
        "request (303 turns into GET, and 301/302 turn POST into GET)."
    )
    s.run("grep -n '_redirect_method\\|_redirect_url\\|_redirect_headers' httpx/_client.py")
    s.read("httpx/_exceptions.py", "And the exception hierarchy.")
    s.say(
        "Summary: a response is followed only when `follow_redirects` is true (client default "
        "False, overridable per request) and `response.has_redirect_location`; "
        "`_send_handling_redirects` in httpx/_client.py loops, building each next request with "
        "`_build_redirect_request`, and raises `TooManyRedirects` once the history exceeds "
        "`max_redirects` (DEFAULT_MAX_REDIRECTS = 20 in httpx/_config.py)."
    )
    s.fact(
        "_send_handling_redirects",
        "has_redirect_location",
        "TooManyRedirects",
        "httpx/_client.py",
        "303 turns into GET",
    )
    s.user("Thanks. And do cookies set by a redirect response reach the next request?")
    s.run("grep -n 'cookie' httpx/_client.py | head -30", "Look for cookie handling in the loop.")
    s.run("grep -n 'def extract_cookies\\|def set_cookie_header\\|class Cookies' httpx/_models.py")
    s.read("httpx/_models.py", "Read the Cookies class.", start=1075)
    s.say(
        "Finding: `_send_single_request` calls `self.cookies.extract_cookies(response)` on every "
        "response, redirects included, and `_build_redirect_request` rebuilds the headers, so "
        "the next request carries the client's cookie jar."
    )
    s.fact("extract_cookies")
    s.say(
        "Yes: cookies from each redirect response go into the client's jar "
        "(`Cookies.extract_cookies`) and are sent with the redirected request."
    )
    return s


SCENARIOS: list[Callable[[Path], Session]] = [
    debug_failing_test,
    refactor,
    feature,
    dependency_upgrade,
    explore_codebase,
]


def main() -> None:
    for scenario in SCENARIOS:
        with tempfile.TemporaryDirectory(prefix="agent-") as scratch:
            root = Path(scratch) / "repo"
            root.mkdir()
            session = scenario(root)
            # Scratch paths differ per recording: show them as the agent's working folder.
            text = json.dumps(session.messages).replace(scratch + "/repo", "/work/repo")
            for name in ("starlette", "pydantic"):
                text = text.replace(str(package_dir(name).parent), "/usr/lib/python3/site-packages")
            text = text.replace(str(Path(os.__file__).parent), "/usr/lib/python3")
            text = text.replace(sys.executable, "python")
            session.messages = json.loads(text)
            session.save()


if __name__ == "__main__":
    main()
