"""``contextfuse index``: build or refresh a repository's index."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from contextfuse.kb import IndexStats


@click.command("index")
@click.argument(
    "path", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--index-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the index lives (default: <repo>/.contextfuse).",
)
@click.option("--rebuild", is_flag=True, help="Start from scratch (also replaces a bad index).")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Summary as text or as JSON.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no text summary.")
def index(
    path: Path | None, index_dir: Path | None, rebuild: bool, output_format: str, quiet: bool
) -> None:
    """Build or refresh the index of PATH (default: the current repository).

    Unchanged files are not read again; a refresh without changes takes a moment.
    """
    from contextfuse.cli.lock_notice import announce_lock_wait
    from contextfuse.cli.progress import progress_bar
    from contextfuse.errors import KnowledgeBaseError
    from contextfuse.kb import index as build_index
    from contextfuse.repo_root import find_repo_root

    root = path if path is not None else find_repo_root(Path.cwd())
    announce_lock_wait(index_dir or root / ".contextfuse")
    try:
        with progress_bar(enabled=not quiet and output_format == "text") as progress:
            stats = build_index(
                root,
                index_dir=index_dir,
                rebuild=rebuild,
                progress=progress,
            )
    except KnowledgeBaseError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if output_format == "json":
        click.echo(json.dumps(stats.to_dict(), indent=2))
    elif not quiet:
        click.echo(_summary(stats))


def _summary(stats: IndexStats) -> str:
    lines = [
        f"Indexed {stats.project} ({stats.root})",
        f"  index     {stats.index_path}" + (" (rebuilt)" if stats.rebuilt else ""),
        f"  files     {stats.files:,} ({stats.files_parsed:,} parsed, "
        f"{stats.files_unchanged:,} unchanged, {stats.files_removed:,} removed)",
        f"  nodes     {stats.nodes:,}  edges {stats.edges:,}",
        f"  tokens    {stats.tokens:,}  ({stats.bytes / 1e6:,.1f} MB of text)",
        f"  time      {stats.seconds:.2f} s ({stats.files_per_second:,.0f} files/s)",
    ]
    if stats.git:
        lines.append(f"  history   {stats.commits:,} commits (+{stats.commits_added:,})")
    else:
        lines.append("  history   none (no git)")
    if stats.skipped:
        total = sum(stats.skipped.values())
        reasons = "; ".join(f"{reason} {count:,}" for reason, count in stats.skipped.items())
        lines.append(f"  skipped   {total:,}: {reasons}")
    if stats.secrets_redacted:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(stats.secret_kinds.items()))
        lines.append(
            f"  secrets   {stats.secrets_redacted:,} redacted in {stats.files_redacted:,} "
            f"file(s) ({kinds})"
        )
    for name, outcome in stats.contributors.items():
        lines.append(f"  plugin    {name}: {outcome}")
    lines.extend(f"  note      {note}" for note in stats.notes)
    return "\n".join(lines)
