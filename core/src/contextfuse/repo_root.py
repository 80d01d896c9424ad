"""Which repository a command run from some folder is about."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

__all__ = ["RepoRoot", "find_repo_root", "locate_repo_root", "root_notice"]

#: The folder that marks a project's root: its index and its configuration live there.
_MARKER = ".contextfuse"


class RepoRoot(NamedTuple):
    """A project's root folder and how it was found: ``"index"`` (it holds the nearest
    ``.contextfuse`` folder), ``"git"`` (the git top level) or ``"here"`` (neither)."""

    path: Path
    found_by: str


def locate_repo_root(start: Path | str = ".") -> RepoRoot:
    """The project that ``start`` lies in, and how it was found.

    The nearest folder (``start`` or a parent) holding a ``.contextfuse`` folder, as git finds
    its top level by walking up to ``.git``; else the git top level; else ``start`` itself.
    So a command run from a subfolder uses the project's index instead of building a second,
    partial one there, with git or without.
    """
    here = Path(start).expanduser().resolve()
    for folder in (here, *here.parents):
        if (folder / _MARKER).is_dir():
            return RepoRoot(folder, "index")
    from contextfuse.kb.files import git_toplevel

    top = git_toplevel(here)
    return RepoRoot(top, "git") if top is not None else RepoRoot(here, "here")


def find_repo_root(start: Path | str = ".") -> Path:
    """The project that ``start`` lies in (see :func:`locate_repo_root`)."""
    return locate_repo_root(start).path


def root_notice(located: RepoRoot, start: Path | str = ".") -> str | None:
    """What to tell a user whose command runs on a folder above ``start``; None if none."""
    if located.path == Path(start).expanduser().resolve():
        return None
    why = {
        "index": f"the nearest folder above with a {_MARKER} folder",
        "git": "the top level of the git checkout",
    }[located.found_by]
    return f"using the project at {located.path} ({why})"
