"""The repository's architecture decision records, imported as decisions of the project.

The same import as the SQLite store's (``contextfuse.kb.adr``: which files are ADRs, how
they are read, how their links resolve), written to the plan tables: incremental by the
files' hashes, inside the index run's transaction.
"""

from __future__ import annotations

from typing import Any

from contextfuse.kb.adr import ADR_FOLDERS, decision_links, is_adr_path, parse_adr
from contextfuse.kb.compressed import stored_text
from contextfuse.models import new_ulid, utc_now
from contextfuse_postgres.plans import plan_search_vector

__all__ = ["import_adrs"]


def _forget(conn: Any, project: str, decision_id: str) -> None:
    conn.execute(
        "DELETE FROM cf_plan_decisions WHERE project = %s AND id = %s", (project, decision_id)
    )
    conn.execute(
        "DELETE FROM cf_plan_links WHERE project = %s AND origin = %s", (project, decision_id)
    )


def import_adrs(conn: Any, project: str) -> int:
    """Bring the project's ADR decisions in line with its indexed ADR files.

    Returns how many were imported, updated or removed.
    """
    patterns = [f"%{folder}%" for folder in ADR_FOLDERS]
    adrs = {
        str(path): str(sha)
        for path, sha in conn.execute(
            "SELECT path, sha256 FROM cf_files WHERE project = %s AND path LIKE ANY(%s)",
            (project, patterns),
        ).fetchall()
        if is_adr_path(str(path))
    }
    stored = {
        str(source): (str(decision_id), str(sha))
        for decision_id, source, sha in conn.execute(
            "SELECT id, source, source_sha256 FROM cf_plan_decisions"
            " WHERE project = %s AND source != ''",
            (project,),
        ).fetchall()
    }
    gone = [stored[source][0] for source in stored if source not in adrs]
    for decision_id in gone:
        _forget(conn, project, decision_id)
        conn.execute(
            "DELETE FROM cf_plan_links WHERE project = %s AND (newer = %s OR older = %s)",
            (project, decision_id, decision_id),
        )
    changed = [path for path, sha in adrs.items() if stored.get(path, ("", ""))[1] != sha]
    if not changed:
        return len(gone)
    ids = {path: stored[path][0] if path in stored else new_ulid() for path in adrs}
    now = utc_now().isoformat()
    imported = 0
    for path in changed:
        row = conn.execute(
            "SELECT content, cold FROM cf_files WHERE project = %s AND path = %s", (project, path)
        ).fetchone()
        record = parse_adr(stored_text(row[0] if row[1] is None else row[1]), path) if row else None
        decision_id = ids[path]
        _forget(conn, project, decision_id)
        if record is None:
            continue
        created = record.date.isoformat() if record.date else now
        conn.execute(
            "INSERT INTO cf_plan_decisions (project, id, plan_id, title, body, status, source,"
            " source_sha256, created_at, updated_at, tsv) VALUES (%s, %s, NULL, %s, %s, %s, %s,"
            " %s, %s, %s, %s::tsvector)",
            (project, decision_id, record.title, record.body, record.status, path, adrs[path],
             created, now, plan_search_vector(record.title, record.body)),
        )  # fmt: skip
        for newer, older in decision_links(record, path, ids):
            conn.execute(
                "INSERT INTO cf_plan_links (project, newer, older, origin)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (project, newer, older, decision_id),
            )
        imported += 1
    return imported + len(gone)
