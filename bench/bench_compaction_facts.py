"""Facts a compacted transcript keeps, on recorded agent sessions of several kinds.

For each transcript of ``bench/agent_transcripts/`` (recorded by
``record_agent_transcripts.py``: debugging a failing test, a refactor, a feature, a dependency
upgrade, exploring a codebase) and each flow with the offline provider (``default``: the
single summary of ``contextfuse compact``; ``selective``: ``--selective``), prints the share
of the transcript's facts the output still shows (a fact is a string such as a failing test's
id, an error message, a traceback's last frame, a file the agent changed or a decision it
took), the same share among the facts that only the compacted part held (``at risk``: the
others sit in messages compaction never touches), the ratio reached against the target, and
why the target was missed when it was.

    python bench/bench_compaction_facts.py
    python bench/bench_compaction_facts.py --target 0.1 --target 0.2 --write  # the docs' table
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from contextfuse.compaction import CompactRequest, collect_providers, compact
from contextfuse.compaction.transcript import group_units

sys.path.insert(0, str(Path(__file__).parent))
from transcripts import plain_text

FOLDER = Path(__file__).parent / "agent_transcripts"
OFFLINE = {"providers": ["offline"]}
FLOWS: dict[str, dict[str, Any]] = {
    "default": {"policy_ir": OFFLINE},
    "selective": {"decision_policy_ir": OFFLINE, "policy_ir": OFFLINE},
}


def at_risk(messages: list[dict[str, Any]], facts: list[str]) -> list[str]:
    """The facts that no protected message holds (only compaction can lose them)."""
    units = group_units(messages, None, recent_units=4)
    kept = [messages[k] for u in units if u.protected for k in range(u.start, u.end)]
    text = plain_text(kept)
    return [fact for fact in facts if fact not in text]


def measure(record: dict[str, Any], flow: str, target: float) -> dict[str, Any]:
    messages, facts = record["messages"], record["facts"]
    request = CompactRequest(messages=messages, target_ratio=target, **FLOWS[flow])
    result = compact(request, collect_providers(None))
    report = result["compaction"]
    text = plain_text(result["messages"])
    risky = at_risk(messages, facts)
    return {
        "kind": record["kind"],
        "flow": flow,
        "messages": len(messages),
        "bytes": report["original_bytes"],
        "facts": len(facts),
        "kept": sum(fact in text for fact in facts),
        "at_risk": len(risky),
        "risk_kept": sum(fact in text for fact in risky),
        "lost": [fact for fact in facts if fact not in text],
        "ratio": report["ratio"],
        "met": report["target_met"],
        "note": report.get("target_note") or "",
    }


HEADING = "## Compaction: facts kept"


def table(rows: list[dict[str, Any]], target: float) -> list[str]:
    """A markdown table: per transcript, each flow's facts kept and ratio reached."""
    lines = [
        f"Target ratio {target}:",
        "",
        "| transcript | messages | bytes | flow | facts kept | of those at risk | ratio | met |",
        "|---|---:|---:|---|---:|---:|---:|---|",
    ]
    for flow in FLOWS:
        chosen = [r for r in rows if r["flow"] == flow]
        for row in chosen:
            lines.append(
                f"| {row['kind']} | {row['messages']} | {row['bytes']:,} | {flow} | "
                f"{row['kept']}/{row['facts']} | {row['risk_kept']}/{row['at_risk']} | "
                f"{row['ratio']:.3f} | {'yes' if row['met'] else 'no'} |"
            )
        total = _totals(chosen)
        lines.append(
            f"| **all** | | | {flow} | {total['share']:.0%} | {total['risk_share']:.0%} | | "
            f"{total['met']}/{len(chosen)} |"
        )
    return lines


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "share": sum(r["kept"] for r in rows) / max(1, sum(r["facts"] for r in rows)),
        "risk_share": sum(r["risk_kept"] for r in rows) / max(1, sum(r["at_risk"] for r in rows)),
        "met": sum(r["met"] for r in rows),
    }


def section(tables: list[list[str]], notes: list[str]) -> str:
    """The benchmarks page's compaction section."""
    lines = [
        HEADING,
        "",
        "Five agent sessions recorded for real (`bench/record_agent_transcripts.py`: every tool",
        "result is what pytest, python, grep or the file gave), each with the facts a summary",
        "must keep for the agent to carry on: failed tests, error messages, tracebacks' last",
        "frames, files changed, decisions and findings. `facts kept`: facts the compacted",
        "transcript still shows; `of those at risk`: the same among facts that only compacted",
        "messages held (the others sit in the system prompt, pinned user messages or the last",
        "four units, which compaction keeps whole). Offline provider, no model: `default` is",
        "`contextfuse compact`, `selective` is `contextfuse compact --selective`.",
        "",
    ]
    for rows in tables:
        lines += [*rows, ""]
    if notes:
        lines += ["Why a target was missed (`compaction.target_note`):", ""]
        lines += [f"- {note}" for note in notes]
        lines.append("")
    lines += [
        "```bash",
        "python bench/bench_compaction_facts.py --target 0.1 --target 0.2 --write",
        "```",
        "",
    ]
    return "\n".join(lines)


def write(page: Path, text: str) -> None:
    """Replace the page's compaction section (from its heading to the next one) with text."""
    old = page.read_text(encoding="utf-8")
    head, found, rest = old.partition(HEADING)
    after = ""
    if found:
        following = rest.find("\n## ")
        after = rest[following + 1 :] if following >= 0 else ""
    page.write_text(head.rstrip("\n") + "\n\n" + text + ("\n" + after if after else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, action="append", help="repeatable; default 0.1")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--lost", action="store_true", help="list the facts lost")
    args = parser.parse_args()
    records = [json.loads(p.read_text()) for p in sorted(FOLDER.glob("*.json"))]
    tables, notes = [], []
    for target in args.target or [0.1]:
        rows = [measure(r, flow, target) for r in records for flow in FLOWS]
        print(f"target {target}")
        print(
            f"{'transcript':<20} {'msgs':>4} {'bytes':>7} {'flow':<9} {'kept':>7} "
            f"{'at risk':>7} {'ratio':>6} {'met':>4}  note"
        )
        for row in sorted(rows, key=lambda r: (list(FLOWS).index(r["flow"]), r["kind"])):
            kept = f"{row['kept']}/{row['facts']}"
            risk = f"{row['risk_kept']}/{row['at_risk']}"
            print(
                f"{row['kind']:<20} {row['messages']:>4} {row['bytes']:>7,} {row['flow']:<9} "
                f"{kept:>7} {risk:>7} {row['ratio']:>6.3f} {'yes' if row['met'] else 'no':>4}  "
                f"{row['note']}"
            )
            if args.lost and row["lost"]:
                print("    lost: " + " | ".join(row["lost"]))
            if row["note"] and row["flow"] == "default":
                notes.append(f"{row['kind']}, {row['flow']}, target {target}: {row['note']}")
        for flow in FLOWS:
            total = _totals([r for r in rows if r["flow"] == flow])
            print(
                f"{flow}: facts kept {total['share']:.0%} ({total['risk_share']:.0%} of those "
                f"at risk), target met {total['met']}/{len(records)}"
            )
        tables.append(table(rows, target))
    if args.write:
        write(Path(__file__).parents[1] / "docs" / "benchmarks.md", section(tables, notes))


if __name__ == "__main__":
    main()
