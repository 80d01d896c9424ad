"""Spread kept-alive connections over the worker processes.

The workers accept connections from one listening socket, and a client keeps its connection:
whichever worker's event loop wakes first takes a burst of new connections, so 30 clients
over 4 workers came out as 3, 4, 9 and 14. Each worker runs one request at a time on the CPU
(the GIL) and the system shares the cores evenly among busy workers, so the clients of the
crowded worker waited three times as long as the others: the p95 latency of the service was
twice its p50.

Each worker counts the requests it is answering in a slot of an array shared by all of them.
A worker answering more than its share of all requests under way (plus one, so that counts
that differ by chance do not churn connections) ends the connection after the response
(``Connection: close``). The client connects again, and a worker with time to accept it, a
less busy one, takes it more often than not. HTTP clients reconnect by themselves; a response
is never held back or changed otherwise.
"""

from __future__ import annotations

from collections.abc import MutableMapping, MutableSequence
from typing import Any

from contextfuse.server.guards import ASGIApp, Receive, Scope, Send

__all__ = ["ConnectionBalancer"]


class ConnectionBalancer:
    """ASGI middleware of worker ``slot``: ``loads[i]`` is worker ``i``'s requests under way.

    Only worker ``slot`` writes ``loads[slot]`` (from its event loop, one thread), so the
    array needs no lock; the others' slots are read as they are.
    """

    def __init__(self, app: ASGIApp, loads: MutableSequence[int], slot: int) -> None:
        self._app = app
        self._loads = loads
        self._slot = slot

    def crowded(self) -> bool:
        """True when this worker answers more than its share of the requests under way."""
        loads = self._loads
        mine = loads[self._slot]
        return mine > sum(loads) / len(loads) + 1

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def send_closing_when_crowded(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and self.crowded():
                headers = [(k, v) for k, v in message.get("headers", []) if k != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        self._loads[self._slot] += 1
        try:
            await self._app(scope, receive, send_closing_when_crowded)
        finally:
            self._loads[self._slot] -= 1
