"""SWE-bench Lite DEV quality in one process: fast iteration on selection and strategies.

Scores payloads exactly as ``shared/bench/swebench_eval.py`` does (its ``score``,
``present_anchors`` and ``relpath`` are imported), but assembles through the Python API with
one ``ContextAssembler`` per corpus, so a run pays no process start per call. The official
evaluator (command line, process start included) gives the figures that are reported; this
one tells quickly whether a change helps.

    python bench/swebench_quick.py ../shared/bench/swebench-lite-dev.jsonl \
        ~/.cache/swebench-corpora --strategy default --strategy simple-keyword \
        --repos psf/requests,pallets/flask
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

BUDGETS = (8000, 13000, 27000, 50000)


def _shared_bench(tasks_file: str) -> Any:
    sys.path.insert(0, str(Path(tasks_file).resolve().parent))
    import swebench_eval

    return swebench_eval


def _payload_view(payload: Any, root: str, ev: Any) -> tuple[set[str], dict[str, set[str]]]:
    shown: set[str] = set()
    full: dict[str, set[str]] = defaultdict(set)
    for fragment in payload.fragments:
        path = ev.relpath(fragment.provenance.resource_uri, root)
        if fragment.detail_depth >= 2:
            shown.add(path)
        if fragment.detail_depth == 9:
            full[path].update(line.strip() for line in fragment.content.splitlines())
    return shown, full


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks")
    parser.add_argument("corpora", help="corpus cache dir (materialize.py) or TSV")
    parser.add_argument(
        "--strategy", action="append", help="'default', a strategy, or several joined by +"
    )
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--repos", help="comma-separated repos to keep")
    parser.add_argument("--out", help="write per-task rows as JSON")
    args = parser.parse_args()

    from contextfuse.assembler import ContextAssembler

    ev = _shared_bench(args.tasks)
    import bm25_baseline as bm25

    with open(args.tasks) as fh:
        tasks = [json.loads(line) for line in fh if line.strip()]
    if args.repos:
        tasks = [t for t in tasks if t["repo"] in args.repos.split(",")]
    dirs = bm25.corpus_dirs(tasks, args.corpora)
    budgets = [int(b) for b in args.budgets.split(",")]
    strategies = args.strategy or ["default"]
    by_dir: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for task in tasks:
        by_dir[dirs[task["instance_id"]]].append(task)

    rows: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    started = time.time()
    for root, group in by_dir.items():
        assembler = ContextAssembler(root)
        assembler.refresh()
        for task in group:
            anchors = ev.present_anchors(task, root)
            for name in strategies:
                chosen = None if name == "default" else name.split("+")
                for budget in budgets:
                    t0 = time.perf_counter()
                    payload = assembler.assemble(
                        task["problem_statement"], budget, strategies=chosen
                    )
                    seconds = time.perf_counter() - t0
                    shown, full = _payload_view(payload, root, ev)
                    row = ev.score(task, shown, full, anchors)
                    row.update(
                        instance_id=task["instance_id"],
                        seconds=seconds,
                        use=payload.total_tokens / budget,
                        over=payload.total_tokens > budget,
                    )
                    rows[(name, budget)].append(row)
        assembler.backends.nodes.close()
        print(
            f"[{time.time() - started:.0f}s] {Path(root).name}: {len(group)} task(s)",
            file=sys.stderr,
            flush=True,
        )

    summary: dict[str, dict[str, Any]] = {}
    print("| selection | budget | all | lines | use | p50 ms | over |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (name, budget), found in rows.items():
        n = len(found)
        lines = [r["lines"] for r in found if r["lines"] is not None]
        s = summary[f"{name}@{budget}"] = {
            "n": n,
            "all": round(100 * sum(r["hits"] == r["n_gold"] for r in found) / n, 1),
            "lines": round(100 * statistics.mean(lines), 1) if lines else 0.0,
            "use": round(statistics.mean(r["use"] for r in found), 3),
            "p50_ms": round(1000 * statistics.median(r["seconds"] for r in found)),
            "over": sum(r["over"] for r in found),
        }
        print(
            f"| {name} | {budget} | {s['all']} | {s['lines']} | {s['use']} | {s['p50_ms']} "
            f"| {s['over']} |"
        )
    if args.out:
        with open(args.out, "w") as fh:
            rows_out = {f"{k[0]}@{k[1]}": v for k, v in rows.items()}
            json.dump({"summary": summary, "tasks": rows_out}, fh, indent=1)


if __name__ == "__main__":
    main()
