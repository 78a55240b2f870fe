"""The request and response the MCP HTTP rooms are written against, whoever speaks HTTP underneath.

Our h11 server's ``HttpRequest`` / ``HttpResponse`` satisfy these protocols, and so do the adapters of the
ASGI application (``trio_mcp.asgi``): the guard, the inbound check and the rooms exist once, for both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import trio

from .._http_types import Headers, HeadersLike, encode_headers

__all__ = ["Request", "Response", "ResponseWithHeaders", "RouteHandler"]


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
    def gone(self) -> bool:
        """Whether ``disconnected`` is set, asked without making the event (most responses never need it)."""
        ...

    @property
    def started(self) -> bool: ...

    @property
    def finished(self) -> bool: ...

    def cancel_on_disconnect(self, scope: trio.CancelScope, *, or_shutdown: bool = False) -> None:
        """Cancel ``scope`` when the client goes away (and with ``or_shutdown``, when a graceful stop begins)."""
        ...

    def cancel_task_on_disconnect(self) -> bool:
        """Have the client going away cancel the whole task serving this response, if this server can (its
        task serves nothing else meanwhile); False if not, and the handler gives a scope to
        ``cancel_on_disconnect`` instead."""
        ...

    @property
    def handler_scope(self) -> trio.CancelScope | None:
        """A cancel scope the handler already runs in, whose cancel ends the handler but not the connection (our h11
        server's: see ``HttpResponse.handler_scope``); None where the server has none (the handler enters a scope of
        its own)."""
        ...

    def after_cancel(self, end: Callable[[], Awaitable[None]]) -> None:
        """What to await once the handler was cancelled through ``handler_scope`` and has unwound: the rest of the
        response. Only where ``handler_scope`` is not None."""
        ...

    async def send(self, status: int, headers: HeadersLike = (), body: bytes = b"") -> None: ...

    async def start(self, status: int, headers: HeadersLike = (), first: bytes = b"", *, hold: bool = False) -> None:
        """Begin a streamed response with ``first``; with ``hold`` the head waits for the next write (and goes
        with it), ``write(b"")`` sending it alone."""
        ...

    def withdraw(self) -> bool:
        """Take back a head started with ``hold`` that has not gone out, so the handler can still answer otherwise;
        False once anything was sent."""
        ...

    async def write(self, data: bytes, *, shielded: bool = False) -> None:
        """Send a piece of a started response; with ``shielded``, a cancelled writer still sends it whole."""
        ...

    async def finish(self, last: bytes = b"", *, shielded: bool = False) -> None: ...


class ResponseWithHeaders:
    """A response whose every head carries ``extra`` headers too (CORS headers, a fresh ``DPoP-Nonce``)."""

    __slots__ = ("_extra", "_inner")

    def __init__(self, inner: Response, extra: HeadersLike) -> None:
        self._inner = inner
        self._extra = encode_headers(extra)

    @property
    def disconnected(self) -> trio.Event:
        return self._inner.disconnected

    @property
    def gone(self) -> bool:
        return self._inner.gone

    @property
    def started(self) -> bool:
        return self._inner.started

    @property
    def finished(self) -> bool:
        return self._inner.finished

    def cancel_on_disconnect(self, scope: trio.CancelScope, *, or_shutdown: bool = False) -> None:
        self._inner.cancel_on_disconnect(scope, or_shutdown=or_shutdown)

    def cancel_task_on_disconnect(self) -> bool:
        return self._inner.cancel_task_on_disconnect()

    @property
    def handler_scope(self) -> trio.CancelScope | None:
        return self._inner.handler_scope

    def after_cancel(self, end: Callable[[], Awaitable[None]]) -> None:
        self._inner.after_cancel(end)

    def _with_extra(self, headers: HeadersLike) -> list[tuple[bytes, bytes]]:
        return [*encode_headers(headers), *self._extra]

    async def send(self, status: int, headers: HeadersLike = (), body: bytes = b"") -> None:
        await self._inner.send(status, self._with_extra(headers), body)

    async def start(self, status: int, headers: HeadersLike = (), first: bytes = b"", *, hold: bool = False) -> None:
        await self._inner.start(status, self._with_extra(headers), first, hold=hold)

    def withdraw(self) -> bool:
        return self._inner.withdraw()

    async def write(self, data: bytes, *, shielded: bool = False) -> None:
        await self._inner.write(data, shielded=shielded)

    async def finish(self, last: bytes = b"", *, shielded: bool = False) -> None:
        await self._inner.finish(last, shielded=shielded)


RouteHandler = Callable[[Request, Response], Awaitable[None]]
"""A route of your own beside the MCP endpoint: ``async def handler(request, response) -> None`` that must
respond (``await response.send(200, [("content-type", "text/plain")], b"ok")``)."""
