"""The FastAPI application: routes, error shapes and guards.

Every validation failure is a 422 whose ``detail`` lists ``{field, rule, message}``; no
request can reach a filesystem path, only the projects the server was started with.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from contextfuse.compaction import CompactRequest, PolicyError, compact
from contextfuse.errors import (
    ConfigError,
    KnowledgeBaseError,
    UnknownPlanError,
    UnknownStrategyError,
)
from contextfuse.flow.provider import ModelProvider
from contextfuse.server.guards import ASGIApp, BearerTokenGuard, BodySizeLimit, HostGuard
from contextfuse.server.pages import PublicPages
from contextfuse.server.projects import ProjectPool, WarmProject
from contextfuse.server.schemas import ERROR_RESPONSES, AssembleRequest
from contextfuse.server.settings import PROJECT_NAME_PATTERN, ServerSettings

__all__ = ["build_asgi", "create_app"]


class _Invalid(Exception):
    """Input that passed the schema but not a rule checked later (422)."""

    def __init__(self, field: str, rule: str, message: str) -> None:
        super().__init__(message)
        self.field, self.rule, self.message = field, rule, message


def _problem(field: str, rule: str, message: str) -> dict[str, str]:
    return {"field": field, "rule": rule, "message": message}


def create_app(
    pool: ProjectPool,
    providers: Mapping[str, ModelProvider],
    *,
    assemblies_at_once: int = 32,
) -> FastAPI:
    """The API over ``pool`` (already warm) with ``providers`` for compaction.

    At most ``assemblies_at_once`` assemblies run at a time; the others wait their turn.
    """

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        pool.close()

    app = FastAPI(
        title="contextfuse",
        summary="Context assembly and transcript compaction for LLM agents.",
        version=_version(),
        lifespan=lifespan,
        responses=ERROR_RESPONSES,  # the error bodies as sent (422: field/rule/message)
        # The docs page is served from the package's own assets (server/pages.py), not a CDN.
        docs_url=None,
        redoc_url=None,
    )

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for error in exc.errors():
            loc = [str(p) for p in error.get("loc", ()) if p != "body"]
            if error["type"] == "json_invalid":  # its loc is a character position
                loc = []
            problems.append(_problem(".".join(loc) or "body", error["type"], error["msg"]))
        return JSONResponse({"detail": problems}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # a body FastAPI could not decode (e.g. not UTF-8)
            problem = _problem("body", "unreadable_body", str(exc.detail))
            return JSONResponse({"detail": [problem]}, status_code=422)
        return JSONResponse({"detail": exc.detail}, exc.status_code, headers=exc.headers)

    @app.exception_handler(_Invalid)
    async def _invalid(_: Request, exc: _Invalid) -> JSONResponse:
        return JSONResponse(
            {"detail": [_problem(exc.field, exc.rule, exc.message)]}, status_code=422
        )

    @app.exception_handler(KnowledgeBaseError)
    async def _unavailable(_: Request, exc: KnowledgeBaseError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=503)

    def project_of(name: str, field: str) -> WarmProject:
        project = pool.get(name)
        if project is None:
            served = ", ".join(pool.names()) or "(none)"
            raise _Invalid(
                field, "served_project", f"project {name!r} is not served; served: {served}"
            )
        return project

    # On the event loop, not a worker thread: it answers while every thread is busy.
    @app.get("/healthz", summary="Liveness and the projects served.")
    async def healthz() -> dict[str, Any]:
        # stale: projects whose last refresh failed (served as they were), and why.
        return {"status": "ok", "projects": list(pool.names()), "stale": pool.problems()}

    @app.get("/v1/strategies", summary="Every strategy, judged against each served index.")
    def strategies(
        project: Annotated[str | None, Query(pattern=PROJECT_NAME_PATTERN)] = None,
    ) -> dict[str, Any]:
        names = [project_of(project, "project").name] if project else pool.names()
        return {"projects": {name: pool.projects[name].strategies() for name in names}}

    # Assemblies wait their turn here, in order of arrival, on the event loop: a process
    # computes on one core at a time, and more assemblies at once only add thread switching
    # (each runs its strategies on threads of its own) for the same total work.
    turns = anyio.CapacityLimiter(assemblies_at_once)

    @app.post("/v1/assemble", summary="Assemble context for a query within a token budget.")
    async def assemble(request: AssembleRequest) -> Response:
        project = project_of(request.project, "project")

        def answer() -> bytes:
            payload = project.assemble(
                request.query,
                request.budget,
                reserved=request.reserved,
                strategies=request.strategies,
                plan_id=request.plan_id,
                explain=request.explain,
            )
            return payload.model_dump_json().encode()  # the same bytes as JSONResponse's

        try:
            body = await anyio.to_thread.run_sync(answer, limiter=turns)
        except UnknownStrategyError as exc:
            raise _Invalid("strategies", "known_strategy", str(exc)) from exc
        except UnknownPlanError as exc:
            raise _Invalid("plan_id", "known_plan", str(exc)) from exc
        except ConfigError as exc:
            raise _Invalid("strategies", "usable_strategy", str(exc)) from exc
        return Response(body, media_type="application/json")

    @app.post("/v1/compact", summary="Compact an agent transcript (spec/fragment-compaction.md).")
    def compact_transcript(request: CompactRequest) -> JSONResponse:
        try:
            return JSONResponse(compact(request, providers))
        except PolicyError as exc:
            raise _Invalid(exc.field, "available_provider", str(exc)) from exc

    return app


def build_asgi(
    settings: ServerSettings, pool: ProjectPool, providers: Mapping[str, ModelProvider]
) -> ASGIApp:
    """The app behind its guards: the token (when set), else the Host check, and the body
    size limit.

    The pages (the explorer, the API docs) and their assets answer without the token: they
    hold no data and ask for the token themselves. Without a token the Host check covers
    them too.
    """
    api = create_app(pool, providers, assemblies_at_once=settings.assemblies_at_once)
    app: ASGIApp = BodySizeLimit(api, settings.max_body_bytes)
    if settings.token:
        return PublicPages(BearerTokenGuard(app, settings.token))
    # No token: only loopback names (DNS rebinding), see HostGuard.
    return HostGuard(PublicPages(app), frozenset(settings.allowed_hosts))


def _version() -> str:
    from contextfuse import __version__

    return __version__
