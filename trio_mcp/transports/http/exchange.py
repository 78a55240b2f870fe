"""The request and response the MCP HTTP rooms are written against, whoever speaks HTTP underneath.

Our h11 server's ``HttpRequest`` / ``HttpResponse`` satisfy these protocols, and so do the adapters of the
ASGI application (``trio_mcp.asgi``): the guard, the inbound check and the rooms exist once, for both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import trio

from .._http_types import Headers, HeadersLike

__all__ = ["Request", "Response", "RouteHandler"]


class Request(Protocol):
    """One HTTP request: its head, and its body through ``await read_body()``."""

    #: ``GET``, ``POST``...
    method: str
    #: The path, still percent-encoded, without the query.
    path: str
    #: The query string, still percent-encoded.
    query: str
    headers: Headers
    #: The ``Host`` as ``trio_mcp._core.hosts.parse_host`` spells it; None if absent or invalid.
    host: str | None
    #: The client's ``(host, port)``, when known.
    peer: tuple[str, int] | None

    @property
    def query_params(self) -> dict[str, list[str]]: ...

    @property
    def server_stopping(self) -> trio.Event:
        """Set when the server begins a graceful stop: long-lived responses should end."""
        ...

    async def read_body(self) -> bytes:
        """The whole body (bounded); raises ``RequestBodyError`` or ``ClientDisconnected``."""
        ...


class Response(Protocol):
    """The handler's side of one response: ``send()`` once, or ``start()``, ``write()``... ``finish()``."""

    @property
    def disconnected(self) -> trio.Event:
        """Set as soon as the client goes away before the response is complete."""
        ...

    @property
    def started(self) -> bool: ...

    @property
    def finished(self) -> bool: ...

    def cancel_on_disconnect(self, scope: trio.CancelScope, *, or_shutdown: bool = False) -> None:
        """Cancel ``scope`` when the client goes away (and with ``or_shutdown``, when a graceful stop begins)."""
        ...

    async def send(self, status: int, headers: HeadersLike = (), body: bytes = b"") -> None: ...

    async def start(self, status: int, headers: HeadersLike = (), first: bytes = b"") -> None: ...

    async def write(self, data: bytes) -> None: ...

    async def finish(self, last: bytes = b"") -> None: ...


RouteHandler = Callable[[Request, Response], Awaitable[None]]
"""A route of your own beside the MCP endpoint: ``async def handler(request, response) -> None`` that must
respond (``await response.send(200, [("content-type", "text/plain")], b"ok")``)."""
