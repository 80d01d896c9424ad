"""Fetch the projects of the plain-English question set (questions.jsonl) into a cache dir.

Every project is real code nobody here wrote, at a pinned version, fetched only from a package
registry with its ordinary client: PyPI sdists with pip, npm tarballs with ``npm pack``, Go and
Rust sources from Debian's ``golang-*-dev`` / ``librust-*-dev`` packages with
``apt-get download`` and ``dpkg-deb -x``. Java comes from packages that ship its sources: an npm
tarball (cordova-android's framework) and Debian's ``bsh-src``, whose source tarball sits inside
the package. TypeScript packages keep only ``src/``: their tarballs also carry the compiled
JavaScript, which is build output and not part of the project's repository. Each lands in
``<cache>/<name>-<version>/`` (the ``repo`` field of a question); a folder already there is kept,
so running again fetches only what is missing.

    python bench/questions_fetch.py [--cache ~/.cache/contextfuse-questions]

Debian's packages need ``apt-get update`` once on a fresh machine; the script does not run it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import NamedTuple

DEFAULT_CACHE = Path.home() / ".cache" / "contextfuse-questions"


class Project(NamedTuple):
    """One pinned project: where it comes from and which folder of the download is its source."""

    folder: str  # <name>-<version>, the repo field of a question
    kind: str  # "pypi", "npm" or "deb"
    spec: str  # pip requirement, npm spec or apt package=version
    source: str  # the project's root inside the unpacked download
    inner: str = ""  # a tarball inside the download that holds the source, when there is one


PROJECTS = (
    Project("httpx-0.27.0", "pypi", "httpx==0.27.0", "httpx-0.27.0"),
    Project("click-8.1.7", "pypi", "click==8.1.7", "click-8.1.7"),
    Project("express-4.19.2", "npm", "express@4.19.2", "package"),
    Project("commander-12.1.0", "npm", "commander@12.1.0", "package"),
    Project(
        "cobra-1.6.1",
        "deb",
        "golang-github-spf13-cobra-dev=1.6.1-1",
        "usr/share/gocode/src/github.com/spf13/cobra",
    ),
    Project(
        "mux-1.8.0",
        "deb",
        "golang-github-gorilla-mux-dev=1.8.0-1",
        "usr/share/gocode/src/github.com/gorilla/mux",
    ),
    Project(
        "semver-1.0.14",
        "deb",
        "librust-semver-dev=1.0.14-1",
        "usr/share/cargo/registry/semver-1.0.14",
    ),
    Project("zod-4.1.12", "npm", "zod@4.1.12", "package/src"),
    Project("immer-10.1.1", "npm", "immer@10.1.1", "package/src"),
    Project("cordova-android-12.0.1", "npm", "cordova-android@12.0.1", "package/framework"),
    Project(
        "beanshell-2.0b4",
        "deb",
        "bsh-src=2.0b4-20",
        ".",
        inner="usr/src/bsh-src/bsh.tar.gz",
    ),
    Project(
        "gin-1.8.1",
        "deb",
        "golang-github-gin-gonic-gin-dev=1.8.1-1",
        "usr/share/gocode/src/github.com/gin-gonic/gin",
    ),
    Project(
        "url-2.3.1",
        "deb",
        "librust-url-dev=2.3.1-1",
        "usr/share/cargo/registry/url-2.3.1",
    ),
)


def _run(argv: list[str], cwd: Path) -> None:
    """Run a registry client; on failure raise with the command and its last words."""
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-500:]
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {tail}")


def _only(directory: Path, pattern: str) -> Path:
    """The single file matching ``pattern`` that a client left in ``directory``."""
    found = sorted(directory.glob(pattern))
    if len(found) != 1:
        raise RuntimeError(f"expected one {pattern} in {directory}, found {found}")
    return found[0]


def _unpack(project: Project, work: Path) -> Path:
    """Download ``project`` into ``work`` and return the unpacked root of its source."""
    download, tree = work / "download", work / "tree"
    download.mkdir()
    tree.mkdir()
    if project.kind == "pypi":
        _run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             "-q", "-d", str(download), project.spec],
            work,
        )  # fmt: skip
        with tarfile.open(_only(download, "*.tar.gz")) as archive:
            archive.extractall(tree, filter="data")
    elif project.kind == "npm":
        _run(["npm", "pack", "--silent", project.spec], download)
        with tarfile.open(_only(download, "*.tgz")) as archive:
            archive.extractall(tree, filter="data")
    elif project.kind == "deb":
        _run(["apt-get", "download", "-q", project.spec], download)
        _run(["dpkg-deb", "-x", str(_only(download, "*.deb")), str(tree)], work)
    else:
        raise ValueError(f"{project.folder}: unknown kind {project.kind!r}")
    if project.inner:
        archive_path, tree = tree / project.inner, work / "inner"
        tree.mkdir()
        with tarfile.open(archive_path) as archive:
            archive.extractall(tree, filter="data")
    root = tree / project.source
    if not root.is_dir():
        raise RuntimeError(f"{project.folder}: {project.source} is not in the download")
    return root


def nested_copy(project: Project, target: Path) -> Path | None:
    """A second copy of the project inside its folder, as an older version of this script left
    when two fetches ran at once: a subfolder named like the download's root holding the same
    entries as the folder itself."""
    inner = target / Path(project.source).name
    if project.source == "." or not inner.is_dir():
        return None
    outer = {p.name for p in target.iterdir()} - {inner.name}
    return inner if outer == {p.name for p in inner.iterdir()} else None


def fetch(project: Project, cache: Path) -> tuple[Path, bool]:
    """Materialize ``project`` under ``cache``; (its folder, True when fetched now)."""
    target = cache / project.folder
    if target.is_dir():
        nested = nested_copy(project, target)
        if nested is not None:
            raise RuntimeError(f"{nested} is a second copy of {target}: delete it")
        return target, False
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".fetch-") as tmp:
        root = _unpack(project, Path(tmp))
        # Symlinks (Debian links shared licences) would point outside the cache; keep files.
        for link in [p for p in root.rglob("*") if p.is_symlink()]:
            link.unlink()
        try:
            # Same file system: an atomic rename, which fails when another process running
            # this script at the same time got there first (moving into its folder would
            # nest a second copy of the project inside it).
            os.rename(root, target)
        except OSError:
            if not target.is_dir():
                raise
            return target, False
    return target, True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="cache dir")
    args = parser.parse_args()
    for project in PROJECTS:
        try:
            target, fetched = fetch(project, args.cache)
        except RuntimeError as exc:
            raise SystemExit(str(exc)) from None
        files = sum(1 for p in target.rglob("*") if p.is_file())
        state = "fetched" if fetched else "cached"
        print(f"{state:8} {project.folder:24} {project.kind:5} {project.spec:42} {files} files")


if __name__ == "__main__":
    main()
