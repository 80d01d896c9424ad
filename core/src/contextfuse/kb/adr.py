"""Architecture decision records the repository holds, imported as decisions.

ADR folders: ``docs/adr/``, ``docs/decisions/`` and ``adr/`` (at any depth below them).
Two formats are read: Nygard's (``# 1. Title``, ``Date:``, a ``## Status`` section whose
lines may say ``Supersedes [2. ...](0002-....md)`` or ``Superseded by ...``) and MADR's
(``* Status: accepted`` or YAML front matter ``status: superseded by [ADR-0005](...)``).

The import is incremental, like the rest of the index: it reads the ADR files' rows of the
index (already read, redacted and hashed) and re-imports only those whose hash changed.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from datetime import datetime, timezone

import attrs

from contextfuse.kb.compressed import stored_text
from contextfuse.kb.plans import index_text
from contextfuse.models import DecisionStatus, new_ulid, utc_now

__all__ = [
    "ADR_FOLDERS",
    "AdrRecord",
    "adr_number",
    "decision_links",
    "import_adrs",
    "is_adr_path",
    "parse_adr",
]

ADR_FOLDERS = ("docs/adr/", "docs/decisions/", "adr/")
_EXTENSIONS = (".md", ".markdown")
_NOT_RECORDS = re.compile(r"(readme|index|template|toc)", re.IGNORECASE)
_TITLE = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_NUMBERED_TITLE = re.compile(r"^(?:ADR[-\s]?)?\d+[.:)\-\s]+\s*", re.IGNORECASE)
_FIELD = re.compile(
    r"^\s*[*-]?\s*\**(status|date)\**\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE
)
_SECTION = re.compile(r"^##\s+(.+?)\s*$", re.MULTILINE)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_NUMBER_REF = re.compile(r"(?:ADR|#)[-\s]?0*(\d+)|\b0*(\d+)\.\s", re.IGNORECASE)
_LEADING_NUMBER = re.compile(r"^(?:adr[-_]?)?0*(\d+)", re.IGNORECASE)
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_STATUS_WORDS: dict[str, DecisionStatus] = {
    "proposed": "proposed",
    "draft": "proposed",
    "accepted": "accepted",
    "approved": "accepted",
    "adopted": "accepted",
    "rejected": "rejected",
    "declined": "rejected",
    "deprecated": "deprecated",
    "superseded": "superseded",
    "replaced": "superseded",
}


@attrs.frozen
class AdrRecord:
    """What one ADR file says: title, status, date, body and the ADRs it links.

    ``supersedes`` and ``superseded_by`` are references as written: link targets or numbers.
    """

    title: str
    status: DecisionStatus
    body: str
    date: datetime | None = None
    supersedes: tuple[str, ...] = ()
    superseded_by: tuple[str, ...] = ()


def is_adr_path(path: str) -> bool:
    """True for a Markdown file under an ADR folder that is not a README, index or template."""
    if not path.lower().endswith(_EXTENSIONS):
        return False
    if not any(path.startswith(folder) or f"/{folder}" in path for folder in ADR_FOLDERS):
        return False
    name = path.rsplit("/", 1)[-1]
    return not _NOT_RECORDS.search(name.rsplit(".", 1)[0])


def adr_number(path: str) -> int | None:
    """The number a file name starts with (``0005-use-x.md`` -> 5), if any."""
    found = _LEADING_NUMBER.match(path.rsplit("/", 1)[-1])
    return int(found.group(1)) if found else None


def _status(text: str) -> DecisionStatus:
    lowered = text.lower()
    if "superseded" in lowered or "replaced by" in lowered:
        return "superseded"
    for word in re.findall(r"[a-z]+", lowered):
        if word in _STATUS_WORDS:
            return _STATUS_WORDS[word]
    return "proposed"


def _references(text: str) -> tuple[str, ...]:
    """Link targets, else ADR numbers, named in ``text``."""
    links = [target for target in _LINK.findall(text) if not target.startswith("http")]
    if links:
        return tuple(dict.fromkeys(links))
    numbers = [a or b for a, b in _NUMBER_REF.findall(text)]
    return tuple(dict.fromkeys(n for n in numbers if n))


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end < 0:
        return {}, text
    fields: dict[str, str] = {}
    for line in text[3:end].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip().lower()] = value.strip().strip("\"'")
    return fields, text[end + 4 :].lstrip("\n")


def parse_adr(text: str, path: str = "") -> AdrRecord | None:
    """Read an ADR (Nygard or MADR); None when the file has no ``# Title`` heading."""
    fields, rest = _front_matter(text)
    heading = _TITLE.search(rest)
    if heading is None:
        return None
    title = _NUMBERED_TITLE.sub("", heading.group(1)).strip() or heading.group(1).strip()
    body = rest[heading.end() :].strip()
    status_text = fields.get("status", "")
    date_text = fields.get("date", "")
    for name, value in _FIELD.findall(body.split("\n## ", 1)[0]):
        if name.lower() == "status" and not status_text:
            status_text = value
        elif name.lower() == "date" and not date_text:
            date_text = value
    status_lines = status_text
    sections = list(_SECTION.finditer(body))
    for i, section in enumerate(sections):
        if section.group(1).strip().lower() == "status":
            end = sections[i + 1].start() if i + 1 < len(sections) else len(body)
            status_lines = f"{status_text}\n{body[section.end() : end].strip()}".strip()
            break
    supersedes: list[str] = []
    superseded_by: list[str] = []
    for line in status_lines.splitlines():
        lowered = line.lower()
        if "superseded by" in lowered or "replaced by" in lowered:
            superseded_by.extend(_references(line))
        elif "supersedes" in lowered or "replaces" in lowered:
            supersedes.extend(_references(line))
    found = _DATE.search(date_text)
    date = None
    if found:
        try:
            year, month, day = (int(part) for part in found.groups())
            date = datetime(year, month, day, tzinfo=timezone.utc)
        except ValueError:
            date = None
    return AdrRecord(
        title=title[:500],
        status=_status(status_lines.split("\n", 1)[0] if status_lines else ""),
        body=body,
        date=date,
        supersedes=tuple(dict.fromkeys(supersedes)),
        superseded_by=tuple(dict.fromkeys(superseded_by)),
    )


def decision_links(record: AdrRecord, path: str, ids: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(newer, older)`` decision ids of the supersession links ``record`` (at ``path``) states.

    ``ids`` maps every ADR file's path to its decision id; references to files not among
    them, and links of a decision to itself, are left out.
    """
    by_name = {p.rsplit("/", 1)[-1]: i for p, i in ids.items()}
    by_name.update(ids)
    by_number: dict[tuple[str, int], str] = {}
    for other, decision_id in ids.items():
        number = adr_number(other)
        if number is not None:
            by_number[(other.rsplit("/", 1)[0] if "/" in other else "", number)] = decision_id
    this = ids[path]

    def resolve(reference: str) -> str | None:
        folder = path.rsplit("/", 1)[0] if "/" in path else ""
        if reference.isdigit():
            return by_number.get((folder, int(reference)))
        name = reference.split("#", 1)[0].rsplit("/", 1)[-1]
        return by_name.get(f"{folder}/{name}") or by_name.get(name)

    links: list[tuple[str | None, str | None]] = [(this, resolve(r)) for r in record.supersedes]
    links += [(resolve(r), this) for r in record.superseded_by]
    return [(newer, older) for newer, older in links if newer and older and newer != older]


def import_adrs(conn: sqlite3.Connection, files: Mapping[str, str]) -> int:
    """Bring the ADR decisions in line with the indexed ADR files; returns how many changed.

    ``files`` maps every indexed path under an ADR folder to its sha256. Runs inside the
    caller's transaction (after the files are written).
    """
    adrs = {path: sha for path, sha in files.items() if is_adr_path(path)}
    stored = {
        source: (decision_id, sha)
        for decision_id, source, sha in conn.execute(
            "SELECT id, source, source_sha256 FROM plan_decisions WHERE source != ''"
        )
    }
    gone = [stored[source][0] for source in stored if source not in adrs]
    changed = [path for path, sha in adrs.items() if stored.get(path, ("", ""))[1] != sha]
    for decision_id in gone:
        conn.execute("DELETE FROM plan_decisions WHERE id = ?", (decision_id,))
        conn.execute("DELETE FROM plan_search WHERE id = ?", (decision_id,))
        conn.execute(
            "DELETE FROM plan_links WHERE origin = ? OR newer = ? OR older = ?",
            (decision_id, decision_id, decision_id),
        )
    if not changed:
        return len(gone)
    ids = {path: stored[path][0] if path in stored else new_ulid() for path in adrs}
    now = utc_now().isoformat()
    imported = 0
    for path in changed:
        row = conn.execute("SELECT content FROM files WHERE path = ?", (path,)).fetchone()
        record = parse_adr(stored_text(row[0]), path) if row else None
        decision_id = ids[path]
        conn.execute("DELETE FROM plan_decisions WHERE id = ?", (decision_id,))
        conn.execute("DELETE FROM plan_search WHERE id = ?", (decision_id,))
        conn.execute("DELETE FROM plan_links WHERE origin = ?", (decision_id,))
        if record is None:
            continue
        created = record.date.isoformat() if record.date else now
        conn.execute(
            "INSERT INTO plan_decisions (id, plan_id, title, body, status, source, "
            "source_sha256, created_at, updated_at) VALUES (?, NULL, ?, ?, ?, ?, ?, ?, ?)",
            (decision_id, record.title, record.body, record.status, path, adrs[path], created, now),
        )
        index_text(conn, decision_id, record.title, record.body)
        conn.executemany(
            "INSERT OR IGNORE INTO plan_links (newer, older, origin) VALUES (?, ?, ?)",
            [(newer, older, decision_id) for newer, older in decision_links(record, path, ids)],
        )
        imported += 1
    return imported + len(gone)
