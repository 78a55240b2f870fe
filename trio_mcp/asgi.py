"""MCP as an ASGI application, to mount beside your own routes in a trio ASGI server (Hypercorn's trio worker,
Quart-Trio).

It serves what ``Server.serve_http`` serves (Streamable HTTP for both eras on ``/mcp``, HTTP+SSE of 2024-11-05
on ``/sse`` and ``/messages``, your ``routes``, the probes, CORS) with the very same guard, inbound check and
rooms (``trio_mcp.transports.http``): only the HTTP underneath differs. The ASGI messages are adapted here to
the ``Request``/``Response`` the rooms are written against; nothing about MCP is decided in this module.

Sessions need somewhere to live between requests: the app's ``run()``, started by the ASGI lifespan (Hypercorn
does), or by you in a nursery of yours (``await nursery.start(app.run)``). Requests for other paths go to
``fallback`` (your framework's ASGI app), or get 404. No dependency beyond trio is needed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, NoReturn
from urllib.parse import parse_qs
from weakref import WeakSet

import trio

from ._console_log import serving_console
from ._core.hosts import parse_host
from .server import Server
from .transports._http_types import (
    ClientDisconnected,
    HeadersLike,
    decode_headers,
    encode_headers,
    has_header,
)
from .transports.http.exchange import Request, Response
from .transports.http.options import HttpTransportOptions
from .transports.http.router import StreamableHttpApp

__all__ = ["AsgiApp", "McpAsgiApp"]

logger = logging.getLogger("trio_mcp.http")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]
"""An ASGI 3 application."""

_NO_BODY_STATUSES = frozenset({204, 304})


class _AsgiRequest:
    """A ``Request`` made of an ASGI scope and the body already received."""

    __slots__ = ("_body", "_stopping", "headers", "host", "method", "path", "peer", "query")

    def __init__(self, scope: Scope, body: bytes, stopping: trio.Event) -> None:
        self.method: str = scope["method"]
        raw_path = scope.get("raw_path")
        self.path: str = raw_path.decode("latin-1").partition("?")[0] if raw_path else scope["path"]
        self.query: str = bytes(scope.get("query_string", b"")).decode("latin-1")
        self.headers = decode_headers(scope.get("headers", ()))
        host = self.headers.get("host")
        self.host = parse_host(host) if host is not None else None
        client = scope.get("client")
        self.peer: tuple[str, int] | None = (str(client[0]), int(client[1])) if client else None
        self._body = body
        self._stopping = stopping

    @property
    def query_params(self) -> dict[str, list[str]]:
        return parse_qs(self.query, keep_blank_values=True)

    @property
    def server_stopping(self) -> trio.Event:
        return self._stopping

    async def read_body(self) -> bytes:
        return self._body


class _AsgiResponse:
    """A ``Response`` written as ASGI ``http.response.*`` messages, each bounded by the write timeout."""

    __slots__ = (
        "_app",
        "_ending",
        "_head_only",
        "_held",
        "_lock",
        "_scopes",
        "_send",
        "disconnected",
        "finished",
        "started",
    )

    def __init__(self, app: McpAsgiApp, send: Send, method: str) -> None:
        self._app = app
        self._send = send
        self._head_only = method == "HEAD"
        self._scopes: list[trio.CancelScope] = []
        self._ending = False
        #: The ``http.response.start`` (and first body) of a head started with ``hold``, not sent yet.
        self._held: list[MutableMapping[str, Any]] = []
        #: Several tasks may write one stream (an answer, a keep-alive): one ASGI message at a time, in order.
        self._lock = trio.StrictFIFOLock()
        self.disconnected = trio.Event()
        self.started = False
        self.finished = False

    @property
    def gone(self) -> bool:
        return self.disconnected.is_set()

    def cancel_on_disconnect(self, scope: trio.CancelScope, *, or_shutdown: bool = False) -> None:
        if self.disconnected.is_set() or (or_shutdown and self._app.stopping.is_set()):
            scope.cancel()
            return
        self._scopes.append(scope)
        if or_shutdown:
            self._app._shutdown_scopes.add(scope)

    def cancel_task_on_disconnect(self) -> bool:
        return False  # the ASGI server's task is not ours to cancel: the handler brings a scope

    #: The ASGI server's task is not ours to cancel or go on in: a handler cancellable from outside brings a scope.
    handler_scope = None

    def after_cancel(self, end: Callable[[], Awaitable[None]]) -> None:
        raise RuntimeError("an ASGI response has no handler_scope, so nothing ends through it")

    def client_left(self) -> None:
        if not self.finished:
            self.disconnected.set()
            for scope in self._scopes:
                scope.cancel()

    async def _emit(self, message: MutableMapping[str, Any]) -> None:
        if self.disconnected.is_set():
            raise ClientDisconnected("the client went away")
        async with self._lock:
            with trio.move_on_after(self._app.options.limits.write_timeout) as timer:
                try:
                    await self._send(message)
                except OSError as exc:  # the server's way of saying the socket is gone
                    self.client_left()
                    raise ClientDisconnected("the client went away") from exc
        if timer.cancelled_caught:
            self.client_left()
            raise ClientDisconnected("the client stopped reading")

    def _head(self, status: int, headers: HeadersLike) -> list[tuple[bytes, bytes]]:
        if self.started:
            raise RuntimeError("the response has already been started")
        if not 200 <= status <= 599:
            raise ValueError(f"the status must be a final status in 200..599, not {status!r}")
        self.started = True
        return encode_headers(headers)

    async def send(self, status: int, headers: HeadersLike = (), body: bytes = b"") -> None:
        if status in _NO_BODY_STATUSES and body:
            raise ValueError(f"a {status} response cannot have a body")
        raw = self._head(status, headers)
        if status not in _NO_BODY_STATUSES and not has_header(raw, b"content-length"):
            raw.append((b"content-length", str(len(body)).encode("ascii")))
        self._ending = True
        await self._emit({"type": "http.response.start", "status": status, "headers": raw})
        await self._emit({"type": "http.response.body", "body": b"" if self._head_only else body, "more_body": False})
        self.finished = True

    async def start(self, status: int, headers: HeadersLike = (), first: bytes = b"", *, hold: bool = False) -> None:
        raw = self._head(status, headers)
        self._held.append({"type": "http.response.start", "status": status, "headers": raw})
        if first and not self._head_only:
            self._held.append({"type": "http.response.body", "body": bytes(first), "more_body": True})
        if not hold:
            await self._emit_held()

    def withdraw(self) -> bool:
        if not self._held or self._ending:
            return False
        self._held = []
        self.started = False
        return True

    async def _emit_held(self) -> None:
        held, self._held = self._held, []
        for message in held:
            await self._emit(message)

    async def write(self, data: bytes, *, shielded: bool = False) -> None:
        if not self.started:
            raise RuntimeError("start() the response before write()")
        if self._ending:
            raise RuntimeError("the response is already finished")
        with trio.CancelScope(shield=shielded):
            await self._emit_held()
            if data and not self._head_only:
                await self._emit({"type": "http.response.body", "body": bytes(data), "more_body": True})

    async def finish(self, last: bytes = b"", *, shielded: bool = False) -> None:
        if not self.started:
            raise RuntimeError("start() the response before finish()")
        if self._ending:
            return
        self._ending = True
        with trio.CancelScope(shield=shielded):
            await self._emit_held()
            await self._emit(
                {"type": "http.response.body", "body": b"" if self._head_only else bytes(last), "more_body": False}
            )
        self.finished = True


class McpAsgiApp:
    """An MCP server as an ASGI 3 application (HTTP and lifespan scopes), for a trio ASGI server.

    ``options`` are those of ``Server.serve_http`` (paths, CORS, routes, probes, allow-lists, limits...). The
    ``Host`` check defaults to local names, as for a server bound to 127.0.0.1: behind a public name, list it
    in ``options.allowed_hosts``.
    """

    def __init__(
        self,
        server: Server,
        *,
        options: HttpTransportOptions = HttpTransportOptions(),
        fallback: AsgiApp | None = None,
    ) -> None:
        if options.drain is not None:
            raise ValueError("options.drain does not apply to an ASGI app: the ASGI server's shutdown drains it")
        self.server = server
        self.options = options
        self.fallback = fallback
        #: Set when the ASGI server begins to shut down: streams end, readiness turns 503.
        self.stopping = trio.Event()
        self._shutdown_scopes: WeakSet[trio.CancelScope] = WeakSet()
        self._app: StreamableHttpApp | None = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> NoReturn:
        """Run the server's lifespan and hold its sessions until cancelled (the ASGI lifespan calls this)."""
        if self._app is not None:
            raise RuntimeError("this McpAsgiApp is already running")
        self.stopping = trio.Event()  # a new run after a shutdown is ready again
        with serving_console():  # a crashed tool's traceback is seen, as under serve_http
            try:
                async with self.server.running(), trio.open_nursery() as nursery:
                    self._app = StreamableHttpApp(
                        self.server.serve_connection,
                        nursery,
                        options=self.options,
                        header_paths=self.server.tool_header_paths,
                        scopes_for=self.server.required_scopes,
                        tasks=self.server.tasks,
                    )
                    nursery.start_soon(self._app.maintain)
                    task_status.started()
                    await trio.sleep_forever()
            finally:
                if self._app is not None:
                    await self._app.aclose()
                self._app = None
        raise AssertionError("unreachable")

    def begin_shutdown(self) -> None:
        """End long-lived streams and turn readiness to 503 (the lifespan's shutdown does this)."""
        self.stopping.set()
        for scope in list(self._shutdown_scopes):
            scope.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(scope, receive, send)
        elif kind == "http" and self._app is not None and self._app.handles(_path_of(scope)):
            await self._http(self._app, scope, receive, send)
        elif kind == "http" and self._app is None and self.options.path == _path_of(scope):
            await _plain(send, 503)  # not the fallback's 404: the URL is right, the sessions' home is not running
        elif self.fallback is not None:
            await self.fallback(scope, receive, send)
        elif kind == "http":
            await _plain(send, 404)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1000})

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def watched() -> MutableMapping[str, Any]:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                self.begin_shutdown()
            return message

        async with trio.open_nursery() as nursery:
            await nursery.start(self.run)
            if self.fallback is not None:
                await self.fallback(scope, watched, send)
            else:
                while (await watched())["type"] != "lifespan.shutdown":
                    await send({"type": "lifespan.startup.complete"})
                await send({"type": "lifespan.shutdown.complete"})
            nursery.cancel_scope.cancel()

    async def _http(self, app: StreamableHttpApp, scope: Scope, receive: Receive, send: Send) -> None:
        response = _AsgiResponse(self, send, scope["method"])
        body = await self._read_body(receive, response)
        if body is None:
            return
        request = _AsgiRequest(scope, body, self.stopping)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_watch_disconnect, receive, response)
            try:
                await _respond(app, request, response)
            finally:
                nursery.cancel_scope.cancel()

    async def _read_body(self, receive: Receive, response: _AsgiResponse) -> bytes | None:
        """The whole body within the limits, or None after answering 413/408 (or when the client left)."""
        limits = self.options.limits
        chunks: list[bytes] = []
        size = 0
        with trio.move_on_after(limits.body_timeout) as timer:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = bytes(message.get("body", b""))
                size += len(chunk)
                if size > limits.max_body_bytes:
                    await _plain_quietly(response, 413, f"request body over the {limits.max_body_bytes}-byte limit")
                    return None
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        if timer.cancelled_caught:
            await _plain_quietly(response, 408, f"request body not received within {limits.body_timeout:g} s")
        return None


def _path_of(scope: Scope) -> str:
    raw_path = scope.get("raw_path")
    return raw_path.decode("latin-1").partition("?")[0] if raw_path else str(scope.get("path", ""))


async def _watch_disconnect(receive: Receive, response: _AsgiResponse) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    response.client_left()


async def _respond(app: StreamableHttpApp, request: Request, response: _AsgiResponse) -> None:
    """Run the MCP app on one request, with the h11 server's rules: an error before the head is a 500, a
    handler that forgot to answer gets one, a stream left open is ended."""
    try:
        await app(request, response)
    except ClientDisconnected:
        return
    except Exception:
        logger.exception("MCP ASGI handler failed on %s %s", request.method, request.path)
        if not response.started:
            await _plain_quietly(response, 500, "internal server error")
        return
    if not response.started:
        if not response.disconnected.is_set():
            await _plain_quietly(response, 500, "internal server error: the handler did not respond")
    elif not response.finished:
        try:
            await response.finish()
        except ClientDisconnected:
            pass


async def _plain_quietly(response: Response, status: int, text: str) -> None:
    try:
        await response.send(status, (("content-type", "text/plain; charset=utf-8"),), text.encode() + b"\n")
    except ClientDisconnected:
        pass


async def _plain(send: Send, status: int) -> None:
    text = (
        b"MCP server not running: serve this app with ASGI lifespan, or start app.run\n"
        if status == 503
        else (b"not found\n")
    )
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(text)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": text})
