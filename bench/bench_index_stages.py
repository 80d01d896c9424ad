"""Where a cold index's CPU goes: the workers' stages, and the indexer's own phases.

Two parts, each beside references measured in the same run:

* the workers' job (``contextfuse.kb.process.process_files``) run in this one process over
  every file discovery lists, 40 files at a time as a worker takes them, with the installed
  index contributors' vectorizers and the default tokenizer: the CPU seconds of each stage
  (reading with the secret scan, parsing, rendering, full-text rows, facts, vectors, token
  counts). Beside them, the floors of the two largest: tiktoken over the distinct pieces the
  counting sent it (what counting costs at least, with this tokenizer), and over every
  indexed file's whole text once;
* a cold index in a fresh process (worker processes as ``contextfuse index`` starts them):
  the indexer's process's wall and CPU seconds per phase (discovery, the parse with the
  writes, linking, the full-text merge and vocabulary, the commit, contributors, the array
  files), its total CPU and that of its workers. What runs after the parse is serial: one
  core waits.

Run::

    python bench/bench_index_stages.py /tmp/django/Django-4.1 [--skip-index] [--step N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import contextfuse

SRC = str(Path(contextfuse.__file__).parents[1])
CHILD_ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])),
}
_STAGES = ("read_file", "parse", "render_file", "fts_rows", "extract_facts")

#: A cold index in a fresh interpreter: wall and CPU seconds of the indexer's phases.
CHILD = """
import functools, json, resource, sys, time
from collections import Counter
from contextfuse.kb import freshness, indexer, refresh, writer
wall, cpu = Counter(), Counter()

def timed(owner, name, label):
    inner = getattr(owner, name)

    @functools.wraps(inner)
    def run(*args, **kwargs):
        w, c = time.perf_counter(), time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            wall[label] += time.perf_counter() - w
            cpu[label] += time.process_time() - c

    setattr(owner, name, run)

timed(freshness, "survey", "start: survey")
timed(indexer.discovery, "discover", "start: discovery")
timed(indexer._Run, "parse_files", "parse and write (workers)")
timed(writer.IndexWriter, "rebuild_edges", "linking")
timed(writer.IndexWriter, "rebuild_vocabulary", "vocabulary")
timed(indexer._Run, "execute", "transaction")
timed(indexer._Run, "contribute", "contributors")
timed(indexer._Run, "finish", "finish (totals, checkpoint)")
timed(refresh, "_map_arrays", "array files")
started, began = time.perf_counter(), time.process_time()
from contextfuse.kb import index
stats = index(sys.argv[1], index_dir=sys.argv[2])
own = resource.getrusage(resource.RUSAGE_SELF)
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({
    "wall": time.perf_counter() - started, "cpu": time.process_time() - began,
    "workers_cpu": children.ru_utime + children.ru_stime, "nodes": stats.nodes,
    "phases": {k: [wall[k], cpu[k]] for k in wall},
}))
"""


def worker_stages(root: Path, step: int) -> None:
    """The workers' job in this process, timed stage by stage (CPU seconds)."""
    from contextfuse.kb import files as discovery
    from contextfuse.kb import process, tokens
    from contextfuse.kb.parse import detect, planned_parser
    from contextfuse.kb.repository import _contributors
    from contextfuse.kb.vectorizers import vectorizers_of
    from contextfuse.tokenizer import _load_encoding, default_tokenizer

    found = discovery.discover(root)
    todo = []
    for candidate in found.candidates[::step]:
        language, resource_type = detect(candidate.path)
        plan = planned_parser(language, candidate.path)
        todo.append(process.Todo(candidate, language, resource_type, plan, None))
    vectorizers = vectorizers_of(_contributors(None))
    tokenizer = default_tokenizer()
    prepare = getattr(tokenizer, "prepare_bulk", None)
    if callable(prepare):
        prepare()
    spent: Counter[str] = Counter()
    counted: list[str] = []  # what the tokenizer was asked to count

    def timed(label: str, inner: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            began = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[label] += time.process_time() - began

        return run

    patched: dict[tuple[Any, str], Any] = {}
    owners = {name: process for name in _STAGES}
    owners["read_file"] = discovery  # process reads through the module
    labels = {"read_file": "read + secret scan", "fts_rows": "full-text rows"}
    for name, owner in owners.items():
        patched[owner, name] = getattr(owner, name)
        setattr(owner, name, timed(labels.get(name, name), getattr(owner, name)))
    patched[process, "vectorize"] = process.vectorize
    process.vectorize = timed("vectors", process.vectorize)  # type: ignore[assignment]
    patched[process, "count_renderings"] = process.count_renderings
    process.count_renderings = timed("token counts", process.count_renderings)  # type: ignore[assignment]
    missing = tokens._Counts.__missing__  # what the piece counter sends the tokenizer
    patched[tokens._Counts, "__missing__"] = missing

    def recorded(self: Any, piece: str) -> int:
        counted.append(piece + self._suffix)
        return missing(self, piece)

    tokens._Counts.__missing__ = recorded  # type: ignore[method-assign]
    nodes = 0
    contents: list[str] = []
    began = time.process_time()
    try:
        with process.paused_gc():
            for start in range(0, len(todo), 40):
                batch = todo[start : start + 40]
                for outcome in process.process_files(
                    root, "bench", batch, discovery.DEFAULT_MAX_FILE_SIZE, tokenizer, vectorizers
                ):
                    if isinstance(outcome, process.FileRecord):
                        nodes += len(outcome.drafts)
                        contents.append(outcome.content)
    finally:
        total = time.process_time() - began
        for (owner, name), inner in patched.items():
            setattr(owner, name, inner)
    recording = sum(spent.values())
    print(
        f"workers' job in one process: {len(todo)} files, {nodes} nodes, {total:.2f} s CPU"
        f" (peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)"
    )
    for label, seconds in spent.most_common():
        print(f"  {label:20s} {seconds:6.2f} s  {seconds / total:6.1%}")
    print(f"  {'other':20s} {total - recording:6.2f} s  {(total - recording) / total:6.1%}")
    encode = _load_encoding("cl100k_base").encode_ordinary
    began = time.process_time()
    for text in counted:
        encode(text)
    pieces = time.process_time() - began
    began = time.process_time()
    for text in contents:
        encode(text)
    whole = time.process_time() - began
    print(
        f"  reference: tiktoken over the {len(counted)} distinct pieces counted"
        f" ({sum(map(len, counted)) / 1e6:.1f} M characters) {pieces:.2f} s; over every"
        f" file's whole text once ({sum(map(len, contents)) / 1e6:.1f} M characters)"
        f" {whole:.2f} s"
    )


def cold_phases(root: Path) -> None:
    """A cold index in a fresh process: the indexer's phases, its CPU and its workers'."""
    with tempfile.TemporaryDirectory(prefix="cf-stages-") as scratch:
        copy = Path(scratch) / root.name
        shutil.copytree(root, copy, symlinks=True)
        load = os.getloadavg()[0]
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(copy), str(Path(scratch) / "index")],
            env=CHILD_ENV,
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"cold index, fresh process: {result['wall']:.2f} s wall, CPU {result['cpu']:.2f}"
        f" (indexer) + {result['workers_cpu']:.2f} (workers), {result['nodes']} nodes,"
        f" load {load:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    phases = result["phases"]
    for label, (wall, cpu) in phases.items():
        print(f"  {label:30s} wall {wall:6.2f} s  CPU {cpu:6.2f} s")
    inside = ("parse and write (workers)", "linking", "vocabulary")
    rest = [
        phases["transaction"][i] - sum(phases.get(k, (0, 0))[i] for k in inside) for i in (0, 1)
    ]
    print(f"  {'rest of the transaction':30s} wall {rest[0]:6.2f} s  CPU {rest[1]:6.2f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--step", type=int, default=1, help="every Nth file (the stages)")
    parser.add_argument("--skip-index", action="store_true", help="the stages only")
    args = parser.parse_args(argv)
    print(f"{args.root}: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    worker_stages(args.root.resolve(), args.step)
    if not args.skip_index:
        cold_phases(args.root.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
