"""The service's pages: the context explorer at ``/`` and the API docs at ``/docs``.

The pages and their assets hold no data, so they answer without the bearer token: a browser
cannot send a header when it navigates. Each page asks for the token when the API answers
401 and sends it on its own API calls; the schema and every data endpoint stay behind the
guard. Every asset ships in the package (``contextfuse/server/static``) and is read when
asked for, never at import; a Content-Security-Policy keeps the pages from loading anything
from another origin.
"""

from __future__ import annotations

import sys
from importlib import resources
from typing import TYPE_CHECKING

from contextfuse.server.guards import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

__all__ = ["PAGES", "PublicPages"]

#: Public paths -> the asset each one serves.
PAGES = {"/": "explorer.html", "/docs": "docs.html"}
_STATIC = "/static/"
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}
# Swagger UI sets style attributes and loads its icons as data: URIs; nothing may come from
# another origin, and the pages may only talk to this server.
_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)


def _root() -> Traversable:
    return resources.files("contextfuse.server") / "static"


def _content_type(name: str) -> str | None:
    dot = name.rfind(".")
    return _TYPES.get(name[dot:]) if dot >= 0 else None


def _asset(name: str) -> Traversable | None:
    """The asset called ``name`` (a path below ``static/``), None when there is none.

    Only names made of plain path parts are looked up, so no request can leave the folder.
    """
    parts = name.split("/")
    if any(part in ("", ".", "..") or "\\" in part for part in parts):
        return None
    if _content_type(parts[-1]) is None:
        return None
    entry = _root()
    for part in parts:
        entry = entry / part
    return entry if entry.is_file() else None


class PublicPages:
    """Serve the pages and ``/static/`` assets (GET and HEAD); pass everything else on.

    ``protected`` is the API behind its guards; a page's path never reaches it.
    """

    def __init__(self, protected: ASGIApp) -> None:
        self.protected = protected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        name = PAGES.get(path) or (path[len(_STATIC) :] if path.startswith(_STATIC) else None)
        if name is None or scope.get("method") not in ("GET", "HEAD"):
            await self.protected(scope, receive, send)
            return
        asset = _asset(name)
        if asset is None:
            await _respond(send, 404, b"not found\n", "text/plain; charset=utf-8", scope)
            return
        body = asset.read_bytes()
        await _respond(send, 200, body, _content_type(asset.name) or "", scope)


async def _respond(send: Send, status: int, body: bytes, content_type: str, scope: Scope) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"content-security-policy", _POLICY.encode()),
                (b"x-content-type-options", b"nosniff"),
                (b"referrer-policy", b"no-referrer"),
                (b"cache-control", b"no-cache"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
