"""``contextfuse index``: build or refresh a repository's index."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
@click.option(
    "--store",
    default=None,
    metavar="URL",
    help="Index into this store: a backend provider's name or URL, e.g. postgresql://host/db "
    "(default: the index file).",
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
@click.option("--stats", "show_stats", is_flag=True, help="Also show the storage tiers.")
@click.option(
    "--hot-days",
    type=click.FloatRange(min=0, min_open=True),
    help="Tier policy: hot until idle this many days (stored with the index).",
)
@click.option(
    "--warm-days",
    type=click.FloatRange(min=0, min_open=True),
    help="Tier policy: warm until idle this many days.",
)
@click.option(
    "--retention-days",
    type=click.FloatRange(min=0, min_open=True),
    help="Tier policy: a cold file idle this many days is evicted from the index.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no text summary.")
def index(
    path: Path | None,
    index_dir: Path | None,
    store: str | None,
    rebuild: bool,
    output_format: str,
    show_stats: bool,
    hot_days: float | None,
    warm_days: float | None,
    retention_days: float | None,
    quiet: bool,
) -> None:
    """Build or refresh the index of PATH (default: the current repository).

    Unchanged files are not read again; a refresh without changes takes a moment.
    """
    from contextfuse.cli.lock_notice import announce_lock_wait
    from contextfuse.cli.progress import progress_bar
    from contextfuse.cli.root_choice import current_root
    from contextfuse.errors import ConfigError, KnowledgeBaseError
    from contextfuse.kb import index as build_index

    root = path if path is not None else current_root(quiet=quiet)
    announce_lock_wait(index_dir or root / ".contextfuse")
    flags = {"hot_days": hot_days, "warm_days": warm_days, "retention_days": retention_days}
    try:
        # Read before indexing: a bad [tiers] section fails before any work is done.
        overrides = _tier_overrides(root, flags)
        with progress_bar(enabled=not quiet and output_format == "text") as progress:
            if store is None:
                stats = build_index(
                    root,
                    index_dir=index_dir,
                    rebuild=rebuild,
                    progress=progress,
                )
            else:
                stats = _index_into(store, root, index_dir, rebuild, progress)
        tiers = _apply_tiers(Path(stats.root), store, index_dir, overrides)
    except (KnowledgeBaseError, ConfigError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if output_format == "json":
        click.echo(json.dumps({**stats.to_dict(), "tiers": tiers}, indent=2))
    elif not quiet:
        click.echo(_summary(stats))
        if show_stats:
            click.echo(_tier_summary(tiers))


def _index_into(
    store: str, path: Path | None, index_dir: Path | None, rebuild: bool, progress: Any
) -> IndexStats:
    """Index through the backend provider that ``store`` names (``--store``)."""
    from contextfuse.kb.api import resolve_root
    from contextfuse.plugin_manager import make_plugin_manager
    from contextfuse.stores import choose_provider, store_config

    pm = make_plugin_manager(on_error="warn")
    provider = choose_provider(pm, store)
    root = resolve_root(path if path is not None else ".")
    config = store_config(store, index_dir)
    return provider.index(root, config, rebuild=rebuild, progress=progress, pm=pm)  # type: ignore[no-any-return]


def _tier_overrides(root: Path, flags: dict[str, float | None]) -> dict[str, float]:
    """The tier policy days to store: the project's ``[tiers]`` section, then the options."""
    from contextfuse.config import load_config
    from contextfuse.kb.api import resolve_root

    configured = load_config(resolve_root(root)).tiers.model_dump(exclude_none=True)
    return {**configured, **{key: value for key, value in flags.items() if value is not None}}


def _apply_tiers(
    root: Path, store: str | None, index_dir: Path | None, overrides: dict[str, float]
) -> dict[str, Any]:
    """Store a changed tier policy, move files between tiers; returns them for the summary."""
    from pydantic import ValidationError

    from contextfuse.errors import ConfigError
    from contextfuse.kb import open_backends
    from contextfuse.kb.tiers import TierPolicy, tier_store_of

    # The embedded store opens without loading the plugins; another one is found among them.
    backends = open_backends(root, index_dir=index_dir, store=store)
    try:
        tiers = tier_store_of(backends)
        if tiers is None:
            return {}
        current = tiers.policy()
        try:
            policy = TierPolicy.model_validate({**current.model_dump(), **overrides})
        except ValidationError as exc:
            raise ConfigError(f"tier policy: {exc.errors()[0]['msg']}") from None
        if policy != current:
            tiers.set_policy(policy)
        moved = tiers.apply()
        return {
            "files": tiers.counts(),
            "compacted": tiers.storage(),
            "moved": moved,
            "policy": policy.model_dump(),
        }
    finally:
        backends.nodes.close()


def _tier_summary(tiers: dict[str, Any]) -> str:
    if not tiers:
        return "  tiers     (this store has none)"
    files, policy, moved = tiers["files"], tiers["policy"], tiers["moved"]
    compacted = tiers["compacted"]
    return "\n".join(
        [
            f"  tiers     hot {files['hot']:,}  warm {files['warm']:,}  "
            f"cold {files['cold']:,} files, {files['evicted']:,} evicted",
            f"  cold      {compacted['files']:,} files compacted: "
            f"{compacted['source_bytes'] / 1e3:,.1f} kB of source kept in "
            f"{compacted['stored_bytes'] / 1e3:,.1f} kB",
            f"  policy    hot until idle {policy['hot_days']:g} d, warm until "
            f"{policy['warm_days']:g} d, evicted after {policy['retention_days']:g} d",
            f"  moved     {moved['admitted']:,} admitted, {moved['to_warm']:,} to warm, "
            f"{moved['to_cold']:,} to cold, {moved['compacted']:,} compacted, "
            f"{moved['restored']:,} restored, {moved['evicted']:,} evicted",
        ]
    )


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
    if stats.decisions_imported:
        lines.append(
            f"  decisions {stats.decisions_imported:,} ADR file(s) imported, updated or removed"
        )
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
