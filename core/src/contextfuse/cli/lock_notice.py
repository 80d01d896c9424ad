"""Say so when another process holds a repository's index lock (the wait is then not a hang)."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["LOCK_FILE", "announce_lock_wait"]

#: The lock file the indexer holds while it writes (inside the index folder).
LOCK_FILE = "index.lock"


def announce_lock_wait(index_dir: Path) -> bool:
    """Print a notice if another process holds ``index_dir``'s lock now; True when it does."""
    lock_path = index_dir / LOCK_FILE
    if not lock_path.is_file():
        return False
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks to probe
        return False
    with open(lock_path, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            from contextfuse.kb.process import lock_holder

            holder = lock_holder(lock_path)
            who = f" (process {holder})" if holder else ""
            click.echo(
                f"waiting for another contextfuse process{who} that is updating the index "
                f"({lock_path})...",
                err=True,
            )
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False
