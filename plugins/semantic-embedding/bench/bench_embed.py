#!/usr/bin/env python3
"""Throughput of the static embedder on Python source, against the tokenizer-only floor.

Embeds N (default 1,000) chunks of the running interpreter's stdlib source, each
about 800 characters (~200 cl100k tokens), and prints chunks/s for
``StaticEmbedder.embed`` and for ``StaticEmbedder.tokenize`` alone on the same
chunks, plus their ratio (how much pooling adds on top of tokenizing). If
model2vec is importable, its ``StaticModel.encode`` on the same folder is timed
too, as a reference.

Run from the plugin folder::

    PYTHONPATH=src python bench/bench_embed.py [--chunks 1000] [--repeats 7]

Set RAYON_NUM_THREADS=1 to measure a single core (the tokenizer is multi-threaded).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sysconfig
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from contextfuse_semantic_embedding.embedders import StaticEmbedder


def stdlib_chunks(count: int, chars: int) -> list[str]:
    """``count`` line-aligned chunks of about ``chars`` characters of stdlib source (sorted)."""

    def files() -> Iterator[Path]:
        root = Path(sysconfig.get_paths()["stdlib"])
        for path in sorted(root.rglob("*.py")):
            if "site-packages" not in path.parts:
                yield path

    chunks: list[str] = []
    for path in files():
        try:
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        except (UnicodeDecodeError, OSError):
            continue
        current: list[str] = []
        size = 0
        for line in lines:
            current.append(line)
            size += len(line)
            if size >= chars:
                chunks.append("".join(current))
                if len(chunks) == count:
                    return chunks
                current, size = [], 0
    raise SystemExit(f"only {len(chunks)} chunks of stdlib source found, wanted {count}")


def interleaved_seconds(
    fns: dict[str, Callable[[], object]], repeats: int
) -> dict[str, tuple[float, float]]:
    """Best and median wall time per function, calling them in turn ``repeats`` times.

    Interleaving keeps the comparison fair when other processes share the CPU.
    """
    times: dict[str, list[float]] = {label: [] for label in fns}
    for _ in range(repeats):
        for label, fn in fns.items():
            started = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - started)
    return {label: (min(ts), statistics.median(ts)) for label, ts in times.items()}


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument(
        "--chars", type=int, default=800, help="characters per chunk (~200 cl100k tokens)"
    )
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    chunks = stdlib_chunks(args.chunks, args.chars)
    embedder = StaticEmbedder()

    started = time.perf_counter()
    embedder.embed(["warm-up"])  # first call loads tokenizer + matrix
    load_s = time.perf_counter() - started

    token_counts = [len(ids) for ids in embedder.tokenize(chunks)]
    fns: dict[str, Callable[[], object]] = {
        "tokenize": lambda: embedder.tokenize(chunks),
        "embed": lambda: embedder.embed(chunks),
    }
    try:
        from model2vec import StaticModel

        reference = StaticModel.from_pretrained(str(embedder.model_dir))
        fns["model2vec"] = lambda: reference.encode(chunks)
    except ImportError:
        pass
    timings = interleaved_seconds(fns, args.repeats)
    tok_best, tok_median = timings["tokenize"]
    emb_best, emb_median = timings["embed"]

    n = len(chunks)
    print(
        f"cpus: {os.cpu_count()}, chunks: {n}, mean chars {sum(map(len, chunks)) / n:.0f}, "
        f"mean WordPiece tokens {statistics.mean(token_counts):.0f} (max {max(token_counts)})"
    )
    print(f"load (first embed): {load_s * 1000:.0f} ms")
    print(
        f"tokenize only : {n / tok_best:8,.0f} chunks/s "
        f"(best of {args.repeats}; median {n / tok_median:,.0f})"
    )
    print(
        f"embed         : {n / emb_best:8,.0f} chunks/s "
        f"(best of {args.repeats}; median {n / emb_median:,.0f})"
    )
    print(
        f"embed / tokenize time ratio: {emb_best / tok_best:.2f}x "
        f"(tokenizing is {tok_best / emb_best:.0%} of embedding time)"
    )

    if "model2vec" in timings:
        ref_best, _ = timings["model2vec"]
        print(f"model2vec ref : {n / ref_best:8,.0f} chunks/s (StaticModel.encode, same model)")


if __name__ == "__main__":
    main()
