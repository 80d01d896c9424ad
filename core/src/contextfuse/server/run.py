"""Start the service: warm the projects, bind the socket, run uvicorn until stopped."""

from __future__ import annotations

import gc
import os
import socket
from collections.abc import Callable, Mapping
from typing import Any

from contextfuse.compaction import collect_providers
from contextfuse.compaction.openai_chat import OpenAIChatProvider
from contextfuse.flow.provider import ModelProvider
from contextfuse.server.projects import ProjectPool
from contextfuse.server.settings import ServerSettings

__all__ = ["bind", "collect_for_requests", "configured_providers", "prepare", "serve"]


def collect_for_requests() -> None:
    """Collect garbage as a process answering requests should: an assembly makes thousands of
    short-lived objects and few cycles, and the default thresholds collected dozens of times a
    request, each time scanning the objects of every request under way."""
    gc.set_threshold(100_000, 50, 100)


def configured_providers(
    settings: ServerSettings, env: Mapping[str, str] | None = None
) -> list[ModelProvider]:
    """The OpenAI-compatible providers the settings file names."""
    env = os.environ if env is None else env
    return [
        OpenAIChatProvider(
            name=p.name,
            base_url=p.base_url,
            model=p.model,
            api_key=env.get(p.api_key_env) if p.api_key_env else None,
            input_usd_per_mtok=p.input_usd_per_mtok,
            output_usd_per_mtok=p.output_usd_per_mtok,
        )
        for p in settings.providers
    ]


def prepare(settings: ServerSettings, pm: Any) -> tuple[ProjectPool, dict[str, ModelProvider]]:
    """Check exposure, collect providers and warm every project's index."""
    settings.check_exposure()
    providers = collect_providers(pm, configured_providers(settings))
    pool = ProjectPool(
        settings.projects, refresh_interval_s=settings.refresh_interval_s, store=settings.store
    )
    pool.warm()
    return pool, providers


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(128)
    return sock


def serve(
    settings: ServerSettings,
    pm: Any,
    *,
    announce: Callable[[str], None] = print,
) -> None:
    """Run the service until interrupted; ``announce`` gets the URL once it listens."""
    import uvicorn

    from contextfuse.server.app import build_asgi

    collect_for_requests()
    pool, providers = prepare(settings, pm)
    app = build_asgi(settings, pool, providers)
    sock = bind(settings.host, settings.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    announce(f"http://{shown}:{port}")
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_keep_alive=30)
    gc.freeze()  # what start-up built lives as long as the process: never scan it again
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
