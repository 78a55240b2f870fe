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

``serve_websocket()`` is the server, ``connect_websocket_stream()`` the client end; both produce a
``WebSocketMessageStream``, the ``MessageStream`` the engine runs over, so nothing above this module knows
which transport it is on.
"""

from __future__ import annotations

import functools
import logging
import math
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple, NoReturn, Protocol, cast
from urllib.parse import urlsplit

import trio
import trio_websocket
from trio_websocket import CloseReason, WebSocketConnection, WebSocketRequest

from .._core.jsonrpc import RequestId, decode, encode
from .._failures import must_propagate
from ..errors import ConnectionClosed
from ._http_types import decode_headers
from .http.guard import Guard

if TYPE_CHECKING:
    from ._client.common import HttpAuth

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "SUBPROTOCOL",
    "WebSocketMessageStream",
    "WebSocketRejected",
    "connect_websocket_stream",
    "serve_websocket",
]

logger = logging.getLogger("trio_mcp.websocket")

#: The subprotocol both sides must agree on.
SUBPROTOCOL: Final = "mcp"
#: The largest message accepted, as for a stdio line.
DEFAULT_MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024
DEFAULT_PING_INTERVAL: Final = 20.0
DEFAULT_PONG_TIMEOUT: Final = 20.0
DEFAULT_WRITE_TIMEOUT: Final = 30.0
DEFAULT_HANDSHAKE_TIMEOUT: Final = 10.0
DEFAULT_CLOSE_TIMEOUT: Final = 2.0

CLOSE_NORMAL: Final = 1000
CLOSE_GOING_AWAY: Final = 1001
CLOSE_UNSUPPORTED_DATA: Final = 1003
CLOSE_MESSAGE_TOO_BIG: Final = 1009
CLOSE_INTERNAL_ERROR: Final = 1011

#: trio-websocket reads 4 KiB at a time and checks the limit once per read: smaller limits are unreliable.
_MIN_MESSAGE_BYTES: Final = 4096
_DRAIN_CHUNK: Final = 65536
#: A lingering close ends once the peer has sent nothing for this long.
_DRAIN_IDLE: Final = 0.25


class WebSocketRejected(ConnectionClosed):
    """The server refused the WebSocket upgrade; ``status_code`` is its HTTP status (403: foreign Origin; 401:
    no acceptable token, with the challenge in ``headers["www-authenticate"]``)."""

    def __init__(
        self, status_code: int, body: bytes | None = None, headers: Sequence[tuple[bytes, bytes]] = ()
    ) -> None:
        text = (body or b"").decode("utf-8", "replace").strip()
        super().__init__(f"the server refused the WebSocket upgrade with HTTP {status_code}", detail=text or None)
        self.status_code = status_code
        self.body = body
        #: The refusal's response headers.
        self.headers = decode_headers(headers)


# -- the reader guard ----------------------------------------------------------------------------------------


class _ReaderGuard:
    """Stands in for the nursery trio-websocket starts its reader task in.

    The reader can raise on its own: ``ConnectionRejected`` when a client's upgrade is refused, and wsproto's
    ``LocalProtocolError`` when the peer's ping crosses our close frame. Run bare in the caller's nursery,
    that would tear the caller's nursery down; here it ends this connection only (the TCP stream is closed,
    so every waiter wakes), and is kept in ``error``. Scopes given to ``watch()`` are cancelled when the
    reader stops, so no handshake waits on a reader that is gone. With ``shield``, the reader outlives a
    cancellation of its nursery (server shutdown) long enough to read the peer's close frame; it always ends
    when the TCP stream is closed, which the server does before leaving the connection's nursery.
    """

    def __init__(self, nursery: trio.Nursery, tcp: trio.abc.Stream, *, shield: bool = False) -> None:
        self._nursery = nursery
        self._tcp = tcp
        self._shield = shield
        self._watchers: list[trio.CancelScope] = []
        self.error: Exception | None = None
        self.finished = trio.Event()

    def as_nursery(self) -> trio.Nursery:
        return cast(trio.Nursery, self)

    def watch(self, scope: trio.CancelScope) -> trio.CancelScope:
        """Cancel ``scope`` once the reader has stopped (at once if it already has)."""
        if self.finished.is_set():
            scope.cancel()
        else:
            self._watchers.append(scope)
        return scope

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: object = None) -> None:
        self._nursery.start_soon(self._run, fn, *args, name=name)

    async def _run(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        try:
            with trio.CancelScope(shield=self._shield):
                await fn(*args)
        except Exception as exc:
            self.error = exc
            if not isinstance(exc, trio_websocket.ConnectionRejected):
                logger.debug("WebSocket reader stopped: %r", exc)
            with trio.CancelScope(shield=True):
                await _close_quietly(self._tcp)
        finally:
            self.finished.set()
            watchers, self._watchers = self._watchers, []
            for scope in watchers:
                scope.cancel()


async def _close_quietly(stream: trio.abc.AsyncResource) -> None:
    try:
        await stream.aclose()
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass


# -- the message stream --------------------------------------------------------------------------------------


class WebSocketMessageStream:
    """A ``MessageStream`` over one WebSocket connection: one JSON-RPC message per text frame.

    Built by ``serve_websocket`` and ``connect_websocket_stream``. Writes, once started, finish or time out
    as a whole (a cancelled sender never leaves half a frame); a write that times out, or a peer that
    misses a pong, drops the connection. ``aclose()`` runs the closing handshake (bounded) and closes TCP.
    """

    def __init__(
        self,
        websocket: WebSocketConnection,
        tcp: trio.abc.Stream,
        reader: _ReaderGuard,
        *,
        ping_interval: float | None = DEFAULT_PING_INTERVAL,
        pong_timeout: float = DEFAULT_PONG_TIMEOUT,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        self._ws = websocket
        self._tcp = tcp
        self._reader = reader
        self._ping_interval = ping_interval
        self._pong_timeout = pong_timeout
        self._write_timeout = write_timeout
        self._close_timeout = close_timeout
        self._broken: ConnectionClosed | None = None
        self._closing = False
        self._keepalive_scope = trio.CancelScope()
        self.pings_sent = 0

    @property
    def websocket(self) -> WebSocketConnection:
        """The trio-websocket connection underneath (for its ``subprotocol``, ``path``, ``remote`` ...)."""
        return self._ws

    @property
    def close_reason(self) -> CloseReason | None:
        """Why the connection closed (its close code and reason), or None while it is open."""
        return self._ws.closed

    # -- MessageStream ---------------------------------------------------------------------------------------

    async def send(self, message: Any, *, related_request_id: RequestId | None = None, final: bool = False) -> None:
        text = encode(message).decode("ascii")
        if self._broken is not None:
            raise self._error(None)
        with trio.CancelScope(shield=True):
            with trio.move_on_after(self._write_timeout) as timer:
                try:
                    await self._ws.send_message(text)
                except trio_websocket.ConnectionClosed as exc:
                    raise self._error(exc.reason) from None
        if timer.cancelled_caught:
            await self._abort(f"the peer did not read a message within {self._write_timeout:g} s")
            raise self._error(None)

    async def receive(self) -> Any:
        try:
            data = await self._ws.get_message()
        except trio_websocket.ConnectionClosed as exc:
            raise self._error(exc.reason) from None
        if isinstance(data, bytes):
            logger.warning("closing a WebSocket whose peer sent a binary frame (%d bytes)", len(data))
            self._broken = ConnectionClosed("the peer sent a binary frame; closed with 1003")
            await self._close(CLOSE_UNSUPPORTED_DATA, "MCP messages are JSON text frames")
            raise self._error(None)
        return decode(data)

    async def aclose(self) -> None:
        await self._close(CLOSE_NORMAL, None)

    # -- closing ---------------------------------------------------------------------------------------------

    async def _close(self, code: int, reason: str | None) -> None:
        """The closing handshake (bounded), then a lingering TCP close, so the peer reads our close frame
        even while it is still sending (after a 1009, say) instead of losing it to a reset."""
        self._keepalive_scope.cancel()
        if self._closing:
            return
        self._closing = True
        with trio.CancelScope(shield=True):
            with self._reader.watch(trio.move_on_after(self._close_timeout)):
                try:
                    await self._ws.aclose(code, reason)
                except Exception as exc:  # wsproto may refuse a close frame in an odd state; we drop TCP anyway
                    logger.debug("WebSocket close failed: %r", exc)
            with trio.move_on_after(self._close_timeout):
                await self._reader.finished.wait()
            if self._reader.finished.is_set():
                await self._linger()
            await _close_quietly(self._tcp)
        if self._broken is None:
            self._broken = ConnectionClosed("WebSocket closed")

    async def _linger(self) -> None:
        tcp = self._tcp
        if not isinstance(tcp, trio.abc.HalfCloseableStream):
            return
        try:
            await tcp.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            return
        idle = min(_DRAIN_IDLE, self._close_timeout)
        with trio.move_on_after(self._close_timeout):
            try:
                while True:
                    with trio.move_on_after(idle) as quiet:
                        data = await tcp.receive_some(_DRAIN_CHUNK)
                    if quiet.cancelled_caught or not data:
                        return  # the peer stopped sending (it has read our close frame) or closed
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass

    async def _abort(self, reason: str) -> None:
        """Drop the connection without a closing handshake (the peer is unresponsive)."""
        if self._broken is None:
            self._broken = ConnectionClosed(reason)
        self._closing = True
        self._keepalive_scope.cancel()
        logger.info("dropping WebSocket connection: %s", reason)
        with trio.CancelScope(shield=True):
            await _close_quietly(self._tcp)

    def _error(self, reason: CloseReason | None) -> ConnectionClosed:
        broken = self._broken
        if broken is not None:
            return ConnectionClosed(broken.reason, detail=broken.detail)
        reason = reason or self._ws.closed
        if reason is None:
            return ConnectionClosed("WebSocket closed")
        if reason.code == 1006:
            return ConnectionClosed("WebSocket connection lost", detail=reason.reason)
        return ConnectionClosed(f"WebSocket closed with code {reason.code} ({reason.name})", detail=reason.reason)

    # -- keep-alive ------------------------------------------------------------------------------------------

    async def keepalive(self) -> None:
        """Ping every ``ping_interval`` seconds; drop the peer if a pong takes over ``pong_timeout``.

        Runs until the stream closes (the transport starts it; it never raises).
        """
        interval = self._ping_interval
        if interval is None:
            return
        with self._keepalive_scope:
            while not self._closing:
                await trio.sleep(interval)
                if self._closing or self._ws.closed is not None:
                    return
                with trio.move_on_after(self._pong_timeout) as timer:
                    try:
                        self.pings_sent += 1
                        await self._ws.ping()
                    except trio_websocket.ConnectionClosed:
                        return
                    except Exception as exc:  # a stray wsproto state error must not outlive the connection
                        logger.debug("WebSocket ping failed: %r", exc)
                        return
                if timer.cancelled_caught:
                    await self._abort(f"the peer did not answer a ping within {self._pong_timeout:g} s")
                    return


# -- server --------------------------------------------------------------------------------------------------


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
                        await _close_quietly(tcp)  # which ends the (shielded) reader
        except BaseException as exc:
            if must_propagate(exc):  # Ctrl-C or the server's own cancellation; anything else ends this connection
                raise
            logger.error("WebSocket connection failed", exc_info=exc)
        finally:
            self.connections -= 1

    async def _serve(self, tcp: trio.SocketStream, nursery: trio.Nursery) -> None:
        guard = _ReaderGuard(nursery, tcp, shield=True)
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
            await stream._close(code, None)

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
    if max_message_bytes < _MIN_MESSAGE_BYTES:
        raise ValueError(f"max_message_bytes must be at least {_MIN_MESSAGE_BYTES}")
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


# -- client --------------------------------------------------------------------------------------------------


def _parse_url(url: str) -> tuple[bool, str, int, str, str]:
    """``(secure, host, port, resource, host header)`` of a ``ws://`` or ``wss://`` URL."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("ws", "wss"):
        raise ValueError(f"a WebSocket URL starts with ws:// or wss://, not {url!r}")
    host = parts.hostname
    if not host:
        raise ValueError(f"no host in {url!r}")
    secure = scheme == "wss"
    default_port = 443 if secure else 80
    port = parts.port or default_port
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    named = f"[{host}]" if ":" in host else host
    host_header = named if port == default_port else f"{named}:{port}"
    return secure, host, port, resource, host_header


async def connect_websocket_stream(
    nursery: trio.Nursery,
    url: str,
    *,
    origin: str | None = None,
    headers: Mapping[str, str] | None = None,
    auth: HttpAuth | None = None,
    ssl_context: ssl.SSLContext | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ping_interval: float | None = DEFAULT_PING_INTERVAL,
    pong_timeout: float = DEFAULT_PONG_TIMEOUT,
    write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    connect_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
) -> WebSocketMessageStream:
    """Open a WebSocket to ``url`` (``ws://`` or ``wss://``) with the ``mcp`` subprotocol (not part of the MCP
    specification); its reader and keep-alive tasks run in ``nursery`` until the stream is closed.

    ``origin`` is sent as the ``Origin`` header (browsers always send one; other clients need not), and
    ``headers`` (``Authorization``, say) with the upgrade. ``auth`` is an authorization provider, as for the
    HTTP clients (``OAuthClientProvider``): its headers go with the upgrade, for the ``http(s)://`` form of
    ``url`` (the resource a token is for, and a DPoP proof's ``htu``), and a 401/403 refusal goes to its
    challenge handling, after which the upgrade is tried again (at most twice). Raises ``WebSocketRejected``
    when the server refuses the upgrade (``status_code``, ``headers``), and ``ConnectionClosed`` when no
    connection can be made within ``connect_timeout`` (each attempt) or the server does not select ``mcp``.
    Close it with ``aclose()`` (``Client.aclose()`` does).
    """
    if max_message_bytes < _MIN_MESSAGE_BYTES:
        raise ValueError(f"max_message_bytes must be at least {_MIN_MESSAGE_BYTES}")
    secure, host, port, resource, host_header = _parse_url(url)
    base = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in (headers or {}).items()]
    if origin is not None:
        base.append((b"origin", origin.encode("latin-1")))
    if secure and ssl_context is None:
        ssl_context = ssl.create_default_context()
    open_stream = functools.partial(
        _open_stream,
        nursery,
        _Target(url, host, port, resource, host_header, ssl_context),
        max_message_bytes=max_message_bytes,
        ping_interval=ping_interval,
        pong_timeout=pong_timeout,
        write_timeout=write_timeout,
        connect_timeout=connect_timeout,
        close_timeout=close_timeout,
    )
    if auth is None:
        return await open_stream(base)
    from ._client.h11client import HttpClient

    http_url = ("https" if secure else "http") + url[url.index(":") :]
    async with HttpClient() as http:  # for the provider's own requests (refresh, discovery, token endpoint)
        for attempt in range(3):  # the first try, after an authorization, after a DPoP nonce challenge
            sent = dict(await auth.auth_headers("GET", http_url, http=http))
            names = {name.lower().encode("latin-1") for name in sent}
            extra = [(n, v) for n, v in base if n.lower() not in names]
            extra += [(n.encode("latin-1"), v.encode("latin-1")) for n, v in sent.items()]
            try:
                stream = await open_stream(extra)
            except WebSocketRejected as refused:
                if attempt == 2 or refused.status_code not in (401, 403):
                    raise
                challenge = refused.headers.get("www-authenticate")
                nonce = refused.headers.get("dpop-nonce")
                if not await auth.handle_challenge(http, http_url, refused.status_code, challenge, sent, nonce):
                    raise
                continue
            auth.note_success()
            return stream
    raise AssertionError("unreachable")  # pragma: no cover


class _Target(NamedTuple):
    """Where a client connects: the URL, the TCP endpoint, the request target and ``Host``, and TLS."""

    url: str
    host: str
    port: int
    resource: str
    host_header: str
    ssl_context: ssl.SSLContext | None


async def _open_stream(
    nursery: trio.Nursery,
    target: _Target,
    extra_headers: list[tuple[bytes, bytes]],
    *,
    max_message_bytes: int,
    ping_interval: float | None,
    pong_timeout: float,
    write_timeout: float,
    connect_timeout: float,
    close_timeout: float,
) -> WebSocketMessageStream:
    """One upgrade attempt: TCP (and TLS), the handshake, the subprotocol check."""
    url, host, port, resource, host_header, ssl_context = target
    stream: WebSocketMessageStream | None = None
    with trio.move_on_after(connect_timeout):
        try:
            plain = await trio.open_tcp_stream(host, port)
        except OSError as exc:
            raise ConnectionClosed(f"could not connect to {url}", detail=str(exc) or None) from None
        tcp: trio.SocketStream | trio.SSLStream[trio.SocketStream] = plain
        try:
            if ssl_context is not None:
                tcp = trio.SSLStream(plain, ssl_context, server_hostname=host, https_compatible=True)
                try:
                    await tcp.do_handshake()
                except (trio.BrokenResourceError, OSError) as exc:
                    raise ConnectionClosed(f"TLS handshake with {url} failed", detail=str(exc) or None) from None
            guard = _ReaderGuard(nursery, tcp)
            websocket: WebSocketConnection | None = None
            with guard.watch(trio.CancelScope()):
                websocket = await trio_websocket.wrap_client_stream(
                    guard.as_nursery(),
                    tcp,
                    host_header,
                    resource,
                    subprotocols=[SUBPROTOCOL],
                    extra_headers=extra_headers,
                    max_message_size=max_message_bytes,
                )
            if websocket is None:
                error = guard.error
                if isinstance(error, trio_websocket.ConnectionRejected):
                    raise WebSocketRejected(error.status_code, error.body, error.headers)
                raise ConnectionClosed(
                    f"{url} closed the connection during the WebSocket upgrade",
                    detail=repr(error) if error is not None else None,
                )
            stream = WebSocketMessageStream(
                websocket,
                tcp,
                guard,
                ping_interval=ping_interval,
                pong_timeout=pong_timeout,
                write_timeout=write_timeout,
                close_timeout=close_timeout,
            )
            if websocket.subprotocol != SUBPROTOCOL:
                await stream._close(CLOSE_NORMAL, "the mcp subprotocol is required")
                raise ConnectionClosed(
                    f"{url} did not select the {SUBPROTOCOL!r} subprotocol",
                    detail=f"it chose {websocket.subprotocol!r}",
                )
        except BaseException:
            with trio.CancelScope(shield=True):
                await _close_quietly(tcp)
            raise
    if stream is None:
        raise ConnectionClosed(f"could not open a WebSocket to {url} within {connect_timeout:g} s")
    nursery.start_soon(stream.keepalive)
    return stream
