"""``contextfuse compact``: compact an agent transcript read from standard input."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from contextfuse.cli.output import emit_json, fail


def _policy(value: str | None, option: str) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        policy = json.loads(value)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint=option) from exc
    if not isinstance(policy, dict):
        raise click.BadParameter('must be a JSON object like {"providers": ["offline"]}', None)
    return policy


@click.command("compact")
@click.option(
    "--target-ratio",
    type=float,
    default=None,
    help="Desired output/input ratio of serialized UTF-8 bytes, in (0, 1] (default 0.1).",
)
@click.option(
    "--pin",
    "pins",
    type=click.IntRange(min=0),
    multiple=True,
    help="Keep message N verbatim (repeatable; default: every user message).",
)
@click.option(
    "--selective",
    is_flag=True,
    help='Decision-guided compaction with the offline provider: decision policy {"providers": '
    '["offline"]}.',
)
@click.option("--decision-policy", default=None, help="Decision policy JSON (enables selective).")
@click.option("--policy", default=None, help="Summary policy JSON (default: offline).")
def compact(
    target_ratio: float | None,
    pins: tuple[int, ...],
    selective: bool,
    decision_policy: str | None,
    policy: str | None,
) -> None:
    """Compact the transcript on standard input and print the result as JSON.

    The input is a JSON array of chat messages (OpenAI format) or a request object
    ({"messages": [...], "target_ratio": ..., ...}); options override its fields.
    """
    from pydantic import ValidationError

    from contextfuse.compaction import CompactRequest, PolicyError, collect_providers
    from contextfuse.compaction import compact as run_compaction
    from contextfuse.errors import ContextfuseError
    from contextfuse.plugin_manager import make_plugin_manager

    try:
        data = json.loads(sys.stdin.read())
    except ValueError as exc:
        fail(f"standard input is not JSON: {exc}")
        return
    fields: dict[str, Any] = data if isinstance(data, dict) else {"messages": data}
    if target_ratio is not None:
        fields["target_ratio"] = target_ratio
    if pins:
        fields["pinned_indices"] = list(pins)
    decision = _policy(decision_policy, "--decision-policy")
    if decision is None and selective:
        decision = {"providers": ["offline"]}
    if decision is not None:
        fields["decision_policy_ir"] = decision
    summary = _policy(policy, "--policy")
    if summary is not None:
        fields["policy_ir"] = summary
    try:
        request = CompactRequest.model_validate(fields)
        providers = collect_providers(make_plugin_manager())
        result = run_compaction(request, providers)
        emit_json(result)
        report = result["compaction"]
        if report["target_note"]:
            click.echo(
                f"note: target ratio {report['target_ratio']} not met ({report['ratio']}): "
                f"{report['target_note']}",
                err=True,
            )
    except ValidationError as exc:
        fail(
            "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']} ({e['type']})"
                for e in exc.errors()[:10]
            )
        )
    except (PolicyError, ContextfuseError) as exc:
        fail(str(exc))
