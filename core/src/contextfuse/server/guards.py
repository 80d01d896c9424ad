"""ASGI guards in front of the app: the Host name, the bearer token and the body size limit.

Both are plain ASGI middleware so they run before any routing or body parsing.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["BearerTokenGuard", "BodySizeLimit", "HostGuard", "host_allowed"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _reply(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BearerTokenGuard:
    """Answer 401 unless the request carries ``Authorization: Bearer <token>``.

    The comparison is constant-time (``hmac.compare_digest``) on every request.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = b""
        for key, value in scope.get("headers", ()):
            if key == b"authorization":
                given = value
        if not hmac.compare_digest(given, self._expected):
            await _reply(
                send,
                401,
                "missing or wrong bearer token",
                [(b"www-authenticate", b'Bearer realm="contextfuse"')],
            )
            return
        await self.app(scope, receive, send)


def host_allowed(host: str, extra: frozenset[str] = frozenset()) -> bool:
    """True for a loopback name (``localhost``, 127.0.0.0/8, ``::1``) or one of ``extra``.

    ``host`` is a ``Host`` header: a name or address, with an optional port.
    """
    name = host.strip().lower()
    if name.startswith("["):  # [::1]:8765
        name = name[1 : name.find("]")] if "]" in name else name
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    name = name.rstrip(".")
    if name in extra or name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostGuard:
    """Answer 403 unless the ``Host`` header names this machine's loopback (or ``allowed``).

    A server without a token trusts whoever reaches it on loopback; a web page can reach it
    too by pointing a name it controls at 127.0.0.1 (DNS rebinding), and then its requests
    carry that name as ``Host``. Refusing other names closes that door.
    """

    def __init__(self, app: ASGIApp, allowed: frozenset[str] = frozenset()) -> None:
        self.app = app
        self._allowed = frozenset(name.lower() for name in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = ""
        for key, value in scope.get("headers", ()):
            if key == b"host":
                host = value.decode("latin-1")
        if not host_allowed(host, self._allowed):
            await _reply(
                send,
                403,
                f"host {host[:100]!r} is not allowed: a server without a token answers only "
                "loopback names (localhost, 127.0.0.1, [::1]) and the configured allowed_hosts",
                [],
            )
            return
        await self.app(scope, receive, send)


class BodySizeLimit:
    """Answer 413 when a request body exceeds ``limit`` bytes, declared or streamed.

    The body is read here (at most ``limit`` bytes) and handed to the app in one piece.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope.get("headers", ()):
            if key == b"content-length" and (not value.isdigit() or int(value) > self.limit):
                await self._refuse(send)
                return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            body += message.get("body", b"")
            if len(body) > self.limit:
                await self._refuse(send)
                return
            more = bool(message.get("more_body", False))
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        await _reply(
            send,
            413,
            f"request body larger than the limit of {self.limit} bytes",
            [(b"connection", b"close")],
        )
