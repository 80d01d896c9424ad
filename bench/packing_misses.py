"""Why a gold definition of the question set is not shown at full source: one line per miss.

For every question of ``questions.jsonl`` (see ``questions_eval.py``) and one budget, this
assembles with the default selection, watches the default packer's run, and for each gold
definition not shown at full source says:

  rank     the position of the node that holds the definition among the packer's candidates
           (best first; the smallest candidate whose source covers half the definition), or
           ``-`` when no candidate holds it (a retrieval miss, not a packing one); then its
           position in the packer's relevance order (score and file evidence) and in its
           value-per-token order;
  tokens   that node's full-source tokens, and its kind;
  why      the packer's word on it (did not fit, already shown...), or the depth it got;
  above    the biggest pieces the packer chose before reaching it (tokens, depth, node).

Then a summary of the misses by cause, and of what the budget bought above them.

    python bench/packing_misses.py --budget 8000 [--repos zod-4.1.12] [--out misses.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from questions_eval import (
    DEFAULT_CACHE,
    DEFAULT_QUESTIONS,
    FULL_SOURCE,
    LOCATION,
    Gold,
    Question,
    fragment_pieces,
    load_questions,
    shows,
)

from contextfuse.assembler import ContextAssembler
from contextfuse.components.fusion import policy_packer
from contextfuse.kb import index

ABOVE_SHOWN = 4  # the biggest pieces chosen above a miss, listed


class _Watch:
    """Keeps the last ``_PolicyRun`` of the default packer."""

    def __init__(self) -> None:
        self.run: Any = None
        original = policy_packer._PolicyRun.run
        watch = self

        def run(self: Any) -> Any:
            watch.run = self
            return original(self)

        policy_packer._PolicyRun.run = run  # type: ignore[method-assign]


def _span(fragment: Any) -> tuple[int, int] | None:
    found = LOCATION.fullmatch(fragment.provenance.location or "")
    return (int(found[1]), int(found[2])) if found else None


def _full_span(run: Any, item: Any) -> tuple[tuple[int, int] | None, int]:
    """The node's full-source span and tokens (its resolved rendering or an alternative)."""
    fragment = item.fragment
    if fragment.detail_depth != FULL_SOURCE:
        for alt in run.alternatives.get(fragment.uko_node, ()):
            if alt.detail_depth == FULL_SOURCE:
                fragment = alt
                break
    return _span(fragment), fragment.token_count


def _holder(run: Any, gold: Gold, prefix: str) -> tuple[int, Any, int] | None:
    """(rank, item, full tokens) of the smallest candidate holding ``gold``."""
    uri = prefix + gold.path
    best = None
    for rank, item in enumerate(run.candidates, 1):
        if item.fragment.provenance.resource_uri != uri:
            continue
        span, tokens = _full_span(run, item)
        if span is None:
            continue
        covered = max(0, min(span[1], gold.last) - max(span[0], gold.first) + 1)
        if 2 * covered < gold.last - gold.first + 1:
            continue
        size = span[1] - span[0]
        if best is None or size < best[0]:
            best = (size, rank, item, tokens)
    return None if best is None else best[1:]


def _short(node: str, prefix: str) -> str:
    return node[len(prefix) :] if node.startswith(prefix) else node


def diagnose(
    assembler: ContextAssembler, watch: _Watch, question: Question, budget: int
) -> list[dict[str, Any]]:
    project = assembler.backends.nodes.project
    prefix = f"project://{project}/"
    payload = assembler.assemble(question.text, budget)
    pieces = fragment_pieces(payload, project)
    run = watch.run
    order = {item.uko_node: n for n, item in enumerate(run._code_order(), 1)}
    by_value = {item.uko_node: n for n, item in enumerate(run._value_per_token_order(), 1)}
    chosen = {s.uko_node: s for s in run.chosen}
    out = []
    for gold in question.gold:
        if shows(gold, pieces):
            continue
        miss: dict[str, Any] = {
            "repo": question.repo,
            "question": question.text,
            "gold": f"{gold.path} {gold.symbol} L{gold.first}-L{gold.last}",
            "gold_lines": gold.last - gold.first + 1,
        }
        held = _holder(run, gold, prefix)
        if held is None:
            miss["cause"] = "not a candidate"
            out.append(miss)
            continue
        rank, item, tokens = held
        node = item.uko_node
        miss.update(
            rank=rank,
            code_rank=order.get(node),
            value_rank=by_value.get(node),
            node=_short(node, prefix),
            kind=item.fragment.metadata.get("kind", ""),
            tokens=tokens,
            resolved_depth=item.fragment.detail_depth,
            score=round(item.score, 4),
            top_score=round(run.top, 4),
        )
        if node in chosen:
            depth = chosen[node].fragment.detail_depth
            miss["cause"] = f"shown at depth {depth}"
            miss["why"] = run.notes.get(node, "")
        else:
            miss["cause"] = run.left_out.get(node, "not reached")
        # What was chosen before it in either order (and every header and map outline).
        position = order.get(node, len(order) + 1)
        value_position = by_value.get(node, len(by_value) + 1)
        above = [
            s
            for s in run.chosen
            if order.get(s.uko_node, 0) < position or by_value.get(s.uko_node, 0) < value_position
        ]
        miss["above_tokens"] = sum(s.token_count for s in above)
        miss["above"] = [
            (s.token_count, s.fragment.detail_depth, _short(s.uko_node, prefix))
            for s in sorted(above, key=lambda s: -s.token_count)[:ABOVE_SHOWN]
        ]
        miss["used"] = run.used
        out.append(miss)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--repos", help="comma-separated cache folder names to keep")
    parser.add_argument("--out", type=Path, help="write the misses as JSON")
    args = parser.parse_args()
    questions = load_questions(args.questions)
    if args.repos:
        questions = [q for q in questions if q.repo in args.repos.split(",")]
    by_repo: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        by_repo[q.repo].append(q)
    watch = _Watch()
    misses: list[dict[str, Any]] = []
    for repo, group in by_repo.items():
        root = args.cache / repo
        with tempfile.TemporaryDirectory(prefix="packing-misses-") as index_dir:
            index(root, index_dir=index_dir)
            assembler = ContextAssembler(root, index_dir=index_dir)
            try:
                for q in group:
                    misses += diagnose(assembler, watch, q, args.budget)
            finally:
                assembler.backends.nodes.close()
        print(f"{repo}: done", file=sys.stderr, flush=True)
    for m in misses:
        print(f"\n{m['repo']}: {m['question']}\n  miss {m['gold']} ({m['gold_lines']} lines)")
        if "rank" not in m:
            print(f"  {m['cause']}")
            continue
        print(
            f"  node {m['node']} [{m['kind']}] rank {m['rank']} (relevance order "
            f"{m['code_rank']}, value order {m['value_rank']}), "
            f"{m['tokens']} tokens, resolved depth {m['resolved_depth']}, "
            f"score {m['score']} of {m['top_score']}: {m['cause']} {m.get('why', '')}"
        )
        print(f"  above it: {m['above_tokens']} of {m['used']} tokens; biggest:")
        for tokens, depth, node in m["above"]:
            print(f"    {tokens:6d} d{depth} {node}")
    causes = Counter(m["cause"] for m in misses)
    print(f"\n{len(misses)} misses at {args.budget}:")
    for cause, n in causes.most_common():
        print(f"  {n:4d} {cause}")
    if args.out:
        args.out.write_text(json.dumps(misses, indent=1))


if __name__ == "__main__":
    main()
