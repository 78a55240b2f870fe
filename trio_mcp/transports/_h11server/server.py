"""The HTTP server: listeners, the accept loop and its cap, one ``Connection`` per client, and stopping.

``serve_http`` and ``serve_http_listeners`` run until cancelled; a ``Drain`` asks for a graceful stop first.
"""

from __future__ import annotations

import errno
import logging
import weakref
from typing import Any, NoReturn, TypeVar

import trio

from .._http_types import HttpLimits
from .connection import Connection, discard_input
from .exchange import Handler
from .idle import KeepAliveTimeouts

__all__ = ["Drain", "serve_http", "serve_http_listeners"]

logger = logging.getLogger("trio_mcp.http")

_REJECT_SECONDS = 1.0
_ACCEPT_RESOURCE_ERRORS = {
    getattr(errno, name) for name in ("EMFILE", "ENFILE", "ENOMEM", "ENOBUFS") if hasattr(errno, name)
}
_ACCEPT_BACKOFF = 0.1
_BUSY_BODY = b"server busy: too many connections, retry shortly\n"
_BUSY_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: " + str(len(_BUSY_BODY)).encode() + b"\r\n"
    b"retry-after: 1\r\n"
    b"connection: close\r\n\r\n" + _BUSY_BODY
)


class Drain:
    """A graceful stop of an HTTP server, asked for explicitly (cancelling the server is immediate).

    Give it to the server (``serve_http(..., drain=drain)``, or ``HttpTransportOptions(drain=drain)``), then
    ``await drain()``, for instance on SIGTERM: the server stops accepting, closes idle keep-alive connections,
    ends long-lived streams (a legacy-era client resumes them elsewhere) and lets the requests in flight
    finish, for at most ``timeout`` seconds (default: ``HttpLimits.graceful_shutdown_timeout``). Then cancel
    the server, which ends whatever is left at once.
    """

    def __init__(self) -> None:
        self._server: Server | None = None

    def _attach(self, server: Server) -> None:
        if self._server is not None:
            raise ValueError("this Drain already belongs to a server; give each server its own")
        self._server = server

    async def __call__(self, timeout: float | None = None) -> bool:
        """Drain; True if every request finished in time, False if some were still running at the deadline."""
        server = self._server
        if server is None:
            raise RuntimeError("this Drain has not been given to a running server")
        server.begin_shutdown()
        with trio.move_on_after(server.limits.graceful_shutdown_timeout if timeout is None else timeout):
            await server.idle.wait()
        return server.idle.is_set()


class Server:
    """What the connections of one ``serve_http_listeners`` call share: the handler, the limits, the counts and
    the graceful stop (the ``ServerState`` each ``Connection`` reads)."""

    def __init__(self, handler: Handler, limits: HttpLimits) -> None:
        self.handler = handler
        self.limits = limits
        self.shutting_down = False
        self.active = 0
        self.rejecting = 0
        self.connections: set[Connection] = set()
        #: Set when a ``Drain`` begins.
        self.stopping = trio.Event()
        #: Set once draining and no connection is left.
        self.idle = trio.Event()
        self.accepting: trio.CancelScope | None = None
        #: Scopes of long-lived responses to cancel when the graceful stop begins (weakly held).
        self.shutdown_scopes: weakref.WeakSet[trio.CancelScope] = weakref.WeakSet()
        #: Closes connections idle for ``limits.keep_alive_timeout`` (its task runs beside the accept loops).
        self.keep_alive = KeepAliveTimeouts(limits.keep_alive_timeout)

    async def own_connections(self, *, task_status: trio.TaskStatus[trio.Nursery]) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started(nursery)
            await trio.sleep_forever()

    def begin_shutdown(self) -> None:
        """Start a graceful stop: no new connections, streams ended, idle connections closed."""
        self.shutting_down = True
        self.stopping.set()
        if self.accepting is not None:
            self.accepting.cancel()
        for scope in self.shutdown_scopes:
            scope.cancel()
        for conn in list(self.connections):
            conn.close_if_idle()
        if self.active == 0:
            self.idle.set()

    async def accept_loop(self, listener: trio.abc.Listener[Any], nursery: trio.Nursery) -> None:
        async with listener:
            while True:
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    if exc.errno not in _ACCEPT_RESOURCE_ERRORS:
                        raise
                    logger.error("accept() failed (%s); sleeping %g s", exc, _ACCEPT_BACKOFF)
                    await trio.sleep(_ACCEPT_BACKOFF)
                    continue
                if self.active < self.limits.max_connections:
                    self.active += 1
                    nursery.start_soon(self.serve_connection, stream)
                elif self.rejecting < self.limits.max_connections:
                    self.rejecting += 1
                    nursery.start_soon(self.reject, stream)
                else:
                    nursery.start_soon(trio.aclose_forcefully, stream)

    async def serve_connection(self, stream: trio.abc.Stream) -> None:
        conn = Connection(self, stream)
        self.connections.add(conn)
        try:
            await conn.run()
        except Exception:
            # A bug in this module, not the peer's doing (peer behaviour is state): keep serving the others.
            logger.exception("internal error on the HTTP connection from %s", conn.peer)
        finally:
            self.connections.discard(conn)
            self.active -= 1
            if self.shutting_down and self.active == 0:
                self.idle.set()

    async def reject(self, stream: trio.abc.Stream) -> None:
        try:
            with trio.move_on_after(_REJECT_SECONDS):
                await stream.send_all(_BUSY_RESPONSE)
                await discard_input(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.rejecting -= 1
            await trio.aclose_forcefully(stream)


_ListenerT = TypeVar("_ListenerT", bound="trio.abc.Listener[Any]")


async def serve_http_listeners(
    handler: Handler,
    listeners: list[_ListenerT],
    *,
    limits: HttpLimits = HttpLimits(),
    handler_nursery: trio.Nursery | None = None,
    drain: Drain | None = None,
    task_status: trio.TaskStatus[list[_ListenerT]] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """Serve HTTP/1.1 on listeners you opened (TCP, ``trio.SSLListener`` for HTTPS, or in-memory ones).

    Runs until cancelled; ``task_status.started(listeners)``. Each connection gets its own nursery; ``handler``
    is awaited once per request.

    Resource handling:
        The listeners are closed when this returns. Cancelling it cancels every connection and handler at
        once. For a graceful stop, pass a ``Drain`` and await it before cancelling (see ``Drain``). With
        ``handler_nursery``, connection tasks run in your nursery instead, and when they are cancelled is up
        to you.

    Error handling:
        A handler exception is logged and answered with 500 (or closes the connection if the response had
        started); the server keeps serving. ``ClientDisconnected`` and ``RequestBodyError`` are expected and
        not logged. ``accept()`` running out of file descriptors is logged and retried after a short sleep;
        other listener errors propagate.
    """
    server = Server(handler, limits)
    if drain is not None:
        drain._attach(server)
    try:
        async with trio.open_nursery() as outer:
            connections = handler_nursery if handler_nursery is not None else await outer.start(server.own_connections)
            outer.start_soon(server.keep_alive.run)
            with trio.CancelScope() as server.accepting:
                async with trio.open_nursery() as accepting:
                    for listener in listeners:
                        accepting.start_soon(server.accept_loop, listener, connections)
                    task_status.started(listeners)
            for listener in listeners:  # a drain stopped the accept loops before they ever ran
                await trio.aclose_forcefully(listener)
            await trio.sleep_forever()  # drained: what is left runs until the server is cancelled
    finally:
        # Our own connections are cancelled by now; those in ``handler_nursery`` are told to finish.
        server.begin_shutdown()
    raise AssertionError("unreachable")


async def serve_http(
    handler: Handler,
    host: str | None = "127.0.0.1",
    port: int = 0,
    *,
    limits: HttpLimits = HttpLimits(),
    handler_nursery: trio.Nursery | None = None,
    drain: Drain | None = None,
    task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """Listen on ``host:port`` (port 0 picks a free one) and serve HTTP/1.1 until cancelled.

    ``task_status.started(listeners)`` hands back the bound ``trio.SocketListener`` objects, so
    ``listeners[0].socket.getsockname()[1]`` is the port. The default host is loopback only; pass ``None``
    for every interface. See ``serve_http_listeners`` for resource and error handling.
    """
    listeners = await trio.open_tcp_listeners(port, host=host)
    await serve_http_listeners(
        handler, listeners, limits=limits, handler_nursery=handler_nursery, drain=drain, task_status=task_status
    )
