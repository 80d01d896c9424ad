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
    python bench/bench_compaction_facts.py --target 0.2 --markdown
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=0.1)
    parser.add_argument("--markdown", action="store_true", help="print the docs' table")
    parser.add_argument("--lost", action="store_true", help="list the facts lost")
    args = parser.parse_args()
    records = [json.loads(p.read_text()) for p in sorted(FOLDER.glob("*.json"))]
    rows = [measure(r, flow, args.target) for r in records for flow in FLOWS]
    if args.markdown:
        print("| transcript | msgs | bytes | flow | facts kept | at risk kept | ratio | met |")
        print("|---|---:|---:|---|---:|---:|---:|---|")
    else:
        print(
            f"{'transcript':<20} {'msgs':>4} {'bytes':>7} {'flow':<9} {'kept':>7} "
            f"{'at risk':>7} {'ratio':>6} {'met':>4}  note"
        )
    for flow in FLOWS:
        for row in (r for r in rows if r["flow"] == flow):
            kept = f"{row['kept']}/{row['facts']}"
            risk = f"{row['risk_kept']}/{row['at_risk']}"
            met = "yes" if row["met"] else "no"
            if args.markdown:
                print(
                    f"| {row['kind']} | {row['messages']} | {row['bytes']:,} | {flow} | {kept} "
                    f"| {risk} | {row['ratio']:.3f} | {met} |"
                )
            else:
                print(
                    f"{row['kind']:<20} {row['messages']:>4} {row['bytes']:>7,} {flow:<9} "
                    f"{kept:>7} {risk:>7} {row['ratio']:>6.3f} {met:>4}  {row['note']}"
                )
            if args.lost and row["lost"]:
                print("    lost: " + " | ".join(row["lost"]))
        chosen = [r for r in rows if r["flow"] == flow]
        facts = sum(r["facts"] for r in chosen)
        risky = sum(r["at_risk"] for r in chosen)
        share = sum(r["kept"] for r in chosen) / facts
        risk_share = sum(r["risk_kept"] for r in chosen) / max(1, risky)
        met = sum(r["met"] for r in chosen)
        summary = (
            f"{flow}: facts kept {share:.0%} ({risk_share:.0%} of those at risk), target met "
            f"{met}/{len(chosen)}"
        )
        print(
            f"| **all** | | | {flow} | {share:.0%} | {risk_share:.0%} | | {met}/{len(chosen)} |"
            if args.markdown
            else summary
        )


if __name__ == "__main__":
    main()
