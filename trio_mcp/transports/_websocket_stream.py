"""The WebSocket ``MessageStream``, both ends of it: ``serve_websocket`` (``trio_mcp.transports.websocket``) and
``connect_websocket_stream`` (``trio_mcp.transports._client.websocket``) each hand one to the engine.

It owns what both sides do alike once the upgrade is done: one JSON-RPC message per text frame, bounded writes,
keep-alive pings, the closing handshake, and the guard around trio-websocket's reader task.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, cast

import trio
import trio_websocket
from trio_websocket import CloseReason, WebSocketConnection

from .._core.jsonrpc import RequestId, decode, encode
from ..errors import ConnectionClosed

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


def check_max_message_bytes(max_message_bytes: int) -> None:
    """Refuse, at the call, a message limit trio-websocket cannot enforce."""
    if max_message_bytes < _MIN_MESSAGE_BYTES:
        raise ValueError(f"max_message_bytes must be at least {_MIN_MESSAGE_BYTES}")


# -- the reader guard ----------------------------------------------------------------------------------------


class ReaderGuard:
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
                await close_quietly(self._tcp)
        finally:
            self.finished.set()
            watchers, self._watchers = self._watchers, []
            for scope in watchers:
                scope.cancel()


async def close_quietly(stream: trio.abc.AsyncResource) -> None:
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
        reader: ReaderGuard,
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
            await self.close(CLOSE_UNSUPPORTED_DATA, "MCP messages are JSON text frames")
            raise self._error(None)
        return decode(data)

    async def aclose(self) -> None:
        await self.close(CLOSE_NORMAL)

    # -- closing ---------------------------------------------------------------------------------------------

    async def close(self, code: int, reason: str | None = None) -> None:
        """Close with ``code``: the closing handshake (bounded), then a lingering TCP close, so the peer reads
        our close frame even while it is still sending (after a 1009, say) instead of losing it to a reset."""
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
            await close_quietly(self._tcp)
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
            await close_quietly(self._tcp)

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
