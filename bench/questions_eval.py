"""Plain-English questions over registry projects: does the context show the code that answers?

Each question of ``questions.jsonl`` (fetched projects: ``questions_fetch.py``) names no
identifier and lists the definitions a good answer must show (``gold``: path, symbol, lines).
For every project this script indexes it with ``contextfuse.index`` (into a temporary folder,
so the cache stays clean), assembles a context for each question at each budget through
``ContextAssembler.assemble`` for the default selection and for each strategy alone, and scores
the payload as ``swebench_eval.py`` does:

  defs    share of gold definitions shown at full source: a depth-9 fragment of that file whose
          provenance location ``L<a>-L<b>`` covers at least half of the definition's lines;
  all     share of questions with every gold definition shown;
  files   share of gold files present (a fragment of the file at depth >= 2);
  use     total_tokens / budget (the preamble's tokens are not in total_tokens);
  p50 ms  median wall time of one assemble call.

Every figure is printed overall and per language (the language of a question's first gold
file), with the number of questions of each language.

Before anything is indexed, every gold entry is checked against the fetched file: the path
must exist, ``lines`` must lie inside the file, and the last part of the symbol's name must
appear in the first lines of that range; a question must name no identifier, file or path.
Any failure stops the run with one line per wrong entry (``--check`` runs only this check).

In the same run, a reference on the same files (the files the index holds): BM25 over code
chunks, what a LlamaIndex or LangChain user with a code splitter gets. Python files are split
with ``ast`` into one chunk per top-level function, one per method (with its class's header
lines), one per class remainder and one for the module remainder, as in the shared
``bm25_chunks_baseline.py``; other files into 40-line windows. Chunks are ranked with bm25s
(Lucene, k1=0.9, b=0.4; words split at case changes, lowercased; document = path, newline,
chunk) and whole chunks fill the budget in rank order, one that does not fit being skipped. A
chunk costs the cl100k_base tokens of ``# PATH:FIRST-LAST``, a newline and its text, and shows
exactly its own lines at full source.

    python bench/questions_fetch.py
    python bench/questions_eval.py --check
    nice -n 10 python bench/questions_eval.py --strategy default --out questions-report.json
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
import sys
import tempfile
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import bm25s
import numpy as np
from questions_fetch import PROJECTS, nested_copy

from contextfuse.assembler import ContextAssembler
from contextfuse.kb import index
from contextfuse.tokenizer import default_tokenizer

HERE = Path(__file__).resolve().parent
DEFAULT_QUESTIONS = HERE / "questions.jsonl"
DEFAULT_CACHE = Path.home() / ".cache" / "contextfuse-questions"
BUDGETS = (4000, 8000, 16000)
DEFAULT = "default"  # the selection the registry makes when no strategy is named
REFERENCE = "bm25-chunks"
FULL_SOURCE = 9
PRESENT = 2  # a file counts as present from this depth on
WINDOW = 40
LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}
ALL = "all"  # the row of every language together
HEAD_LINES = 3  # the symbol's name must appear within this many lines of its first line
SYMBOL_PART = re.compile(r"[^.:]+$")  # Class.method, Type::method -> method
# What a question must not contain: snake_case, camelCase, a path or a file name.
IDENTIFIER = re.compile(
    r"\b\w+_\w+\b|\b[a-z]+[A-Z]\w*\b|\w/\w|\b\w+\.(?:py|js|ts|go|rs|java|json|md)\b"
)
LOCATION = re.compile(r"L(\d+)-L(\d+)")
WORD = re.compile(r"[A-Za-z0-9]+")
CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")  # HTTPResponse2 -> HTTP Response 2
NEWLINE = re.compile(r"\r\n|\r|\n")  # the line breaks ast counts
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Gold(NamedTuple):
    """One definition a good answer must show."""

    path: str
    symbol: str
    first: int
    last: int


class Shown(NamedTuple):
    """One piece of a context: a file's lines at a detail depth."""

    path: str
    depth: int
    lines: Collection[int]  # line numbers, 1-based


class Question(NamedTuple):
    repo: str
    text: str
    gold: tuple[Gold, ...]

    @property
    def language(self) -> str:
        return LANGUAGES.get(Path(self.gold[0].path).suffix, "other")


def load_questions(path: Path) -> list[Question]:
    """The questions of a JSON-lines file; raise naming the line that is malformed."""
    out = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            gold = tuple(
                Gold(g["path"], g["symbol"], int(g["lines"][0]), int(g["lines"][1]))
                for g in row["gold"]
            )
            out.append(Question(row["repo"], row["question"], gold))
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise SystemExit(
                f"{path}:{number}: not a question with repo, question, gold: {exc}"
            ) from exc
        if not gold:
            raise SystemExit(f"{path}:{number}: a question needs at least one gold definition")
    return out


def gold_problems(questions: Sequence[Question], cache: Path) -> list[str]:
    """One line per gold entry whose path, line range or symbol does not match its file,
    and per question that names an identifier or a file."""
    problems = []
    texts: dict[Path, list[str]] = {}
    for q in questions:
        if IDENTIFIER.search(q.text):
            problems.append(f"{q.repo}: question names an identifier or file: {q.text!r}")
        for g in q.gold:
            where = f"{q.repo}/{g.path} {g.symbol} [{g.first}, {g.last}]"
            file = cache / q.repo / g.path
            if file not in texts:
                if not file.is_file():
                    problems.append(f"{where}: no such file")
                    continue
                texts[file] = NEWLINE.split(file.read_bytes().decode("utf-8", "replace"))
            lines = texts[file]
            if not 1 <= g.first <= g.last <= len(lines):
                problems.append(f"{where}: outside the file's {len(lines)} lines")
                continue
            name = SYMBOL_PART.search(g.symbol)
            head = "\n".join(lines[g.first - 1 : min(g.last, g.first - 1 + HEAD_LINES)])
            if name is None or name[0] not in head:
                problems.append(f"{where}: {g.symbol!r} is not in the range's first lines")
    return problems


# ---- scoring ---------------------------------------------------------------------------------


def shows(gold: Gold, pieces: Iterable[Shown]) -> bool:
    """True when one full-source piece of the gold file covers half the definition's lines."""
    span = range(gold.first, gold.last + 1)
    return any(
        p.depth >= FULL_SOURCE
        and p.path == gold.path
        and 2 * sum(n in p.lines for n in span) >= len(span)
        for p in pieces
    )


def score(question: Question, pieces: Sequence[Shown]) -> dict[str, Any]:
    """defs (one flag per gold definition) and files (share of gold files present)."""
    present = {p.path for p in pieces if p.depth >= PRESENT}
    files = sorted({g.path for g in question.gold})
    return {
        "defs": [shows(g, pieces) for g in question.gold],
        "files": sum(f in present for f in files) / len(files),
    }


def fragment_pieces(payload: Any, project: str) -> list[Shown]:
    """The payload's fragments as pieces, by path relative to the project root."""
    prefix = f"project://{project}/"
    out = []
    for fragment in payload.fragments:
        uri = fragment.provenance.resource_uri.split("#", 1)[0]
        path = uri[len(prefix) :] if uri.startswith(prefix) else uri
        found = LOCATION.fullmatch(fragment.provenance.location)
        lines = range(int(found[1]), int(found[2]) + 1) if found else range(0)
        out.append(Shown(path, fragment.detail_depth, lines))
    return out


# ---- the BM25 chunk reference ----------------------------------------------------------------


def tokenize(text: str) -> list[str]:
    return [part.lower() for word in WORD.findall(text) for part in CAMEL.findall(word)]


def _first_line(node: ast.stmt) -> int:
    """First line of a statement, decorators included."""
    return min([node.lineno, *(int(d.lineno) for d in getattr(node, "decorator_list", []))])


def python_chunks(text: str) -> list[list[int]] | None:
    """Line-number lists of the ast chunks of a Python file; None when it does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning on old escape sequences
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    lines = NEWLINE.split(text)
    chunks: list[list[int]] = []
    in_defs: set[int] = set()
    for node in tree.body:
        if not isinstance(node, (*DEFS, ast.ClassDef)):
            continue
        span = list(range(_first_line(node), (node.end_lineno or node.lineno) + 1))
        in_defs.update(span)
        if isinstance(node, DEFS):
            chunks.append(span)
            continue
        head = list(range(node.lineno, max(node.lineno + 1, _first_line(node.body[0]))))
        in_methods: set[int] = set()
        for member in node.body:
            if isinstance(member, DEFS):
                own = range(_first_line(member), (member.end_lineno or member.lineno) + 1)
                in_methods.update(own)
                chunks.append(head + [n for n in own if n not in head])
        rest = [n for n in span if n not in in_methods]
        # The class's remainder is a chunk when it holds more than the header.
        if not in_methods or any(lines[n - 1].strip() for n in rest if n not in head):
            chunks.append(rest)
    chunks.append([n for n in range(1, len(lines) + 1) if n not in in_defs])
    return chunks


def window_chunks(text: str) -> list[list[int]]:
    total = len(NEWLINE.split(text))
    return [list(range(i, min(i + WINDOW, total + 1))) for i in range(1, total + 1, WINDOW)]


class ChunkIndex:
    """BM25 over the chunks of one project's files."""

    def __init__(self, root: Path, paths: Sequence[str]) -> None:
        tokenizer = default_tokenizer()
        self.pieces: list[Shown] = []
        self.cost: list[int] = []
        docs = []
        for path in paths:
            text = (root / path).read_bytes().decode("utf-8", "replace")
            lines = NEWLINE.split(text)
            chunks = (python_chunks(text) if path.endswith(".py") else None) or window_chunks(text)
            for numbers in chunks:
                body = "\n".join(lines[n - 1] for n in numbers)
                if not body.strip():
                    continue
                labelled = f"# {path}:{numbers[0]}-{numbers[-1]}\n{body}"
                self.pieces.append(Shown(path, FULL_SOURCE, frozenset(numbers)))
                self.cost.append(tokenizer.count(labelled))
                docs.append(tokenize(path + "\n" + body))
        self.bm25 = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
        self.bm25.index(docs, show_progress=False)

    def fill(self, question: str, budget: int) -> tuple[list[Shown], int]:
        """The chunks packed into ``budget`` in rank order, and their tokens."""
        words = tokenize(question)
        scores = self.bm25.get_scores(words) if words else np.zeros(len(self.pieces))
        chosen, used = [], 0
        for i in np.argsort(-scores, kind="stable"):
            if used + self.cost[i] <= budget:
                chosen.append(self.pieces[i])
                used += self.cost[i]
        return chosen, used


# ---- the run ---------------------------------------------------------------------------------


def available_strategies(assembler: ContextAssembler) -> list[str]:
    """Strategies the registry lists as available on this index."""
    return [
        row["name"] for row in assembler.registry.describe(assembler.backends) if row["available"]
    ]


def run_project(
    root: Path, questions: Sequence[Question], budgets: Sequence[int], selections: list[str] | None
) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """Index one project and answer its questions: (rows, selections run, project facts)."""
    with tempfile.TemporaryDirectory(prefix="questions-index-") as index_dir:
        started = time.perf_counter()
        stats = index(root, index_dir=index_dir)
        index_s = time.perf_counter() - started
        assembler = ContextAssembler(root, index_dir=index_dir)
        try:
            chosen = selections or [DEFAULT, *available_strategies(assembler)]
            paths = sorted(node.path for node in assembler.backends.nodes.files())
            started = time.perf_counter()
            chunks = ChunkIndex(root, paths)
            facts = {
                "index_s": round(index_s, 2),
                "files": stats.files,
                "nodes": stats.nodes,
                "languages": stats.languages,
                "chunks": len(chunks.pieces),
                "chunk_index_s": round(time.perf_counter() - started, 2),
            }
            rows = [ask(assembler, chunks, q, budgets, chosen) for q in questions]
        finally:
            assembler.backends.nodes.close()
    return rows, chosen, facts


def ask(
    assembler: ContextAssembler,
    chunks: ChunkIndex,
    question: Question,
    budgets: Sequence[int],
    selections: Sequence[str],
) -> dict[str, Any]:
    """One question at every budget, for every selection and the reference."""
    row: dict[str, Any] = {"repo": question.repo, "question": question.text, "results": {}}
    project = assembler.backends.nodes.project
    for selection in selections:
        strategies = None if selection == DEFAULT else selection.split("+")
        for budget in budgets:
            started = time.perf_counter()
            try:
                payload = assembler.assemble(question.text, budget, strategies=strategies)
            except Exception as exc:  # scored as an error, the run goes on
                result: dict[str, Any] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            else:
                result = score(question, fragment_pieces(payload, project))
                result.update(
                    tokens=payload.total_tokens,
                    preamble_tokens=payload.preamble_tokens,
                    fragments=len(payload.fragments),
                    strategies_used=list(payload.strategies_used),
                )
            result["seconds"] = time.perf_counter() - started
            row["results"][f"{selection}@{budget}"] = result
    for budget in budgets:
        started = time.perf_counter()
        pieces, used = chunks.fill(question.text, budget)
        result = score(question, pieces)
        result.update(tokens=used, fragments=len(pieces), seconds=time.perf_counter() - started)
        row["results"][f"{REFERENCE}@{budget}"] = result
    return row


def summarize(results: Sequence[dict[str, Any]], budget: int) -> dict[str, Any]:
    """Metrics of one selection at one budget over the questions (percentages)."""
    ok = [r for r in results if "error" not in r]
    flags = [flag for r in ok for flag in r["defs"]]
    n_defs = sum(len(r["defs"]) for r in ok)
    seconds = sorted(r["seconds"] for r in ok)
    return {
        "n": len(results),
        "errors": len(results) - len(ok),
        "defs": round(100.0 * sum(flags) / n_defs, 1) if n_defs else 0.0,
        "all": round(100.0 * sum(all(r["defs"]) for r in ok) / len(results), 1) if results else 0.0,
        "files": round(100.0 * sum(r["files"] for r in ok) / len(results), 1) if results else 0.0,
        "use": round(statistics.mean(r["tokens"] / budget for r in ok), 3) if ok else 0.0,
        "p50_ms": round(1000 * statistics.median(seconds), 1) if seconds else None,
    }


def report(
    rows: Sequence[dict[str, Any]],
    questions: Sequence[Question],
    selections: Sequence[str],
    budgets: Sequence[int],
) -> dict[str, Any]:
    """Print the tables and return the summary."""
    summary: dict[str, Any] = {}
    print("\n| selection | budget | defs % | all % | files % | use | p50 ms | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for selection in [*selections, REFERENCE]:
        for budget in budgets:
            key = f"{selection}@{budget}"
            s = summarize([r["results"][key] for r in rows], budget)
            summary[key] = s
            print(
                f"| {selection} | {budget} | {s['defs']} | {s['all']} | {s['files']} | "
                f"{s['use']} | {s['p50_ms']} | {s['errors']} |"
            )
    by_language: dict[str, dict[str, Any]] = {}
    languages = sorted({q.language for q in questions})
    budget_cells = " | ".join(f"{b // 1000}k defs / all" for b in budgets)
    for selection in [*selections, REFERENCE]:
        print(f"\n{selection}, by language\n")
        print(f"| language | questions | {budget_cells} |")
        print("|---|---:|" + "---:|" * len(budgets))
        for lang in [*languages, ALL]:
            picked = [
                (r, q) for r, q in zip(rows, questions, strict=True) if lang in (ALL, q.language)
            ]
            cells = {}
            for budget in budgets:
                key = f"{selection}@{budget}"
                cells[key] = summarize([r["results"][key] for r, _ in picked], budget)
                by_language.setdefault(key, {})[lang] = cells[key]
            figures = " | ".join(f"{c['defs']} / {c['all']}" for c in cells.values())
            print(f"| {lang} | {len(picked)} | {figures} |")
    return {"by_selection": summary, "by_language": by_language}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="questions_fetch.py dir")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument(
        "--strategy",
        action="append",
        help=f"a strategy to run alone, several joined by +, or {DEFAULT!r} (repeatable; "
        "default: default and every available strategy)",
    )
    parser.add_argument("--repos", help="comma-separated cache folder names to keep")
    parser.add_argument("--out", type=Path, help="write the summary and per-question rows as JSON")
    parser.add_argument("--check", action="store_true", help="check the gold entries and stop")
    args = parser.parse_args()

    questions = load_questions(args.questions)
    if args.repos:
        questions = [q for q in questions if q.repo in args.repos.split(",")]
    budgets = [int(b) for b in args.budgets.split(",")]
    by_repo: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        by_repo[q.repo].append(q)
    missing = [repo for repo in by_repo if not (args.cache / repo).is_dir()]
    if missing:
        raise SystemExit(f"not in {args.cache}: {', '.join(missing)} (run questions_fetch.py)")
    projects_by_folder = {p.folder: p for p in PROJECTS}
    nested = [
        f"{copy} is a second copy of its project: delete it"
        for repo in by_repo
        if repo in projects_by_folder
        and (copy := nested_copy(projects_by_folder[repo], args.cache / repo)) is not None
    ]
    problems = nested + gold_problems(questions, args.cache)
    if problems:
        raise SystemExit("the questions do not match the fetched projects:\n" + "\n".join(problems))
    counts = Counter(q.language for q in questions)
    print(
        f"{len(questions)} questions, {sum(len(q.gold) for q in questions)} gold definitions "
        f"checked, {len(by_repo)} projects; by language: "
        + ", ".join(f"{lang} {counts[lang]}" for lang in sorted(counts)),
        file=sys.stderr,
    )
    if args.check:
        return

    started = time.time()
    rows: list[dict[str, Any]] = []
    ordered: list[Question] = []
    projects: dict[str, Any] = {}
    selections: list[str] | None = args.strategy  # the first project's list serves them all
    for repo, group in by_repo.items():
        repo_rows, selections, projects[repo] = run_project(
            args.cache / repo, group, budgets, selections
        )
        rows += repo_rows
        ordered += group
        print(
            f"[{time.time() - started:.0f}s] {repo}: {len(group)} questions, "
            f"{projects[repo]['files']} files, index {projects[repo]['index_s']}s",
            file=sys.stderr,
            flush=True,
        )
    print(
        f"{len(rows)} questions, {sum(len(q.gold) for q in questions)} gold definitions, "
        f"{len(by_repo)} projects; selections: {', '.join(selections or [])}; "
        f"{time.time() - started:.0f}s in all"
    )
    summary = report(rows, ordered, selections or [], budgets)
    summary.update(budgets=budgets, selections=selections, projects=projects)
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "questions": rows}, indent=1))


if __name__ == "__main__":
    main()
