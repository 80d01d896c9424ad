"""The offline summary: the facts an agent acts on, within the room the target leaves."""

from __future__ import annotations

import json
from typing import Any

from contextfuse.compaction import CompactRequest, collect_providers, compact
from contextfuse.compaction.digest import digest
from contextfuse.compaction.transcript import json_bytes

Message = dict[str, Any]

SOURCE = "\n".join(
    f"{n:6}\t{line}"
    for n, line in enumerate(
        [
            "from starlette.exceptions import HTTPException",
            "try:",
            "    import itsdangerous",
            "except ModuleNotFoundError:",
            "    raise RuntimeError('install itsdangerous')",
            "",
            "class SessionMiddleware:",
            "    def __init__(self, app, secret_key):",
            "        self.app = app",
            "        self.error_page = None  # an error page is not shown",
        ]
        * 8,
        start=1,
    )
)
PYTEST = (  # pytest's own lines run past 100 columns
    """\
........F.F                                                               [100%]
=================================== FAILURES ===================================
______________________ test_session_cleared_by_assignment ______________________

    def test_session_cleared_by_assignment():
        store.session = {}
>       assert "session" not in cookies, "cookie still present"
E       AssertionError: cookie still present
E       assert 'session' not in {'session': 'abc'}

tests/test_session.py:54: AssertionError
=========================== short test summary info ============================
FAILED tests/test_session.py::test_session_cleared_by_assignment - AssertionError: cookie still present
FAILED tests/test_session.py::test_other - assert []
2 failed, 9 passed in 0.41s
[exit code 1]"""  # noqa: E501
)
TRACEBACK = """\
Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/work/repo/sessionkit/store.py", line 76, in session
    self._session = Session(value)
  File "/usr/lib/python3.11/site-packages/dictlib.py", line 34, in __init__
    super().__init__(*args, **kwargs)
TypeError: 'NoneType' object is not iterable
[exit code 1]"""


def call(n: int, name: str, arguments: dict[str, Any], output: str, note: str | None = None):
    call_id = f"call_{n}"
    return [
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
        },
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


def session(recent: int = 4) -> list[Message]:
    """A debugging session: reading code, a failing run, a decision, an edit, then recent
    units (short listings) that compaction keeps whole."""
    messages: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "A session test fails on main; fix it."},
        *call(1, "read_file", {"path": "starlette/middleware/sessions.py"}, SOURCE),
        *call(2, "bash", {"command": "python -m pytest -q tests"}, PYTEST),
        *call(3, "read_file", {"path": "sessionkit/store.py"}, SOURCE),
        {
            "role": "assistant",
            "content": "The setter builds a fresh Session whose modified flag is False. "
            "Decision: mark the session modified in the setter instead of diffing in save().",
        },
        *call(
            4,
            "edit_file",
            {"path": "sessionkit/store.py", "old_string": "a", "new_string": "b"},
            "The file sessionkit/store.py has been updated.",
        ),
        *call(5, "bash", {"command": "python -c 'store.session = None'"}, TRACEBACK),
    ]
    for n in range(recent):
        messages += call(10 + n, "list_dir", {"path": f"pkg{n}"}, f"a{n}.py\nb{n}.py")
    return messages


def summary_of(result: dict[str, Any]) -> str:
    (marker,) = [
        m["content"]
        for m in result["messages"]
        if str(m.get("content")).startswith("[contextfuse summary")
    ]
    return str(marker)


def compacted(messages: list[Message], **fields: Any) -> dict[str, Any]:
    return compact(CompactRequest(messages=messages, **fields), collect_providers(None))


def test_the_default_summary_keeps_the_failed_tests_and_their_assertion() -> None:
    summary = summary_of(compacted(session()))
    assert (
        "FAILED tests/test_session.py::test_session_cleared_by_assignment - AssertionError: "
        "cookie still present"
    ) in summary
    assert "FAILED tests/test_session.py::test_other" in summary
    assert "2 failed, 9 passed" in summary


def test_code_the_agent_read_is_not_taken_for_errors() -> None:
    summary = summary_of(compacted(session()))
    assert "HTTPException" not in summary
    assert "ModuleNotFoundError" not in summary


def test_a_tracebacks_last_frame_and_its_last_frame_in_the_project_are_kept() -> None:
    summary = summary_of(compacted(session()))
    assert "TypeError: 'NoneType' object is not iterable" in summary
    assert 'dictlib.py", line 34, in __init__' in summary
    assert 'sessionkit/store.py", line 76, in session' in summary
    assert "tests/test_session.py:54: AssertionError" in summary


def test_the_files_the_agent_changed_and_its_decisions_are_kept() -> None:
    summary = summary_of(compacted(session()))
    assert "edit_file sessionkit/store.py" in summary
    assert "Decision: mark the session modified in the setter" in summary


def test_the_files_the_agent_read_are_listed_on_one_line() -> None:
    summary = summary_of(compacted(session()))
    (line,) = [line for line in summary.splitlines() if "files read:" in line]
    assert "starlette/middleware/sessions.py (" in line and "sessionkit/store.py (" in line


def test_the_commands_run_are_kept_with_their_exit_code() -> None:
    summary = summary_of(compacted(session()))
    assert "bash `python -m pytest -q tests` -> exit 1" in summary


def test_the_default_summary_meets_a_target_that_leaves_it_room() -> None:
    report = compacted(session(), target_ratio=0.3)["compaction"]
    assert report["target_met"] and report["target_note"] is None


def test_a_missed_target_says_the_protected_messages_alone_exceed_it() -> None:
    messages = session(recent=4)
    messages[-1]["content"] = "x" * 20_000  # a recent unit: protected
    report = compacted(messages)["compaction"]
    assert not report["target_met"]
    assert "protected messages alone" in report["target_note"]


def test_a_missed_target_says_how_much_the_kept_facts_take() -> None:
    report = compacted(session(), target_ratio=0.12)["compaction"]
    assert not report["target_met"]
    assert "besides the" in report["target_note"]
    assert f"target of {report['target_bytes']:,}" in report["target_note"]


def test_a_transcript_larger_than_one_summary_request_is_read_whole() -> None:
    filler = [
        m
        for n in range(40)
        for m in call(100 + n, "bash", {"command": f"make step{n}"}, "ok\n" * 800 + "[exit code 0]")
    ]
    messages = session()
    messages[2:2] = filler  # older than the failure: well past the 50 KB of one request
    summary = summary_of(compacted(messages))
    assert "FAILED tests/test_session.py::test_session_cleared_by_assignment" in summary
    assert "make step0" in summary and "make step39" in summary


def test_less_important_facts_give_way_to_the_budget() -> None:
    text = "\n".join(
        f"[{k}] tool (result of c{k}): src/m{k}.py:{k}: def handler_{k}(request):"
        for k in range(200)
    )
    assert json_bytes(digest(text, 400)) <= 400


def test_a_repeated_failure_is_kept_once() -> None:
    run = "[{k}] tool (result of c{k}): FAILED tests/t.py::test_a - AssertionError: no\n1 failed"
    text = "\n".join(run.format(k=k) for k in (3, 9))
    assert digest(text).count("FAILED tests/t.py::test_a") == 1
