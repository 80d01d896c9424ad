"""``contextfuse assemble QUERY``: the context an agent should read, within a budget."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from contextfuse.cli.output import emit_json, fail


@click.command("assemble")
@click.argument("query")
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The repository to draw context from (default: the one the current folder is in).",
)
@click.option(
    "--budget",
    type=int,
    default=8000,
    show_default=True,
    help="Maximum tokens of the payload, reserve included (100 to 2,000,000).",
)
@click.option(
    "--reserved",
    type=int,
    default=0,
    show_default=True,
    help="Tokens of the budget kept free (e.g. for a system prompt).",
)
@click.option(
    "--strategy",
    "strategies",
    multiple=True,
    help="Run this strategy (repeatable); default: the enabled ones.",
)
@click.option("--plan-id", default=None, help="The plan this context is for.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
)
@click.option(
    "--explain",
    is_flag=True,
    help="Say per fragment which strategies returned it, its score and its depth.",
)
@click.option(
    "--index-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the index lives (default: <repo>/.contextfuse).",
)
@click.option(
    "--store",
    default=None,
    metavar="URL",
    help="The store: a backend provider's name or URL, e.g. postgresql://host/db "
    "(default: [index] store, else the index file).",
)
@click.option("--no-refresh", is_flag=True, help="Use the index as it is (build it if missing).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no notices.")
@click.option(
    "--no-daemon",
    is_flag=True,
    help="Assemble in this process even when a daemon serves the index (contextfuse daemon).",
)
def assemble(
    query: str,
    repo: Path | None,
    budget: int,
    reserved: int,
    strategies: tuple[str, ...],
    plan_id: str | None,
    fmt: str,
    explain: bool,
    index_dir: Path | None,
    store: str | None,
    no_refresh: bool,
    quiet: bool,
    no_daemon: bool,
) -> None:
    """Assemble context for QUERY (``-`` reads it from standard input)."""
    from contextfuse.cli.assembler_source import open_assembler
    from contextfuse.cli.lock_notice import announce_lock_wait
    from contextfuse.cli.progress import progress_bar
    from contextfuse.cli.render import render_markdown
    from contextfuse.cli.root_choice import current_root
    from contextfuse.errors import ContextfuseError
    from contextfuse.limits import clean_text, empty_payload_hint, request_problem

    if query == "-":
        query = sys.stdin.read()
    query = clean_text(query)
    problem = request_problem(query, budget, reserved)
    if problem is not None:
        fail(problem[1])
    root = repo if repo is not None else current_root(quiet=quiet)
    try:
        with open_assembler(root, index_dir=index_dir, store=store) as assembler:
            if not no_refresh or not assembler.has_index():
                announce_lock_wait(assembler.index_dir or root / ".contextfuse")
                with progress_bar(enabled=not quiet) as progress:
                    assembler.refresh(progress=progress)
            payload = assembler.assemble(
                query,
                budget,
                reserved=reserved,
                strategies=list(strategies) or None,
                plan_id=plan_id,
                explain=explain,
            )
            notices = assembler.notices
    except ContextfuseError as exc:
        fail(str(exc))
        return
    if not payload.fragments:
        notices.append(empty_payload_hint(budget))
    if not quiet:
        for notice in notices:
            click.echo(f"note: {notice}", err=True)
    if fmt == "json":
        emit_json(payload.model_dump(mode="json"))
        return
    click.echo(render_markdown(payload), nl=False)
    if explain and payload.explanation:
        click.echo(render_explanation(payload.explanation))


def render_explanation(explanation: dict[str, object]) -> str:
    """The ``--explain`` section in markdown."""
    lines = ["", "## Why these fragments", ""]
    allocations = explanation.get("allocations") or []
    for name, confidence, tokens in allocations:  # type: ignore[attr-defined]
        lines.append(f"- strategy `{name}`: confidence {confidence:.2f}, {tokens} tokens")
    lines.append("")
    for item in explanation.get("fragments") or []:  # type: ignore[attr-defined]
        parts = ", ".join(f"{k} {v:.3f}" for k, v in item["components"].items())
        lines.append(
            f"- `{item['uko_node']}` depth {item['depth']} ({item['depth_reason']}); from "
            f"{', '.join(item['strategies']) or '-'}; score {item['score']:.3f} = {parts}"
        )
    omitted = explanation.get("omitted") or []
    if omitted:
        lines += ["", "Did not fit:"]
        for item in omitted[:20]:  # type: ignore[index]
            lines.append(f"- `{item['uko_node']}` depth {item['depth']}, {item['tokens']} tokens")
    return "\n".join(lines)
