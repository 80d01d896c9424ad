"""Budget use at every budget: does the packer spend what it is given?

For a repository (e.g. the Django 4.1 sdist) and a few questions, assembles with the default
selection at budgets from 2k to 200k tokens and prints, per budget, the share of the budget
the payload uses (mean and worst), what ended the selection (``--explain``'s
``stopped_by``) and, as the reference measured in the same run, how much relevant content
the strategy offered: the full-source tokens of every candidate it ranked, relative to the
budget. A payload can only fill a budget when that reference is above 1.

    python bench/bench_budget_use.py /path/to/Django-4.1 [--budgets 2000,8000,50000,100000,200000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

QUESTIONS = (
    "how does the queryset prefetch related objects for a many to many relation",
    "where are the form field values cleaned and validation errors collected",
    "how does the url resolver match a path to a view with converters",
    "how are database migrations ordered and applied by the migration executor",
    "what happens when a template variable lookup fails in the template engine",
    "how does the csrf middleware check the token of a post request",
)
BUDGETS = (2000, 8000, 50_000, 100_000, 200_000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]

    from contextfuse.assembler import ContextAssembler

    with ContextAssembler(args.repo) as assembler:
        started = time.perf_counter()
        assembler.refresh()
        print(f"index ready in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        print(f"{len(QUESTIONS)} questions on {args.repo.name}, default selection")
        print("| budget | use mean | use min | offered / budget (reference) | stopped by |")
        print("|---:|---:|---:|---:|---|")
        for budget in budgets:
            uses: list[float] = []
            offered: list[float] = []
            stops: Counter[str] = Counter()
            for question in QUESTIONS:
                payload = assembler.assemble(question, budget, explain=True)
                explanation = payload.explanation or {}
                uses.append((payload.total_tokens + payload.preamble_tokens) / budget)
                stops[str(explanation.get("stopped_by", ""))] += 1
                offered.append(_offered(assembler, question) / budget)
            print(
                f"| {budget:,} | {statistics.mean(uses):.3f} | {min(uses):.3f} "
                f"| {statistics.median(offered):.1f} | "
                f"{', '.join(f'{k} {v}' for k, v in stops.most_common())} |"
            )


def _offered(assembler: object, question: str) -> int:
    """Tokens of the files of the candidates the default strategy ranks for ``question``."""
    from contextfuse.models import ContextRequest, PlanContext

    backends = assembler.backends  # type: ignore[attr-defined]
    registry = assembler.registry  # type: ignore[attr-defined]
    request = ContextRequest(query=question)
    (strategy,) = registry.offered(backends, None, request)[:1]
    ranked = strategy.rank(request, backends, PlanContext())
    files = sorted({r.uri.split("#", 1)[0] for r in ranked})
    renderings = backends.nodes.get_renderings(files, (9,))
    return sum(r[9].token_count for r in renderings.values() if 9 in r)


if __name__ == "__main__":
    main()
