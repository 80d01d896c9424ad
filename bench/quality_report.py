"""Measure context quality and write docs/benchmarks.md from what the runs printed.

Three runs, each a script of its own whose JSON this one reads:

1. ``shared/bench/materialize.py``: the SWE-bench Lite DEV corpora (PyPI sdists, cached).
2. ``bench/swebench_quick.py``: every DEV task at 8k, 13k, 27k and 50k tokens for the default
   selection and each repository strategy alone, in one process.
3. ``bench/questions_eval.py``: the plain-English questions (``bench/questions.jsonl``) over
   projects in four languages, with BM25 over chunks as the reference.

    python bench/quality_report.py --shared ../shared/bench

``--skip-runs`` rebuilds the page from the JSON files of an earlier run. The official
evaluator (``shared/bench/swebench_eval.py``, command line with process start, BM25 references
in the same run) is slower; its figures for the default selection go in by ``--official
REPORT.json`` when a run of it exists.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STRATEGIES = ("arce", "breadth-depth-navigator", "semantic-embedding", "simple-keyword")
#: Several strategies fused, to show that fusion never loses to the best of them alone.
FUSED = ("arce+breadth-depth-navigator+semantic-embedding+simple-keyword",)
BUDGETS = (8000, 13000, 27000, 50000)


def _run(argv: list[str]) -> None:
    print("$", " ".join(argv), file=sys.stderr, flush=True)
    subprocess.run(argv, check=True)


def _swebench_table(summary: dict[str, Any], selections: list[str]) -> list[str]:
    lines = [
        "| selection | " + " | ".join(f"{b // 1000}k all / lines" for b in BUDGETS) + " | use 8k |",
        "|---|" + "---:|" * (len(BUDGETS) + 1),
    ]
    for name in selections:
        cells = []
        for budget in BUDGETS:
            s = summary.get(f"{name}@{budget}")
            cells.append(f"{s['all']} / {s['lines']}" if s else "-")
        use = summary.get(f"{name}@{BUDGETS[0]}", {}).get("use", "-")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {use} |")
    return lines


def _questions_table(summary: dict[str, Any], selections: list[str]) -> list[str]:
    budgets = sorted({int(k.rsplit("@", 1)[1]) for k in summary})
    lines = [
        "| selection | " + " | ".join(f"{b // 1000}k defs / all" for b in budgets) + " |",
        "|---|" + "---:|" * len(budgets),
    ]
    for name in selections:
        cells = []
        for budget in budgets:
            s = summary.get(f"{name}@{budget}")
            cells.append(f"{s['defs']} / {s['all']}" if s else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--corpora", type=Path, default=Path.home() / ".cache/swebench-corpora")
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--official", type=Path, help="a swebench_eval.py --out report")
    parser.add_argument("--skip-runs", action="store_true")
    args = parser.parse_args()
    args.results.mkdir(parents=True, exist_ok=True)
    tasks = args.shared / "swebench-lite-dev.jsonl"
    swe_json = args.results / "swebench-dev.json"
    questions_json = args.results / "questions.json"
    selections = ["default", *STRATEGIES, *FUSED]
    if not args.skip_runs:
        tsv = args.results / "corpora-dev.tsv"
        with tsv.open("w") as out:
            subprocess.run(
                [
                    sys.executable,
                    str(args.shared / "materialize.py"),
                    str(tasks),
                    str(args.corpora),
                ],
                check=True,
                stdout=out,
            )
        strategy_args = [a for name in selections for a in ("--strategy", name)]
        _run(
            [
                sys.executable,
                str(ROOT / "bench/swebench_quick.py"),
                str(tasks),
                str(tsv),
                *strategy_args,
                "--out",
                str(swe_json),
            ]
        )
        _run([sys.executable, str(ROOT / "bench/questions_fetch.py")])
        _run(
            [
                sys.executable,
                str(ROOT / "bench/questions_eval.py"),
                *strategy_args,
                "--out",
                str(questions_json),
            ]
        )
    swe = json.loads(swe_json.read_text())["summary"]
    questions = json.loads(questions_json.read_text())["summary"]["by_selection"]
    page = [
        "# Benchmarks",
        "",
        "Every figure on this page was printed by a script in `bench/`; the commands that",
        "reproduce them are given with each table. Machine: 2 cores, shared with other work.",
        "",
        "## SWE-bench Lite DEV (63 real issues, 8 Python repositories)",
        "",
        "`all`: share of tasks whose edited file is in the payload (depth >= 2); `lines`: share",
        "of the fix's lines shown at full source. Default selection, each strategy alone and",
        "all four fused (`a+b`), in one process (`bench/swebench_quick.py`, scored with the",
        "shared evaluator's code):",
        "",
        *_swebench_table(swe, selections),
        "",
        "```bash",
        "python bench/quality_report.py --shared ../shared/bench",
        "```",
        "",
    ]
    if args.official:
        report = json.loads(args.official.read_text())["summary"]["budgets"]
        page += [
            "The official evaluator (`shared/bench/swebench_eval.py`: the command line, process",
            "start included, with the BM25 references computed in the same run), default",
            "selection:",
            "",
            "| budget | all | lines | BM25 files all | BM25 chunks all / lines | p50 s | over |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for budget, row in report.items():
            s, base, chunks = row["system"], row["bm25"], row["chunks"]
            page.append(
                f"| {budget} | {s['all']} | {s['lines']} | {base['all']} | "
                f"{chunks['all']} / {chunks['lines']} | {s.get('p50_s')} | {s.get('over')} |"
            )
        page += [
            "",
            "```bash",
            "python ../shared/bench/swebench_eval.py ../shared/bench/swebench-lite-dev.jsonl \\",
            "    ~/.cache/swebench-corpora --out report.json",
            "```",
            "",
        ]
    page += [
        "## Plain-English questions (40 questions, 7 projects, Python, JavaScript, Go, Rust)",
        "",
        "Questions that name no identifier, file or path, each with the definitions a good",
        "answer must show (`bench/questions.jsonl`). `defs`: share of those definitions shown at",
        "full source; `all`: share of questions with every one shown. `bm25-chunks` is the",
        "reference: BM25 over code chunks filling the same budget.",
        "",
        *_questions_table(questions, [*selections, "bm25-chunks"]),
        "",
        "```bash",
        "python bench/questions_fetch.py && python bench/questions_eval.py",
        "```",
        "",
    ]
    target = ROOT / "docs" / "benchmarks.md"
    # Sections other benchmarks write (bench_compaction_facts.py) stay as they are.
    others = target.read_text(encoding="utf-8").partition("\n## Compaction")
    target.write_text("\n".join(page) + (others[1] + others[2] if others[1] else ""))
    print(f"wrote {ROOT / 'docs' / 'benchmarks.md'}", file=sys.stderr)


if __name__ == "__main__":
    main()
