"""``contextfuse plan add|decide|close|show|list``: the plan and decision store."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from contextfuse.cli.output import FORMAT_OPTION, emit_json, fail

if TYPE_CHECKING:
    from contextfuse.kb.plans import SQLitePlanStore
    from contextfuse.models import Decision, Plan

_REPO = click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The repository whose plans these are (default: the one the current folder is in).",
)
_INDEX_DIR = click.option(
    "--index-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the index lives (default: <repo>/.contextfuse).",
)


def _common(func: Callable[..., Any]) -> Callable[..., Any]:
    return _REPO(_INDEX_DIR(FORMAT_OPTION(func)))


@contextmanager
def _store(repo: Path | None, index_dir: Path | None) -> Iterator[SQLitePlanStore]:
    """The plan store; any contextfuse error becomes ``error: ...`` and exit status 2."""
    from contextfuse.cli.root_choice import current_root
    from contextfuse.errors import ContextfuseError
    from contextfuse.kb import open_plan_store

    try:
        store = open_plan_store(repo or current_root(), index_dir=index_dir)
    except ContextfuseError as exc:
        fail(str(exc))
        return
    try:
        yield store
    except ContextfuseError as exc:
        fail(str(exc))
    finally:
        store.close()


def _body(body: str | None, body_file: Path | None) -> str:
    if body is not None and body_file is not None:
        fail("give --body or --body-file, not both")
    if body_file is None:
        return body or ""
    if str(body_file) == "-":
        return sys.stdin.read()
    try:
        return body_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read --body-file {body_file}: {exc}")
        return ""


def _line(record: Plan | Decision) -> str:
    from contextfuse.kb.plans import render

    return render(record, 0)


@click.group("plan")
def plan() -> None:
    """Plans and the decisions taken under them (stored with the index)."""


@plan.command("add")
@click.argument("title")
@click.option("--body", default=None, help="What the plan is about.")
@click.option(
    "--body-file", type=click.Path(path_type=Path), default=None, help="Read the body ('-': stdin)."
)
@click.option("--parent", default=None, help="The id of the parent plan.")
@_common
def add(
    title: str,
    body: str | None,
    body_file: Path | None,
    parent: str | None,
    repo: Path | None,
    index_dir: Path | None,
    fmt: str,
) -> None:
    """Create an active plan called TITLE."""
    from contextfuse.kb.plans import dump

    text = _body(body, body_file)
    with _store(repo, index_dir) as store:
        created = store.add_plan(title, text, parent=parent)
        if fmt == "json":
            emit_json(dump(created))
        else:
            click.echo(created.id)


@plan.command("decide")
@click.argument("plan_id")
@click.argument("title")
@click.option("--body", default=None, help="The decision and why it was taken.")
@click.option(
    "--body-file", type=click.Path(path_type=Path), default=None, help="Read the body ('-': stdin)."
)
@click.option(
    "--status",
    type=click.Choice(["proposed", "accepted", "rejected", "deprecated"]),
    default="accepted",
    show_default=True,
)
@click.option(
    "--supersedes",
    multiple=True,
    help="The id of a decision this one replaces (repeatable); it becomes superseded.",
)
@_common
def decide(
    plan_id: str,
    title: str,
    body: str | None,
    body_file: Path | None,
    status: str,
    supersedes: tuple[str, ...],
    repo: Path | None,
    index_dir: Path | None,
    fmt: str,
) -> None:
    """Record a decision called TITLE under plan PLAN_ID."""
    from contextfuse.kb.plans import dump

    text = _body(body, body_file)
    with _store(repo, index_dir) as store:
        made = store.decide(plan_id, title, text, status=status, supersedes=supersedes)
        if fmt == "json":
            emit_json(dump(made))
        else:
            click.echo(made.id)


@plan.command("close")
@click.argument("plan_id")
@click.option("--abandoned", is_flag=True, help="The plan was given up (default: done).")
@_common
def close(
    plan_id: str, abandoned: bool, repo: Path | None, index_dir: Path | None, fmt: str
) -> None:
    """Close plan PLAN_ID as done (or abandoned)."""
    from contextfuse.kb.plans import dump

    with _store(repo, index_dir) as store:
        closed = store.close_plan(plan_id, "abandoned" if abandoned else "done")
        if fmt == "json":
            emit_json(dump(closed))
        else:
            click.echo(_line(closed))


@plan.command("show")
@click.argument("record_id")
@_common
def show(record_id: str, repo: Path | None, index_dir: Path | None, fmt: str) -> None:
    """Show a plan with its ancestors and their decisions (nearest first), or a decision."""
    from contextfuse.kb.plans import dump, render

    with _store(repo, index_dir) as store:
        context = store.get_plan(record_id)
        if context is not None:
            plans = {p.id: p for p in context.plans}
            if fmt == "json":
                emit_json(
                    {
                        "plan": dump(context.plans[0]),
                        "ancestors": [dump(p) for p in context.plans[1:]],
                        "decisions": [
                            dump(d, plans.get(d.plan_id or "")) for d in context.decision_records
                        ],
                    }
                )
                return
            titles = {p.id: p.title for p in context.plans}
            titles.update({d.id: d.title for d in context.decision_records})
            blocks = [render(context.plans[0], 9, titles)]
            blocks += [render(p, 4, titles) for p in context.plans[1:]]
            blocks += [render(d, 4, titles) for d in context.decision_records]
            click.echo("\n\n".join(blocks))
            return
        decision = store.decision(record_id)
        if decision is None:
            fail(f"no plan or decision {record_id!r}")
            return
        if fmt == "json":
            emit_json(dump(decision))
        else:
            titles = {}
            links = [*decision.supersedes, *decision.superseded_by]
            for record in store.get_records([store.decision_uri(i) for i in links]).values():
                titles[record.id] = record.title
            if decision.plan_id:
                parent = store.plan(decision.plan_id)
                if parent is not None:
                    titles[parent.id] = parent.title
            click.echo(render(decision, 9, titles))


@plan.command("list")
@click.option(
    "--status",
    type=click.Choice(["active", "done", "abandoned"]),
    default=None,
    help="Only plans of this status.",
)
@click.option("--decisions", is_flag=True, help="List the decisions imported from ADR files too.")
@_common
def list_plans(
    status: str | None, decisions: bool, repo: Path | None, index_dir: Path | None, fmt: str
) -> None:
    """List plans, newest first."""
    from contextfuse.kb.plans import dump

    with _store(repo, index_dir) as store:
        plans = store.list_plans(status)
        imported = store.list_decisions(imported=True) if decisions else []
        if fmt == "json":
            data: dict[str, Any] = {"plans": [dump(p) for p in plans]}
            if decisions:
                data["decisions"] = [dump(d) for d in imported]
            emit_json(data)
            return
        records: list[Plan | Decision] = [*plans, *imported]
        for record in records:
            click.echo(_line(record))
        if not plans and not imported:
            click.echo("no plans", err=True)
