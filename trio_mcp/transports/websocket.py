"""MCP over WebSocket, both sides. NOT PART OF THE MCP SPECIFICATION: an opt-in, de-facto transport.

The specification defines stdio and Streamable HTTP and no WebSocket transport (the official Python SDK
dropped the one it had for that reason), so a peer written to the specification will not speak this. Some
hosts do use one, though, and this module talks to them the way they expect: the ``mcp`` subprotocol and
one JSON-RPC message (or batch) per text frame. Use it only when a host you must work with requires it;
prefer stdio or Streamable HTTP everywhere else.

What happens on the wire:

- **Upgrade.** The client offers the ``mcp`` subprotocol and the server selects it; an upgrade without it
  is refused with HTTP 400. Browsers apply neither CORS nor the same-origin policy to WebSockets, so any
  page could otherwise open a connection to a local server: the ``Origin`` of the upgrade is checked against
  the allow-list the HTTP transport uses (local origins by default; upgrades without ``Origin``, which only
  non-browser clients send, are accepted) and a foreign one gets HTTP 403.
- **Frames.** Text frames only: a binary frame closes the connection with 1003. A message over
  ``max_message_bytes`` closes it with 1009; the limit is enforced by trio-websocket while the frame
  arrives, in 4 KiB reads, so a huge frame is never buffered whole. Text that is not JSON is handed to the
  engine as an ``InvalidMessage``, which answers -32700, and the connection carries on.
- **Keep-alive.** Each side pings every ``ping_interval`` seconds and drops a peer that does not answer
  within ``pong_timeout``, so a vanished peer ends the session (and fails its pending calls) promptly.
- **Sessions.** Each connection is served like a stdio pipe: one legacy-era session, and 2026-07-28
  requests (each carrying its own ``_meta``) are answered on it too. Closing the connection is the end of
  the session: pending calls fail with ``ConnectionClosed`` and running handlers are cancelled.

``serve_websocket()``, the server, is here; ``connect_websocket_stream()``, the client end, lives in
``trio_mcp.transports._client.websocket`` beside the other client transports, and ``WebSocketMessageStream`` in
``trio_mcp.transports._websocket_stream``; this module holds the public names of all three. Both ends produce a
``WebSocketMessageStream``, the ``MessageStream`` the engine runs over, so nothing above the transports knows
which transport it is on.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NoReturn, Protocol

import trio
import trio_websocket
from trio_websocket import WebSocketConnection, WebSocketRequest

from .._failures import must_propagate
from ..errors import ConnectionClosed
from ._client.websocket import WebSocketRejected, connect_websocket_stream
from ._websocket_stream import (
    CLOSE_GOING_AWAY,
    CLOSE_INTERNAL_ERROR,
    CLOSE_MESSAGE_TOO_BIG,
    CLOSE_NORMAL,
    CLOSE_UNSUPPORTED_DATA,
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_PING_INTERVAL,
    DEFAULT_PONG_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
    SUBPROTOCOL,
    ReaderGuard,
    WebSocketMessageStream,
    check_max_message_bytes,
    close_quietly,
)
from .http.guard import Guard

__all__ = [
    "CLOSE_GOING_AWAY",
    "CLOSE_INTERNAL_ERROR",
    "CLOSE_MESSAGE_TOO_BIG",
    "CLOSE_NORMAL",
    "CLOSE_UNSUPPORTED_DATA",
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_PING_INTERVAL",
    "DEFAULT_PONG_TIMEOUT",
    "DEFAULT_WRITE_TIMEOUT",
    "SUBPROTOCOL",
    "UpgradeGuard",
    "WebSocketMessageStream",
    "WebSocketRejected",
    "connect_websocket_stream",
    "serve_websocket",
]

logger = logging.getLogger("trio_mcp.websocket")


class UpgradeGuard(Protocol):
    """Authorization of upgrades (``trio_mcp.auth.ResourceServerAuth``): ``(principal, None)`` admits one,
    ``(None, (status, headers, body))`` refuses it."""

    async def admit_upgrade(
        self, path: str, raw_headers: Sequence[tuple[bytes, bytes]], peer: tuple[str, int] | None
    ) -> tuple[Any, tuple[int, list[tuple[str, str]], bytes] | None]: ...

    async def aclose(self) -> None: ...


class _WebSocketServer:
    def __init__(
        self,
        connect: Callable[..., Awaitable[None]],
        *,
        path: str | None,
        allowed_origins: Sequence[str] | None,
        max_message_bytes: int,
        ping_interval: float | None,
        pong_timeout: float,
        write_timeout: float,
        handshake_timeout: float,
        close_timeout: float,
        max_connections: int,
        auth: UpgradeGuard | None = None,
    ) -> None:
        self.connect = connect
        self.auth = auth
        self.path = path
        # Any valid Host (the upgrade may come through a proxy); the Origin rule of the HTTP transport.
        self.guard = Guard.for_server("0.0.0.0", allowed_origins=allowed_origins)
        self.max_message_bytes = max_message_bytes
        self.stream_options: dict[str, Any] = dict(
            ping_interval=ping_interval,
            pong_timeout=pong_timeout,
            write_timeout=write_timeout,
            close_timeout=close_timeout,
        )
        self.handshake_timeout = handshake_timeout
        self.close_timeout = close_timeout
        self.max_connections = max_connections
        self.connections = 0

    async def handle(self, tcp: trio.SocketStream) -> None:
        self.connections += 1
        try:
            async with trio.open_nursery() as nursery:
                try:
                    await self._serve(tcp, nursery)
                finally:
                    nursery.cancel_scope.cancel()
                    with trio.CancelScope(shield=True):
                        await close_quietly(tcp)  # which ends the (shielded) reader
        except BaseException as exc:
            if must_propagate(exc):  # Ctrl-C or the server's own cancellation; anything else ends this connection
                raise
            logger.error("WebSocket connection failed", exc_info=exc)
        finally:
            self.connections -= 1

    async def _serve(self, tcp: trio.SocketStream, nursery: trio.Nursery) -> None:
        guard = ReaderGuard(nursery, tcp, shield=True)
        request: WebSocketRequest | None = None
        with trio.move_on_after(self.handshake_timeout), guard.watch(trio.CancelScope()):
            request = await trio_websocket.wrap_server_stream(
                guard.as_nursery(), tcp, max_message_size=self.max_message_bytes
            )
        if request is None:
            return  # no valid upgrade in time (wsproto already answered a malformed one with 400)
        refusal = self._refusal(request)
        if refusal is not None:
            status, text = refusal
            logger.info("refused a WebSocket upgrade from %s: %s", request.remote, text)
            with trio.move_on_after(self.close_timeout):
                await request.reject(
                    status, extra_headers=[(b"content-type", b"text/plain; charset=utf-8")], body=text.encode() + b"\n"
                )
            return
        principal: Any = None
        if self.auth is not None:
            remote = request.remote
            peer = (str(remote.address), remote.port) if isinstance(remote, trio_websocket.Endpoint) else None
            principal, refused = await self.auth.admit_upgrade(request.path, _upgrade_headers(request), peer)
            if refused is not None:
                status, headers, body = refused
                with trio.move_on_after(self.close_timeout):
                    await request.reject(
                        status, extra_headers=[(n.encode(), v.encode()) for n, v in headers], body=body
                    )
                return
        websocket: WebSocketConnection | None = None
        with trio.move_on_after(self.handshake_timeout):
            websocket = await request.accept(subprotocol=SUBPROTOCOL)
        if websocket is None:
            return
        stream = WebSocketMessageStream(websocket, tcp, guard, **self.stream_options)
        nursery.start_soon(stream.keepalive)
        code = CLOSE_NORMAL
        try:
            await (self.connect(stream) if self.auth is None else self.connect(stream, principal=principal))
        except ConnectionClosed:
            pass
        except BaseException:
            # Cancelled (possibly inside a group): the server is shutting down; anything else is a bug.
            code = CLOSE_GOING_AWAY if trio.current_effective_deadline() == -math.inf else CLOSE_INTERNAL_ERROR
            raise
        finally:
            await stream.close(code)

    def _refusal(self, request: WebSocketRequest) -> tuple[int, str] | None:
        if self.connections > self.max_connections:
            return 503, "too many connections; try again later"
        if self.path is not None and request.path.split("?", 1)[0] != self.path:
            return 404, "not found"
        hosts = [value.decode("latin-1") for name, value in _upgrade_headers(request) if name.lower() == b"host"]
        origins = [value.decode("latin-1") for name, value in request.headers if name.lower() == b"origin"]
        refused = self.guard.check_host(hosts) or self.guard.check_origin(origins)
        if refused is not None:
            return refused.status, refused.reason
        if SUBPROTOCOL not in request.proposed_subprotocols:
            return 400, f"the {SUBPROTOCOL!r} WebSocket subprotocol is required (Sec-WebSocket-Protocol: {SUBPROTOCOL})"
        return None


def _upgrade_headers(request: WebSocketRequest) -> list[tuple[bytes, bytes]]:
    """The upgrade's header fields with its ``Host``, which wsproto keeps apart (``Request.host``) from the
    others: the Host check and the auth guard's resource URL (DPoP ``htu``, the metadata URL) need it."""
    host = getattr(getattr(request, "_event", None), "host", None)
    return [(b"host", host.encode("latin-1")), *request.headers] if isinstance(host, str) else list(request.headers)


async def serve_websocket(
    connect: Callable[..., Awaitable[None]],
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    path: str | None = None,
    allowed_origins: Sequence[str] | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ping_interval: float | None = DEFAULT_PING_INTERVAL,
    pong_timeout: float = DEFAULT_PONG_TIMEOUT,
    write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    max_connections: int = 1000,
    handler_nursery: trio.Nursery | None = None,
    auth: UpgradeGuard | None = None,
    listeners: Sequence[trio.SocketListener] | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """Serve MCP over WebSocket (not part of the MCP specification) until cancelled.

    Start it with ``port = await nursery.start(serve_websocket, server.serve_connection)``: the bound port is
    passed to ``task_status.started()``. Each connection is given to ``connect`` (``Server.serve_connection``)
    as a ``WebSocketMessageStream``.

    Args:
        path: the only request path served (others get 404); None serves any path.
        allowed_origins: ``Origin`` values accepted, as for the HTTP transport (full origins, or bare
            hostnames with any port); default: local origins only. Upgrades without ``Origin`` are accepted.
        max_message_bytes: the largest message accepted (counted in characters of the decoded text, which
            is bytes for ASCII JSON); a larger one closes the connection with 1009.
        ping_interval, pong_timeout: keep-alive; None turns pings off.
        write_timeout: seconds a message may take to be written before the peer is dropped.
        handshake_timeout: seconds a client has to complete the upgrade.
        close_timeout: seconds each step of the closing handshake may take.
        max_connections: connections served at once; more are refused with HTTP 503.
        handler_nursery: where connection tasks run (default: a nursery of this call).
        auth: OAuth for the upgrade (``trio_mcp.auth.ResourceServerAuth``): it is refused with 401/403 and the
            challenge unless it carries an acceptable token; ``connect`` then gets ``principal=``. Its
            verifier's connections to the authorization server are closed when this returns.
        listeners: sockets bound elsewhere to serve instead of binding ``host:port`` (bound before a lifespan).

    Cancelling it stops accepting and closes every connection with 1001 (each close bounded).
    """
    check_max_message_bytes(max_message_bytes)
    app = _WebSocketServer(
        connect,
        path=path,
        allowed_origins=allowed_origins,
        max_message_bytes=max_message_bytes,
        ping_interval=ping_interval,
        pong_timeout=pong_timeout,
        write_timeout=write_timeout,
        handshake_timeout=handshake_timeout,
        close_timeout=close_timeout,
        max_connections=max_connections,
        auth=auth,
    )
    # Bound before any nursery opens, so that a port in use raises the OSError itself.
    listeners = list(listeners) if listeners is not None else await trio.open_tcp_listeners(port, host=host)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(
                functools.partial(trio.serve_listeners, app.handle, listeners, handler_nursery=handler_nursery)
            )
            task_status.started(int(listeners[0].socket.getsockname()[1]))
            await trio.sleep_forever()
    finally:
        if auth is not None:
            with trio.move_on_after(close_timeout, shield=True):
                await auth.aclose()
    raise AssertionError("unreachable")
