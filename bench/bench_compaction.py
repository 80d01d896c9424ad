"""Compaction with the offline provider on generated tool-heavy transcripts.

For each transcript size (messages), runs the selective-compaction flow (decision policy and
summary policy both ``{"providers": ["offline"]}``) and the single-summary flow, and prints
bytes in and out, the ratio achieved against the target, protected bytes, fragments by
action, limit reasons and the median wall time of ``--rounds`` runs. A selective call
classifies at most 128 fragments, so for long transcripts it also prints the ratio reached
by compacting the output again (as an agent would on its next turn), pass after pass, until
the target is met or a pass changes nothing (at most ``--passes``).

    python bench/bench_compaction.py
    python bench/bench_compaction.py --sizes 100,500,2000 --target 0.1 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from contextfuse.compaction import CompactRequest, collect_providers, compact
from contextfuse.compaction.transcript import json_bytes

sys.path.insert(0, str(Path(__file__).parent))
from transcripts import transcript

OFFLINE = {"providers": ["offline"]}


def measure(request: CompactRequest, rounds: int) -> tuple[dict[str, Any], float]:
    providers = collect_providers(None)
    times = []
    result: dict[str, Any] = {}
    for _ in range(rounds):
        started = time.perf_counter()
        result = compact(request, providers)
        times.append(time.perf_counter() - started)
    return result, statistics.median(times)


def repeat(messages: list[dict[str, Any]], target: float, limit: int) -> tuple[int, float]:
    """Compact the output again until the original's target is met or nothing changes;
    returns the passes made and the final size over the original size."""
    providers = collect_providers(None)
    original = json_bytes(messages)
    current, passes = messages, 0
    while passes < limit:
        # Each pass aims at the same absolute size: the target of the original transcript.
        ratio = min(1.0, target * original / json_bytes(current))
        request = CompactRequest(
            messages=current, target_ratio=ratio, decision_policy_ir=OFFLINE, policy_ir=OFFLINE
        )
        result = compact(request, providers)
        passes += 1
        if result["messages"] == current:
            break
        current = result["messages"]
        if json_bytes(current) <= target * original:
            break
    return passes, json_bytes(current) / original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,250,500,1000,2000")
    parser.add_argument("--target", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=10)
    args = parser.parse_args()
    print(
        f"{'flow':<10} {'msgs':>5} {'bytes in':>10} {'bytes out':>10} {'ratio':>6} "
        f"{'target':>6} {'met':>4} {'protected':>10} {'time ms':>8}  actions / limits"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        messages = transcript(size, seed=size)
        for label, fields in (
            ("selective", {"decision_policy_ir": OFFLINE, "policy_ir": OFFLINE}),
            ("single", {"policy_ir": OFFLINE}),
        ):
            request = CompactRequest(messages=messages, target_ratio=args.target, **fields)
            result, seconds = measure(request, args.rounds)
            report = result["compaction"]
            actions = Counter(f["action"] for f in report["fragments"])
            limits = Counter(limit["reason"] for limit in report["limits"])
            repeated = ""
            if label == "selective" and not report["target_met"]:
                passes, ratio = repeat(messages, args.target, args.passes)
                repeated = f" after {passes} passes: ratio {ratio:.3f}"
            print(
                f"{label:<10} {size:>5} {report['original_bytes']:>10,} "
                f"{report['output_bytes']:>10,} {report['ratio']:>6.3f} {args.target:>6.2f} "
                f"{'yes' if report['target_met'] else 'no':>4} "
                f"{report['protected_bytes']:>10,} {seconds * 1000:>8.1f}  "
                f"{dict(actions)} {dict(limits) or ''}{repeated}"
            )


if __name__ == "__main__":
    main()
