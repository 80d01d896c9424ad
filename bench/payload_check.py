"""Fingerprints of the payloads of SWE-bench tasks, to show that a change kept them the same.

For each task (every ``--step``-th of the file, as ``bench_cli_latency.py`` picks them) and
each budget, assembles the issue text over the task's indexed repository through
``ContextAssembler`` and writes what a payload is made of: the fragments in order, each with
its node, location, depth and token count, the total, the preamble (its tokens and a hash
of its text), the strategies used and the payload hash. The indexes must exist
(``contextfuse index`` first): nothing is indexed or refreshed here, and nothing is
promoted to the hot tier, so another installation can run the same requests on the same
index state afterwards. ``--compare`` tells whether two runs'
files match and names the requests that differ.

    python bench/payload_check.py TASKS TSV --out /tmp/after.json
    /path/to/main/.venv/bin/python bench/payload_check.py TASKS TSV --out /tmp/before.json
    python bench/payload_check.py --compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any


def fingerprints(
    tasks: str, corpora: str, budgets: list[int], step: int, limit: int
) -> dict[str, Any]:
    """``{task: {budget: fingerprint}}`` of the selected tasks' payloads."""
    from contextfuse.assembler import ContextAssembler

    with open(tasks) as fh:
        chosen = [json.loads(line) for line in fh if line.strip()][::step][:limit]
    with open(corpora) as fh:
        dirs = dict(line.rstrip("\n").split("\t", 1) for line in fh if "\t" in line)
    found: dict[str, Any] = {}
    for task in chosen:
        name = task["instance_id"]
        with ContextAssembler(dirs[name]) as assembler:
            if not assembler.has_index():
                sys.exit(f"{dirs[name]}: index it first (`contextfuse index {dirs[name]}`)")
            found[name] = {}
            for budget in budgets:
                payload = assembler.assemble(task["problem_statement"], budget, promote=False)
                found[name][str(budget)] = {
                    "fragments": [
                        [f.uko_node, f.provenance.location, f.detail_depth, f.token_count]
                        for f in payload.fragments
                    ],
                    "total_tokens": payload.total_tokens,
                    "preamble_tokens": payload.preamble_tokens,
                    "preamble": hashlib.sha256((payload.preamble or "").encode()).hexdigest(),
                    "strategies_used": list(payload.strategies_used),
                    "context_hash": payload.context_hash,
                }
        print(f"{name}: {len(budgets)} payloads", file=sys.stderr)
    return found


def compare(before: dict[str, Any], after: dict[str, Any]) -> int:
    """Print the requests whose payloads differ; return how many do."""
    differ = 0
    requests = 0
    fragments = 0
    for task in sorted(set(before) | set(after)):
        for budget in sorted(set(before.get(task, {})) | set(after.get(task, {})), key=int):
            requests += 1
            one, two = before.get(task, {}).get(budget), after.get(task, {}).get(budget)
            fragments += len((one or {}).get("fragments", ()))
            if one != two:
                differ += 1
                print(f"differs: {task} at {budget} tokens")
    same = requests - differ
    print(f"{requests} requests, {fragments} fragments: {same} identical, {differ} differ")
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="?")
    parser.add_argument("corpora", nargs="?", help="TSV: instance_id, corpus dir")
    parser.add_argument("--budgets", default="8000,13000,27000,50000")
    parser.add_argument("--step", type=int, default=3)
    parser.add_argument("--limit", type=int, default=21)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        first, second = (json.loads(p.read_text()) for p in args.compare)
        sys.exit(1 if compare(first, second) else 0)
    if not (args.tasks and args.corpora and args.out):
        parser.error("TASKS, TSV and --out are needed (or --compare BEFORE AFTER)")
    budgets = [int(b) for b in args.budgets.split(",")]
    found = fingerprints(args.tasks, args.corpora, budgets, args.step, args.limit)
    args.out.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
