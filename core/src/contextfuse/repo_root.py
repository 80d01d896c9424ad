"""Which repository a command run from some folder is about."""

from __future__ import annotations

from pathlib import Path

__all__ = ["find_repo_root"]

_INDEX_FILE = Path(".contextfuse") / "index.db"


def find_repo_root(start: Path | str = ".") -> Path:
    """The repository that ``start`` lies in.

    The nearest folder (``start`` or a parent) that holds an index, else the git top level,
    else ``start`` itself; so a command run from a subdirectory uses the repository's index
    instead of building a second, partial one there.
    """
    here = Path(start).expanduser().resolve()
    for folder in (here, *here.parents):
        if (folder / _INDEX_FILE).is_file():
            return folder
    from contextfuse.kb.files import git_toplevel

    return git_toplevel(here) or here
