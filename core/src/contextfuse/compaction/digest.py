"""An extractive digest of transcript text: the facts an agent acts on, within a byte budget.

The text is what ``render_unit`` writes: ``[k] role: content`` and ``[k] calls name(args)``
lines. Candidates are drawn per message and ranked:

1. failures and errors in tool output: failed tests, exception and error messages, result
   lines such as ``2 failed, 6 passed``; what the user said;
2. files the agent changed, and the files it read (one line), what it decided or concluded,
   the last frame of each traceback (the last in the project's own files too), warnings
   with their message;
3. commands it ran, with their exit code;
4. other tool calls, the first hits of a search, the head of the agent's other notes.

Source code the agent read is never mined for "error" lines: it is code, not an outcome. The
most important candidates are taken first until the budget is spent, then printed in the
transcript's order, each under the action that produced it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import attrs

__all__ = ["digest"]

_MESSAGE = re.compile(
    r"^\[(\d+)\] (system|developer|user|assistant|tool)(?: \(result of [^)]*\))?: "
)
_CALL = re.compile(r"^\[(\d+)\] calls ([\w.\-]+)\((.*)\)$")
_EXIT = re.compile(r"^\[?exit (?:code|status)[: ]+(-?\d+)\]?$", re.I)
# "E       AssertionError: cookie still present", "pkg.errors.PydanticImportError: ...",
# "SystemExit: 2", "KeyboardInterrupt"
_EXCEPTION = re.compile(
    r"^(?:E\s+)?((?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Warning))"
    r"(?::\s*(.*))?$"
)
# pytest's result lines: "FAILED tests/x.py::test_a - AssertionError", "ERROR tests/x.py"
_TEST_RESULT = re.compile(r"^(FAILED|ERROR|XPASS)\s+\S+")
# "2 failed, 6 passed in 3.00s", "=== 1 error in 7.91s ===", "Ran 4 tests", "FAILED (errors=1)"
_TEST_TOTALS = re.compile(
    r"^[=\s]*(\d+ (failed|passed|errors?|skipped|xfailed|warnings?)\b.*|Ran \d+ tests?.*"
    r"|FAILED \(.*\)|OK(?: \(.*\))?)$"
)
# "app/x.py:3: error: ...", "todo: error: unrecognized arguments", "fatal: ...", "npm ERR! ..."
_ERROR_LINE = re.compile(r"(^|\s|:)(error|fatal|npm ERR!|panic)(:|\s)", re.I)
# A Python frame: 'File "/x/y.py", line 3, in f' or pytest's "x/y.py:38: in main"
_PY_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_PYTEST_FRAME = re.compile(r"^(\S+\.py):(\d+): (?:in (\S+)|([A-Z]\w*))$")
# "path.py:18: SomeWarning: message" (a warning or error with its category)
_DIAGNOSTIC = re.compile(r"^\s*(\S+:\d+): ([A-Z]\w*): (.+)$")
_GREP_HIT = re.compile(r"^(\.?/?[\w./\-]+:)?\d+:")
_NUMBERED = re.compile(r"^\s*\d+(\t| \| )")
# A line of code or of a repr, not a message: "> raise X", "status = 2, message = ..."
_CODE = re.compile(r"^(>|\w+ = |\w+\.\w+\(|(raise|return|except|if|def|class) )")
_DECISION = re.compile(
    r"\b(decision|decided?|decide|plan|instead|because|root cause|the fix|fixed|finding|found|"
    r"conclusion|note|so |therefore|will not|won't|leave)\b",
    re.I,
)
_READS = re.compile(r"read|open|view|cat|show|get_file|fetch", re.I)
_WRITES = re.compile(r"edit|write|create|patch|replace|apply|insert|delete|rename|move", re.I)
_SEARCHES = re.compile(r"grep|search|find|glob|rg|ls|list", re.I)
_PATH_KEYS = ("path", "file_path", "filename", "file", "target", "notebook_path")
_COMMAND_KEYS = ("command", "cmd", "script", "code")
_PATTERN_KEYS = ("pattern", "query", "regex", "glob")
_LINE_CHARS = 220
_HEAD_CHARS = 160
_MIN_BUDGET = 160
_ESSENTIAL_MIN = 1024
_ESSENTIAL_MAX = 8192
_ESSENTIAL_RANK = 2


@attrs.define
class _Message:
    index: int
    role: str
    lines: list[str]
    call: tuple[str, str] | None = None  # the tool call a result answers: (name, arguments)


@attrs.frozen
class _Candidate:
    rank: int
    index: int
    order: int
    text: str
    header: str = ""  # the action line this fact belongs under ("" for none)


def digest(text: str, max_bytes: int | None = None) -> str:
    """The facts of ``text`` (rendered transcript units), most important first, printed in
    order, in about ``max_bytes`` bytes of JSON string (default: a tenth of the text, at
    least 1 KiB). The essential facts (ranks 1 and 2) may exceed it, up to a quarter of the
    text (at least 1 KiB, at most 8 KiB)."""
    size = len(text.encode("utf-8"))
    budget = max_bytes if max_bytes is not None else max(1024, size // 10)
    budget = max(budget, _MIN_BUDGET)
    messages = _parse(text)
    tail = f"({len(messages)} messages, {size} bytes before compaction)"
    # Failures, errors, frames, changed files and decisions are kept beyond the budget, up
    # to a quarter of the text (at least 1 KiB, at most 8 KiB): they are what the agent acts
    # on next. (A summary no smaller than its text is refused, and the text kept whole.)
    essential = max(budget, min(_ESSENTIAL_MAX, max(_ESSENTIAL_MIN, size // 4)))
    chosen = _choose(list(_candidates(messages)), budget - _cost(tail), essential)
    return _render(chosen, tail)


# ---- parsing the rendered text --------------------------------------------------------------


def _parse(text: str) -> list[_Message]:
    messages: list[_Message] = []
    pending_calls: list[tuple[str, str]] = []
    for line in text.splitlines():
        head = _MESSAGE.match(line)
        call = _CALL.match(line)
        if head:
            message = _Message(int(head.group(1)), head.group(2), [line[head.end() :]])
            if message.role == "assistant":
                pending_calls = []
            elif message.role == "tool" and pending_calls:
                message.call = pending_calls.pop(0)
            messages.append(message)
        elif call:
            pending_calls.append((call.group(2), call.group(3)))
            if messages:
                messages[-1].lines.append("")  # calls end the assistant's own words
                messages[-1].call = messages[-1].call or (call.group(2), call.group(3))
        elif messages:
            messages[-1].lines.append(line)
    return messages


def _arguments(raw: str) -> dict[str, object]:
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _first(arguments: dict[str, object], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


# ---- candidates -------------------------------------------------------------------------------


def _candidates(messages: list[_Message]) -> Iterator[_Candidate]:
    reads: dict[str, tuple[int, int]] = {}  # path -> (last message, lines), in reading order
    for message in messages:
        read = _read_path(message)
        if read:
            reads.pop(read, None)
            reads[read] = (message.index, len(message.lines))
        elif message.role == "tool":
            yield from _tool_result(message)
        elif message.role == "assistant":
            yield from _assistant(message)
        elif message.role == "user":
            said = " ".join(line.strip() for line in message.lines if line.strip())
            yield _Candidate(1, message.index, 0, f"[{message.index}] user: {_clip(said, 400)}")
    if reads:
        listed = ", ".join(f"{path} ({lines} lines)" for path, (_, lines) in reads.items())
        last = max(index for index, _ in reads.values())
        yield _Candidate(2, last, 0, f"[{last}] files read: {_clip(listed, 600)}")


def _read_path(message: _Message) -> str:
    """The file a tool result shows, when the call read one (not a command)."""
    if message.role != "tool" or message.call is None:
        return ""
    name, raw = message.call
    arguments = _arguments(raw)
    if not _READS.search(name) or _first(arguments, _COMMAND_KEYS):
        return ""
    return _first(arguments, _PATH_KEYS)


def _assistant(message: _Message) -> Iterator[_Candidate]:
    words = " ".join(line.strip() for line in message.lines if line.strip())
    if not words:
        return
    sentences = re.split(r"(?<=[.!?])\s+", words)
    decisive = [s for s in sentences if _DECISION.search(s)]
    prefix = f"[{message.index}] assistant: "
    if decisive:
        yield _Candidate(2, message.index, 0, prefix + _clip(" ".join(decisive), 400))
        rest = [s for s in sentences if s not in decisive]
        if rest and not message.call:
            yield _Candidate(4, message.index, 1, prefix + _clip(rest[0], _HEAD_CHARS))
    elif not message.call:  # a note before a tool call says little the call does not
        yield _Candidate(4, message.index, 0, prefix + _clip(sentences[0], _HEAD_CHARS))


def _tool_result(message: _Message) -> Iterator[_Candidate]:
    name, raw = message.call or ("tool", "")
    arguments = _arguments(raw)
    body = message.lines
    exit_code = _exit_code(body)
    path = _first(arguments, _PATH_KEYS)
    command = _first(arguments, _COMMAND_KEYS)
    pattern = _first(arguments, _PATTERN_KEYS)
    lines = [line for line in body if line.strip()]
    where = f"[{message.index}] "
    if command:
        action = f"{where}{name} `{_clip(command, _HEAD_CHARS)}`"
        if exit_code is not None:
            action += f" -> exit {exit_code}"
        rank = 3
    elif path and _WRITES.search(name):
        action, rank = f"{where}{name} {path}", 2
    else:
        target = " ".join(filter(None, (pattern, path)))
        action, rank = f"{where}{name} {_clip(target, _HEAD_CHARS)}".rstrip(), 4
    yield _Candidate(rank, message.index, 0, action)
    if (_READS.search(name) and not command) or _is_source(lines):
        return  # code the agent read: its "error" lines are code, not outcomes
    yield from _outcomes(message.index, lines, action)
    hits = [line for line in lines if _GREP_HIT.match(line)]
    if hits and len(hits) >= len(lines) // 2:
        for order, hit in enumerate(hits[:3], start=1):
            yield _Candidate(
                4, message.index, 100 + order, "  " + _clip(hit.strip(), _LINE_CHARS), action
            )
        if len(hits) > 3:
            yield _Candidate(4, message.index, 104, f"  ({len(hits)} hits)", action)


def _outcomes(index: int, lines: list[str], action: str) -> Iterator[_Candidate]:
    """Failures, errors, warnings and the last frames of tracebacks in a command's output."""
    frames: list[tuple[int, str]] = []  # (line number, frame) of the current traceback
    for number, line in enumerate(lines, start=1):
        stripped = line.strip().strip("_=!-*# ")  # pytest's and make's section rulers
        order = number
        frame = _frame(line)
        if frame:
            frames.append((number, frame))
            if frame.endswith(_RAISED):  # pytest's "x.py:54: AssertionError" ends a failure
                yield from _last_frames(index, frames, action)
                frames = []
            continue
        exception = _EXCEPTION.match(stripped)
        diagnostic = _DIAGNOSTIC.match(line)
        if _TEST_RESULT.match(stripped) or _TEST_TOTALS.match(stripped):
            yield _Candidate(1, index, order, "  ! " + _clip(stripped, _LINE_CHARS), action)
        elif diagnostic:
            follow = _continuation(lines, number)
            text = f"{diagnostic.group(2)}: {diagnostic.group(3)}{follow} ({diagnostic.group(1)})"
            yield _Candidate(2, index, order, "  ! " + _clip(text, _LINE_CHARS), action)
        elif exception:
            text = _EXCEPTION_PREFIX.sub("", stripped) + _continuation(lines, number)
            yield _Candidate(1, index, order, "  ! " + _clip(text, _LINE_CHARS), action)
            yield from _last_frames(index, frames, action)
            frames = []
        elif _ERROR_LINE.search(stripped) and _indent(line) < 4 and not _CODE.match(stripped):
            yield _Candidate(1, index, order, "  ! " + _clip(stripped, _LINE_CHARS), action)
    yield from _last_frames(index, frames, action)


_EXCEPTION_PREFIX = re.compile(r"^E\s+")


_RAISED = ("Error", "Exception", "Exit", "Interrupt", "Failure", "Warning")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _frame(line: str) -> str:
    python = _PY_FRAME.match(line)
    if python:
        return f'{python.group(1)}", line {python.group(2)}, in {python.group(3)}'
    pytest = _PYTEST_FRAME.match(line.strip())
    if pytest:
        return f"{pytest.group(1)}:{pytest.group(2)}: " + (
            f"in {pytest.group(3)}" if pytest.group(3) else str(pytest.group(4))
        )
    return ""


def _last_frames(index: int, frames: list[tuple[int, str]], action: str) -> Iterator[_Candidate]:
    """The traceback's last frame, and its last frame in the project's own files."""
    if not frames:
        return
    own = [f for f in frames if not _library(f[1])]
    picked = {frames[-1], *own[-1:]}
    for number, frame in sorted(picked):
        yield _Candidate(2, index, number, "  at " + _clip(frame, _LINE_CHARS), action)


def _library(frame: str) -> bool:
    return bool(re.search(r"site-packages|dist-packages|/lib/python\d|^<|^/usr/", frame))


def _continuation(lines: list[str], number: int) -> str:
    """The next line when a message ends with ':' (its detail is on the following line)."""
    if lines[number - 1].rstrip().endswith(":") and number < len(lines):
        return " " + lines[number].strip()
    return ""


def _exit_code(body: list[str]) -> int | None:
    for line in reversed(body[-3:]):
        found = _EXIT.match(line.strip())
        if found:
            return int(found.group(1))
    return None


def _is_source(lines: list[str]) -> bool:
    """Output that is mostly numbered lines of a file (``cat -n``, a viewer)."""
    return len(lines) >= 5 and sum(bool(_NUMBERED.match(line)) for line in lines) > len(lines) / 2


# ---- choosing within the budget ---------------------------------------------------------------


def _cost(line: str) -> int:
    """Bytes ``line`` adds to a JSON string, with its newline."""
    return len(json.dumps(line, ensure_ascii=False).encode("utf-8")) - 2 + 2


def _choose(candidates: list[_Candidate], budget: int, essential: int) -> list[_Candidate]:
    seen: set[str] = set()
    unique: list[_Candidate] = []
    # The latest occurrence of a repeated fact is the one kept (the state the agent left).
    for candidate in sorted(candidates, key=lambda c: (-c.index, -c.order)):
        key = candidate.text.removeprefix("  ! ").removeprefix("  at ")
        if candidate.header and key in seen:
            continue
        seen.add(key)
        unique.append(candidate)
    ranked = sorted(unique, key=lambda c: (c.rank, -c.index, c.order))
    chosen: dict[tuple[int, int, str], _Candidate] = {}
    spent = 0
    headers = {c.text: c for c in unique if not c.header}
    for candidate in ranked:
        needed = [candidate]
        header = headers.get(candidate.header)
        if header is not None and _key(header) not in chosen:
            needed.append(header)
        cost = sum(_cost(c.text) for c in needed)
        if spent + cost > (budget if candidate.rank > _ESSENTIAL_RANK else essential):
            continue
        for item in needed:
            chosen[_key(item)] = item
        spent += cost
    return sorted(chosen.values(), key=lambda c: (c.index, c.order, c.text))


def _key(candidate: _Candidate) -> tuple[int, int, str]:
    return (candidate.index, candidate.order, candidate.text)


def _render(chosen: list[_Candidate], tail: str) -> str:
    return "\n".join([*(c.text for c in chosen), tail])


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
