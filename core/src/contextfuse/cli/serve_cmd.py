"""``contextfuse serve``: the HTTP API over the projects named at start-up."""

from __future__ import annotations

from pathlib import Path

import click

from contextfuse.cli.output import fail, require_serve_extra


def parse_projects(values: tuple[str, ...]) -> dict[str, Path]:
    """``NAME=PATH`` pairs as a mapping; a malformed pair is a usage error naming it."""
    projects: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"{value!r} is not NAME=PATH", param_hint="--project")
        if name in projects:
            raise click.BadParameter(f"project {name!r} is given twice", param_hint="--project")
        projects[name] = Path(path)
    return projects


def project_name(directory: str) -> str:
    """A valid project name for a folder called ``directory``."""
    cleaned = "".join(c if c.isalnum() or c in "._-" else "-" for c in directory).lstrip("._-")
    return cleaned[:64] or "project"


@click.command("serve")
@click.option("--host", default=None, help="Address to bind (default 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="Default 8765; 0: any.")
@click.option(
    "--project",
    "projects",
    multiple=True,
    metavar="NAME=PATH",
    help="Serve the repository at PATH as project NAME (repeatable).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="A TOML settings file ([server], [projects], [providers.<name>]).",
)
@click.option(
    "--token",
    envvar="CONTEXTFUSE_SERVER_TOKEN",
    default=None,
    help="Bearer token every request must carry; required off loopback. Prefer the "
    "environment variable CONTEXTFUSE_SERVER_TOKEN, which other users cannot see.",
)
@click.option(
    "--store",
    default=None,
    metavar="URL",
    help="Index and serve every project from this store: a backend provider's name or URL, "
    "e.g. postgresql://host/db (default: [server] store, else each project's [index] store).",
)
@click.option("--max-body-bytes", type=click.IntRange(min=1024), default=None)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=None,
    help="Processes answering requests over the same indexes (default 1); the main "
    "process refreshes them.",
)
@click.option(
    "--refresh-interval",
    type=click.FloatRange(min=0),
    default=None,
    help="Seconds between incremental index refreshes (default 30).",
)
def serve(
    host: str | None,
    port: int | None,
    projects: tuple[str, ...],
    config_path: Path | None,
    token: str | None,
    store: str | None,
    max_body_bytes: int | None,
    refresh_interval: float | None,
    workers: int | None,
) -> None:
    """Serve POST /v1/assemble, POST /v1/compact, GET /v1/strategies and /healthz.

    Only the projects named here or in the settings file are served: a request names a
    project, never a path.
    """
    require_serve_extra()
    from contextfuse.errors import ContextfuseError
    from contextfuse.plugin_manager import make_plugin_manager
    from contextfuse.server.run import serve as run_server
    from contextfuse.server.settings import load_server_settings

    try:
        settings = load_server_settings(
            config_path,
            host=host,
            port=port,
            projects=parse_projects(projects),
            token=token,
            store=store,
            max_body_bytes=max_body_bytes,
            refresh_interval_s=refresh_interval,
            workers=workers,
        )
        click.echo(f"indexing {len(settings.projects)} project(s)...", err=True)
        from contextfuse.cli.lock_notice import announce_lock_wait

        for path in settings.projects.values():  # a wait on another process is said, not hung
            announce_lock_wait(path / ".contextfuse")

        def announce(url: str) -> None:
            click.echo(f"contextfuse listening on {url}", err=True)

        if settings.workers > 1:
            from contextfuse.server.workers import serve_workers

            serve_workers(settings, announce=announce)
        else:
            run_server(settings, make_plugin_manager(), announce=announce)
    except ContextfuseError as exc:
        fail(str(exc))
