"""Worker processes spread kept-alive connections: a crowded worker ends them after a response."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from contextfuse.server.balance import ConnectionBalancer


def answer(loads: list[int], slot: int) -> tuple[list[dict[str, Any]], list[int]]:
    """One GET through the balancer of worker ``slot``: what was sent, and the counts the
    app saw while it answered."""
    seen: list[int] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.extend(loads)
        headers = [(b"content-type", b"text/plain"), (b"connection", b"keep-alive")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"ok"})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/", "headers": []}
    asyncio.run(ConnectionBalancer(app, loads, slot)(scope, receive, send))
    return sent, seen


def connection_header(sent: list[dict[str, Any]]) -> list[bytes]:
    return [v for k, v in sent[0]["headers"] if k == b"connection"]


def test_a_worker_with_its_share_of_the_requests_keeps_the_connection() -> None:
    sent, _ = answer([0, 2, 1, 2], slot=0)
    assert connection_header(sent) == [b"keep-alive"]


def test_a_worker_with_more_than_its_share_closes_the_connection_after_the_response() -> None:
    sent, _ = answer([3, 0, 1, 0], slot=0)
    assert connection_header(sent) == [b"close"]
    assert sent[1] == {"type": "http.response.body", "body": b"ok"}  # the answer is whole


def test_a_request_counts_for_its_worker_while_it_is_answered_and_not_after() -> None:
    loads = [0, 5]
    _, seen = answer(loads, slot=0)
    assert seen == [1, 5]
    assert loads == [0, 5]


def test_a_request_whose_answer_fails_stops_counting() -> None:
    loads = [0, 0]

    async def failing(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("the app failed")

    scope = {"type": "http", "method": "GET", "path": "/", "headers": []}
    with pytest.raises(RuntimeError):
        asyncio.run(ConnectionBalancer(failing, loads, 1)(scope, None, None))
    assert loads == [0, 0]


def test_the_lifespan_passes_through_uncounted() -> None:
    loads = [0]
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])
        assert loads == [0]

    asyncio.run(ConnectionBalancer(app, loads, 0)({"type": "lifespan"}, None, None))
    assert seen == ["lifespan"]
