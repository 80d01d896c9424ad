"""Two checkouts' cold index of one repository, started at the same moment, side by side.

On a machine shared with other work, runs of one code one after the other meet different
loads; two runs started together meet the same one. Each run indexes the repository into its
own index folder in a fresh interpreter (``bench_index.CHILD``, with the installed index
contributors), one with this checkout's code, the other with ``--base`` first on
``PYTHONPATH``; wall seconds and CPU (main + workers) of both are printed per round.

Run::

    git archive main | tar -x -C /tmp/base
    python bench/bench_index_side_by_side.py /tmp/django/Django-4.1 --base /tmp/base --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_index import CHILD, SRC

#: Replaces the index folder ``CHILD`` uses by the one in ``sys.argv[4]``.
_CHILD = CHILD.replace("index(sys.argv[1], ", "index(sys.argv[1], index_dir=sys.argv[4], ")


def start(repo: Path, index_dir: Path, path: str) -> subprocess.Popen[str]:
    """One cold index run in a fresh interpreter, with ``path`` first on ``PYTHONPATH``."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [path, os.environ.get("PYTHONPATH")])),
    }
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(repo), "auto", "installed", str(index_dir)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--base", type=Path, required=True, help="a checkout of the base")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    base_path = os.pathsep.join(
        str(p) for p in [args.base / "core" / "src", *sorted(args.base.glob("plugins/*/src"))]
    )
    walls: dict[str, list[float]] = {"base": [], "branch": []}
    cpus: dict[str, list[float]] = {"base": [], "branch": []}
    for number in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory(prefix="side-by-side-") as tmp:
            load = os.getloadavg()[0]
            runs = {
                "base": start(args.repo, Path(tmp) / "base", base_path),
                "branch": start(args.repo, Path(tmp) / "branch", SRC),
            }
            for name, run in runs.items():
                output, _ = run.communicate()
                if run.returncode != 0:
                    raise SystemExit(f"{name}: indexing failed with exit code {run.returncode}")
                result = json.loads(output.strip().splitlines()[-1])
                walls[name].append(result["stats"]["seconds"])
                cpus[name].append(result["cpu_main"] + result["cpu_workers"])
                print(
                    f"round {number} {name:<7} {result['stats']['seconds']:7.2f} s  CPU "
                    f"{result['cpu_main']:.1f}+{result['cpu_workers']:.1f} s  load {load:.2f}"
                )
    base, branch = (statistics.median(walls[n]) for n in ("base", "branch"))
    print(
        f"median: base {base:.2f} s, branch {branch:.2f} s (x{branch / base:.2f}); CPU base "
        f"{statistics.median(cpus['base']):.1f} s, branch {statistics.median(cpus['branch']):.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
