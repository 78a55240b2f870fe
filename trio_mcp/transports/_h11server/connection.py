"""One TCP connection of the HTTP server: the request cycle, the reader, and every read and write on the socket.

The ``Connection`` keeps h11's state machine and the socket to itself; the request and response it serves see it
through the ``Carrier`` protocol (``exchange.py``), and it sees the server that accepted it through
``ServerState``. It runs in one nursery per connection, as hypercorn's trio worker does: the request cycle reads
each request and runs the handler in the connection's own task, and, from the first time a handler waits, a
reader task keeps reading the socket for the rest of the connection's life (see ``Connection._watch``). A whole
response (most answers) is written as h11 would write it, without h11, which then starts afresh for the next
request: h11 validates and rebuilds a head twice over and drives six state transitions for it, half its cost per
request (``Connection._whole``).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
import weakref
from collections.abc import Awaitable, Sequence
from typing import Protocol

import h11
import trio

from ..._failures import must_propagate
from ..._in_task import pass_turn, run_noting_waits
from .._http_types import (
    ClientDisconnected,
    Headers,
    HttpLimits,
    MalformedRequestBody,
    RequestBodyError,
    RequestBodyTimeout,
    RequestBodyTooLarge,
)
from .._quick_lock import QuickLock
from .._write_at_once import write_at_once
from .exchange import REASONS, Handler, HttpRequest, HttpResponse
from .idle import KeepAliveTimeouts

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = ["Connection", "ServerState", "discard_input"]

logger = logging.getLogger("trio_mcp.http")

#: The most one read from a socket asks for.
_READ_SIZE = 65536
#: Whether a plain socket may be read and written straight through its descriptor (``Connection._read_at_once``,
#: ``Connection._write_at_once``).
_RAW_FD = os.name == "posix"
# After answering a request whose body we did not read (413, 400, ...), we keep reading and discarding for a
# moment before closing: closing a socket with unread input makes the kernel send RST, and an RST can destroy
# our error response in the client's receive buffer before the client has read it.
_LINGER_SECONDS = 1.0
_LINGER_BYTES = 4 * 1024 * 1024


class ServerState(Protocol):
    """The server that accepted a connection, as the connection sees it."""

    handler: Handler
    limits: HttpLimits
    #: Whether a ``Drain`` has begun.
    shutting_down: bool
    #: Set when a ``Drain`` begins.
    stopping: trio.Event
    #: Scopes of long-lived responses to cancel when a ``Drain`` begins (weakly held).
    shutdown_scopes: weakref.WeakSet[trio.CancelScope]
    #: Closes the connections that wait longer than ``limits.keep_alive_timeout`` for their next request.
    keep_alive: KeepAliveTimeouts


async def discard_input(stream: trio.abc.Stream) -> None:
    """Half-close, then read and drop what the client still sends, up to ``_LINGER_BYTES`` (unbounded in time:
    the caller bounds it), so that closing does not reset an answer the client has not read yet."""
    try:
        if isinstance(stream, trio.abc.HalfCloseableStream):
            await stream.send_eof()
        discarded = 0
        while discarded < _LINGER_BYTES:
            data = await stream.receive_some(_READ_SIZE)
            if not data:
                break
            discarded += len(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


def _peer_of(stream: trio.abc.Stream) -> tuple[str, int] | None:
    inner: object = stream
    while isinstance(inner, trio.SSLStream):
        inner = inner.transport_stream
    if isinstance(inner, trio.SocketStream):
        try:
            address = inner.socket.getpeername()
        except OSError:
            return None
        if isinstance(address, tuple) and len(address) >= 2:
            return (str(address[0]), int(address[1]))
    return None


#: What a field of a head written without h11 (``Connection._whole``) must look like: h11's own rules (RFC 9110).
_FIELD_NAME = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_FIELD_VALUE = re.compile(rb"(?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?")
#: Fields that change a response's framing or the connection's fate: a head carrying one goes through h11.
_FRAMING_FIELDS = frozenset({b"connection", b"transfer-encoding", b"host", b"content-length"})


#: The status line of each status, as h11 writes it.
_STATUS_LINES = {status: b"HTTP/1.1 %d %s\r\n" % (status, reason) for status, reason in REASONS.items()}


@functools.lru_cache(maxsize=512)
def _field_lines(fields: tuple[tuple[bytes, bytes], ...]) -> bytes | None:
    """The lines of a head's fields in a head written without h11, or None if h11 would refuse one or one is
    among ``_FRAMING_FIELDS``; remembered, as the same few heads (a session's, say) go with every response."""
    lines = []
    for name, value in fields:
        if name in _FRAMING_FIELDS or not (_FIELD_NAME.fullmatch(name) and _FIELD_VALUE.fullmatch(value)):
            return None
        lines.append(b"%s: %s\r\n" % (name, value))
    return b"".join(lines)


def _whole_head(status: int, fields: Sequence[tuple[bytes, bytes]], body: bytes) -> bytes | None:
    """The head of a complete response whose last field is the ``Content-Length`` framing ``body`` (as ``send``
    and ``finish`` add it), as h11 writes it; None otherwise, or if another field is invalid or one of
    ``_FRAMING_FIELDS``: h11 then decides."""
    if not fields or fields[-1] != (b"content-length", b"%d" % len(body)):
        return None
    lines = _field_lines(tuple(fields[:-1]))
    if lines is None:
        return None
    status_line = _STATUS_LINES.get(status) or b"HTTP/1.1 %d \r\n" % status
    return b"%s%scontent-length: %d\r\n\r\n" % (status_line, lines, len(body))


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for child in exc.exceptions for leaf in _leaves(child)]
    return [exc]


def _keeps_alive(headers: Headers) -> bool:
    """Whether the client's ``Connection`` fields leave the connection open (no ``close`` token), as h11 reads them."""
    value = headers.get("connection")  # repeated fields joined with ", ": the same tokens
    return value is None or all(token.strip().lower() != "close" for token in value.split(","))


def _framing(headers: Headers) -> tuple[str | None, int | None]:
    """Why a request head is refused before anything else (RFC 9112 sections 3.2 and 6.1), or None; and the
    body's declared length (None when chunked or absent)."""
    length = headers.get("content-length")  # h11 has validated it, and kept one of equal repeats
    chunked = "transfer-encoding" in headers
    if chunked and length is not None:
        return "a request may not carry both Content-Length and Transfer-Encoding", None
    if len(headers.get_all("host")) > 1:
        return "more than one Host header", None
    return None, int(length) if length is not None and not chunked else None


class Connection:
    """Serves the requests of one TCP connection, one after another; the ``Carrier`` of each exchange."""

    def __init__(self, server: ServerState, stream: trio.abc.Stream) -> None:
        limits = server.limits
        self._server = server
        self._limits = limits
        self._stream = stream
        #: The socket of a plain TCP stream, read without the stream's wrapping (``_receive``).
        self._socket = stream.socket if type(stream) is trio.SocketStream else None
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.max_header_bytes)
        self.peer = _peer_of(stream)
        # The reader stops reading while this much is buffered and unparsed (more than a maximal head, so
        # that h11 can still see that a head is too large).
        self._read_cap = limits.max_header_bytes + _READ_SIZE
        self._data_arrived = trio.Event()
        self._room = trio.Event()
        self._peer_gone = False
        self._nursery: trio.Nursery | None = None
        #: Whether the reader task runs (from the first time a handler waits; see ``_watch``).
        self._reader_running = False
        #: Whether the request cycle is in a ``receive_some`` of its own (before the reader runs).
        self._receiving = False
        #: Whether the request cycle waits for the next request (which a graceful stop ends).
        self._idle = False
        self._send_lock = QuickLock()
        self._send_broken: str | None = None
        self._request_method: str | None = None
        self._response: HttpResponse | None = None
        # The current request's body, as read so far (see ``read_body``). ``_chunks`` is empty between requests: a
        # body read that fails ends the connection.
        self._body_deadline: float | None = None
        self._received = 0
        self._chunks: list[bytes] = []
        self._expects_continue = False
        self._continue_sent = False
        #: Whether the client lets the connection carry another request after this one (HTTP/1.1, no
        #: ``Connection: close``), and whether this one's answer was written without h11 (``_whole``).
        self._keeps_alive = False
        self._renewed = False
        #: The scope the handlers run in, entered once for the requests of the connection until a handler is
        #: cancelled through it (``HttpResponse.handler_scope``); then that exchange's response is ``_cancelled``.
        self.handler_scope = trio.CancelScope()  # until ``_serve`` enters the first
        self._cancelled: tuple[HttpRequest, HttpResponse] | None = None

    # -- the carrier of one exchange (see ``exchange.Carrier``) ---------------------------------------------

    @property
    def stopping(self) -> trio.Event:
        return self._server.stopping

    @property
    def draining(self) -> bool:
        return self._server.shutting_down

    def cancel_on_drain(self, scope: trio.CancelScope) -> None:
        self._server.shutdown_scopes.add(scope)

    def cancel_task(self) -> None:
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    # -- reading --------------------------------------------------------------------------------------------

    def _buffered(self) -> int:
        return len(self._h11.trailing_data[0])

    def _wake(self) -> None:
        self._data_arrived.set()
        self._data_arrived = trio.Event()

    def close_if_idle(self) -> None:
        """A graceful stop began: a connection waiting for its next request closes."""
        if self._idle and self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    async def _receive(self) -> None:
        """One read from the socket, fed to h11; EOF and resets become ``_peer_gone``."""
        data: bytes | bytearray
        try:
            if self._socket is not None:
                # The read ``SocketStream.receive_some`` makes, without its translation of errors (a generator-based
                # context manager): an error here ends the input all the same.
                data = await self._socket.recv(_READ_SIZE)
            else:
                data = await self._stream.receive_some(_READ_SIZE)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        except OSError:
            if self._socket is None:
                raise
            data = b""
        self._feed(data if isinstance(data, bytes) else bytes(data))

    def _read_at_once(self) -> bool:
        """Read what a plain TCP socket has already received, without waiting (no scope and no scheduler pass);
        whether anything came, or the end of input. False for TLS, nothing there yet or an error: ``_receive``
        then waits, or says what went wrong."""
        if not _RAW_FD or self._socket is None:
            return False
        fd = self._socket.fileno()
        if fd < 0:  # closed: never another connection's descriptor
            return False
        try:
            data = os.read(fd, _READ_SIZE)
        except OSError:
            return False
        self._feed(data)
        return True

    def _feed(self, data: bytes) -> None:
        """Hand what was read to h11; the end of input (b"") makes the peer gone."""
        self._h11.receive_data(data)
        if not data:
            self._peer_gone = True
            self._mark_disconnected()

    async def _fill(self) -> None:
        """Wait for more bytes: from the reader once it runs, else read them in this task."""
        if self._reader_running:
            await self._data_arrived.wait()
        elif not self._peer_gone:
            self._receiving = True
            try:
                await self._receive()
            finally:
                self._receiving = False

    def _watch(self) -> bool:
        """Called each time a handler waits until it returns True: the first wait that is not for the request's
        own bytes starts the reader, which from then on notices at once a client that goes away."""
        if self._receiving:
            return False
        if not self._reader_running and self._nursery is not None:
            self._reader_running = True
            self._nursery.start_soon(self._reader)
        return True

    async def _reader(self) -> None:
        """Owns every receive on the socket from the first time a handler waits to the end of the connection."""
        while not self._peer_gone:
            while self._buffered() >= self._read_cap:
                room = self._room = trio.Event()
                await room.wait()
            await self._receive()
            self._wake()

    def _mark_disconnected(self) -> None:
        response = self._response
        if response is not None and not response.finished:
            response.mark_disconnected()

    def _poll_event(self) -> h11.Event | type[h11.NEED_DATA]:
        """The next h11 event from what is already buffered, or ``h11.NEED_DATA``. Raises ``h11.RemoteProtocolError``.

        Usually the reader has the whole request by the time it is parsed: then no timeout scope is entered."""
        event = self._h11.next_event()
        if self._reader_running:
            self._room.set()
        if event is h11.PAUSED:
            raise RuntimeError("h11 paused while a request was being read")  # pragma: no cover
        return event  # type: ignore[return-value]

    async def _next_event(self) -> h11.Event:
        """The next h11 event, reading as needed. Raises ``h11.RemoteProtocolError``."""
        while True:
            event = self._poll_event()
            if event is not h11.NEED_DATA:
                assert isinstance(event, h11.Event)
                return event
            await self._fill()

    # -- writing --------------------------------------------------------------------------------------------

    async def send(self, events: Sequence[h11.Event], *, shielded: bool = False) -> None:
        """Write ``events`` in one write. With ``shielded``, cancelling the writer does not interrupt it: what has to
        wait (the lock another write holds, a full socket buffer) waits in a shielded scope, and a write the socket
        takes at once enters no scope at all (taking the lock is its checkpoint, ``QuickLock``)."""
        await self._send(events, None, shielded)

    async def send_response(
        self, status: int, fields: list[tuple[bytes, bytes]], body: bytes, *, shielded: bool = False
    ) -> None:
        """Write a whole response (head and body; ``shielded`` as for ``send``) in one write."""
        await self._send(None, (status, fields, body), shielded)

    async def _send(
        self,
        events: Sequence[h11.Event] | None,
        whole: tuple[int, list[tuple[bytes, bytes]], bytes] | None,
        shielded: bool,
    ) -> None:
        if shielded and self._send_lock.locked:
            with trio.CancelScope(shield=True):
                await self._send_now(events, shielded=True, whole=whole)
        else:
            await self._send_now(events, shielded=shielded, whole=whole)

    def _whole(self, status: int, fields: list[tuple[bytes, bytes]], body: bytes) -> bytes | None:
        """A whole response written without h11, when h11 would write exactly these bytes and the connection then
        waits for the next request: the request read whole on a keep-alive HTTP/1.1 connection, not HEAD, a status
        with a body, valid fields that leave framing to ``Content-Length``. None otherwise (h11 writes it)."""
        conn = self._h11
        if not (
            self._keeps_alive
            and 200 <= status
            and status not in (204, 304)
            and conn.their_state is h11.DONE
            and conn.our_state is h11.SEND_RESPONSE
            and self._request_method != "HEAD"
        ):
            return None
        head = _whole_head(status, fields, body)
        return None if head is None else head + body

    def _events_of(self, status: int, fields: list[tuple[bytes, bytes]], body: bytes) -> list[h11.Event]:
        events: list[h11.Event] = [h11.Response(status_code=status, headers=fields, reason=REASONS.get(status, b""))]
        if body and self._request_method != "HEAD":
            events.append(h11.Data(data=body))
        events.append(h11.EndOfMessage())
        return events

    def _renew(self) -> None:
        """After a response written without h11: a fresh h11 connection, given what the client sent after the
        request (h11's state machine would have gone the same way: both sides done, next cycle)."""
        trailing, closed = self._h11.trailing_data
        fresh = h11.Connection(h11.SERVER, max_incomplete_event_size=self._limits.max_header_bytes)
        if trailing:
            fresh.receive_data(trailing)
        if closed:
            fresh.receive_data(b"")
        self._h11 = fresh
        self._renewed = True

    async def _send_now(
        self,
        events: Sequence[h11.Event] | None,
        *,
        shielded: bool,
        whole: tuple[int, list[tuple[bytes, bytes]], bytes] | None = None,
    ) -> None:
        # The checkpoint of every write: a cancelled writer stops here, and one the socket takes at once lets the
        # others run after it has written, as trio's own sends do (by the time this task runs again, its client
        # has had the answer, and has often sent the next request: ``_read_head`` then reads it at once).
        await self._send_lock.acquire(shielded=shielded, turn=False)
        at_once = False
        try:
            if self._send_broken is not None:
                raise ClientDisconnected(self._send_broken)
            data = None if whole is None else self._whole(*whole)
            renew = data is not None
            if data is None:
                if events is None:
                    assert whole is not None
                    events = self._events_of(*whole)
                try:
                    send = self._h11.send
                    data = b"".join([send(event) or b"" for event in events])
                except h11.LocalProtocolError as exc:
                    # h11 has moved our side to ERROR: nothing more can be sent on this connection.
                    self._send_broken = f"the response broke HTTP/1.1 framing: {exc}"
                    raise
            sent = self._write_at_once(data)
            if sent == len(data):
                if renew:
                    self._renew()
                at_once = True
                return
            try:
                # A bare scope rather than fail_after (a generator-based context manager), the shield in the same one.
                with trio.CancelScope(relative_deadline=self._limits.write_timeout, shield=shielded) as timer:
                    await self._stream.send_all(memoryview(data)[sent:] if sent else data)
                if timer.cancelled_caught:
                    self._send_failed(f"the client did not read for {self._limits.write_timeout:g} s")
                    raise ClientDisconnected(self._send_broken)
                if renew:
                    self._renew()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._send_failed("the client closed the connection")
                raise ClientDisconnected(self._send_broken) from None
            except BaseException:
                self._send_failed("a write was interrupted")
                raise
        finally:
            self._send_lock.release()
            if at_once:
                await pass_turn()

    def _write_at_once(self, data: bytes) -> int:
        """Write what a plain TCP socket takes without waiting (most answers, whole: no scope and no scheduler
        pass for them); how much. 0 for TLS, a closed or broken socket or a full buffer: ``send_all`` then
        waits, or says what went wrong."""
        if not _RAW_FD or self._socket is None:
            return 0
        return write_at_once(self._socket.fileno(), data)  # -1 once closed: never another connection's descriptor

    def _send_failed(self, reason: str) -> None:
        self._h11.send_failed()
        self._send_broken = reason
        self._mark_disconnected()

    async def _send_error(self, status: int, message: str, *, close: bool = True) -> None:
        """Answer with a short text/plain error if a response can still be sent; never raises for the peer."""
        if self._send_broken is not None or self._h11.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        body = (message + "\n").encode("utf-8")
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode("ascii")),
        ]
        if close or self._server.shutting_down:
            headers.append((b"connection", b"close"))
        events: list[h11.Event] = [h11.Response(status_code=status, headers=headers, reason=REASONS.get(status, b""))]
        if self._request_method != "HEAD":
            events.append(h11.Data(data=body))
        events.append(h11.EndOfMessage())
        try:
            await self.send(events)
        except (ClientDisconnected, h11.LocalProtocolError):
            pass
        if self._response is not None:
            self._response.mark_answered(status)

    # -- the request cycle ----------------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                try:
                    await self._serve()
                finally:
                    nursery.cancel_scope.cancel()
            if not self._peer_gone and self._h11.their_state not in (h11.DONE, h11.CLOSED, h11.MUST_CLOSE):
                if self._h11.their_state is not h11.IDLE or self._buffered():
                    await self._linger()
        finally:
            await trio.aclose_forcefully(self._stream)

    async def _linger(self) -> None:
        """Half-close, then read and drop what the client still sends, briefly (see ``_LINGER_SECONDS``)."""
        with trio.move_on_after(_LINGER_SECONDS):
            await discard_input(self._stream)

    async def _serve(self) -> None:
        first = True
        while True:
            with trio.CancelScope() as self.handler_scope:
                await self._serve_requests(first)
                return
            # Only a handler cancelled through its ``handler_scope`` leaves the scope this way: the connection
            # carries on in a new one once that exchange is over.
            first = False
            if not await self._after_cancelled():
                return

    async def _serve_requests(self, first: bool) -> None:
        while True:
            event = await self._read_head(first)
            if event is None:
                return
            first = False
            if not await self._handle(event) or not self._next_cycle():
                return

    def _next_cycle(self) -> bool:
        """Make ready for the next request of the connection after an exchange that left it open."""
        if self._renewed:
            return True
        try:
            self._h11.start_next_cycle()
        except h11.LocalProtocolError:  # pragma: no cover - _handle checked both sides are DONE
            return False
        return True

    async def _after_cancelled(self) -> bool:
        """A handler ended as its ``handler_scope`` was cancelled: await what it left to do (``after_cancel``) as
        part of the exchange, end its response as when a handler returns, and say whether the connection goes on."""
        cancelled, self._cancelled = self._cancelled, None
        if cancelled is None:  # between two requests: nothing was being served
            return True
        request, response = cancelled
        self._response = response
        try:
            end = response.take_after_cancel()
            if end is None:
                await self._finish_response(request, response)
            else:
                await self._run_handler(request, response, end())
            return await self._handled(request, response) and self._next_cycle()
        finally:
            self._response = None

    async def _read_head(self, first: bool) -> h11.Request | None:
        limits = self._limits
        self._request_method = None
        if not first and self._buffered():
            await trio.lowlevel.checkpoint()  # the next request was sent early: let the other connections run
        elif not first and (self._reader_running or not self._read_at_once()):
            # Keep-alive: wait for the first byte of the next request, unless it was there already (the answer's
            # write let the other connections run after writing). The server's ``KeepAliveTimeouts`` or a graceful
            # stop ends the wait by cancelling the connection's scope: no scope and no deadline per request.
            keep_alive = self._server.keep_alive
            keep_alive.start(self)
            self._idle = True
            arrived = 0
            try:
                while not self._peer_gone and not self._server.shutting_down:
                    await self._fill()
                    arrived = self._buffered()
                    if arrived:
                        break
            finally:
                self._idle = False
                in_time = keep_alive.stop(self)
            if not arrived or not in_time or self._server.shutting_down:  # a request that came as it was closed
                return None
        try:
            event = self._poll_event()
            if event is h11.NEED_DATA:
                with trio.move_on_after(limits.header_timeout):
                    event = await self._next_event()
                if event is h11.NEED_DATA:
                    if self._buffered():
                        await self._send_error(408, f"request head not received within {limits.header_timeout:g} s")
                    return None
        except h11.RemoteProtocolError as exc:
            if not self._peer_gone:
                status = exc.error_status_hint
                if status == 431:
                    message = f"request head larger than {limits.max_header_bytes} bytes"
                else:
                    message = f"malformed request: {exc}"
                await self._send_error(status, message)
            return None
        if isinstance(event, h11.ConnectionClosed):
            return None
        assert isinstance(event, h11.Request), event
        self._request_method = event.method.decode("ascii")
        if len(event.headers) > limits.max_header_count:
            await self._send_error(431, f"more than {limits.max_header_count} header fields")
            return None
        if not event.http_version.startswith(b"1."):
            await self._send_error(505, "only HTTP/1.x is supported")
            return None
        if event.method == b"CONNECT":
            await self._send_error(501, "CONNECT is not supported")
            return None
        # An Upgrade offer (h2c, websocket) is simply declined by answering normally, as RFC 9110 allows.
        return event

    async def _handle(self, event: h11.Request) -> bool:
        """Run one request to completion; True if the connection can carry another."""
        self._expects_continue = self._h11.they_are_waiting_for_100_continue
        self._continue_sent = False
        self._renewed = False
        self._body_deadline = None
        self._received = 0
        request = HttpRequest(self, event, self.peer)
        response = HttpResponse(self, request)
        self._response = response
        if self._peer_gone:
            response.mark_disconnected()
        self._keeps_alive = event.http_version == b"1.1" and _keeps_alive(request.headers)
        refusal, declared = _framing(request.headers)
        if refusal is not None:
            await self._send_error(400, refusal)
            return False
        if request.host is None and "host" in request.headers:
            await self._send_error(400, f"invalid Host header {request.headers['host']!r}")
            return False
        try:
            if declared is not None and declared > self._limits.max_body_bytes:
                await self._send_error(
                    413, f"request body of {declared} bytes is over the {self._limits.max_body_bytes}-byte limit"
                )
                return False
            await self._run_handler(request, response, self._server.handler(request, response))
            return await self._handled(request, response)
        except BaseException:
            if self.handler_scope.cancel_called:  # cancelled through its scope: the exchange ends after it
                self._cancelled = (request, response)
            raise
        finally:
            self._response = None

    async def _handled(self, request: HttpRequest, response: HttpResponse) -> bool:
        """After the handler: read what is left of the request; True if the connection can carry another."""
        if not response.finished or self._send_broken is not None:
            return False
        if self._h11.their_state is h11.SEND_BODY:
            # The handler answered without reading the whole body: read and drop the rest (bounded by the
            # same limits), unless the client is still waiting for a 100 Continue it will never get or the
            # server is stopping; then only what has arrived (all of a request without a body).
            if (self._expects_continue and not self._continue_sent) or self._server.shutting_down:
                self._drop_arrived_body()
                return False
            try:
                await request.read_body()
            except (RequestBodyError, ClientDisconnected):
                return False
        if self._server.shutting_down:
            return False
        return self._renewed or (self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE)

    def _drop_arrived_body(self) -> None:
        """Read and drop what has arrived of the request body, without waiting: a connection closed with it
        unread lingers (``run``)."""
        try:
            while self._h11.their_state is h11.SEND_BODY and self._poll_event() is not h11.NEED_DATA:
                pass
        except h11.RemoteProtocolError:
            pass

    async def _run_handler(self, request: HttpRequest, response: HttpResponse, handling: Awaitable[None]) -> None:
        """Await ``handling`` (the handler, or what it left to do after a cancel) and end the response as it left it."""
        try:
            if self._reader_running:
                await handling
            else:
                await run_noting_waits(handling, self._watch)
        except BaseException as exc:
            leaves = _leaves(exc)
            if must_propagate(exc):
                raise
            if all(isinstance(leaf, ClientDisconnected) for leaf in leaves):
                return
            body_errors = [leaf for leaf in leaves if isinstance(leaf, RequestBodyError)]
            if body_errors and all(isinstance(leaf, (RequestBodyError, ClientDisconnected)) for leaf in leaves):
                if not response.started:
                    await self._send_error(body_errors[0].status, str(body_errors[0]))
                return
            logger.error(
                "HTTP handler failed on %s %s from %s", request.method, request.target, self.peer, exc_info=exc
            )
            if not response.started:
                await self._send_error(500, "internal server error", close=False)
            return
        await self._finish_response(request, response)

    async def _finish_response(self, request: HttpRequest, response: HttpResponse) -> None:
        """End the response a handler returned from: finish it, or answer 500 if it never began."""
        if not response.started:
            if response.gone:
                return  # the client left and the handler gave up: nothing to answer, nothing wrong
            logger.error("HTTP handler returned without responding to %s %s; sent 500", request.method, request.target)
            await self._send_error(500, "internal server error: the handler did not respond", close=False)
        elif not response.finished:
            try:
                await response.finish()
            except ClientDisconnected:
                pass

    def _body_clock(self) -> float:
        """When the body must have arrived: ``body_timeout`` from the first read that has to wait or answer
        ``100 Continue``, which is the first call of ``read_body`` (nothing before them in it waits)."""
        if self._body_deadline is None:
            self._body_deadline = trio.current_time() + self._limits.body_timeout
        return self._body_deadline

    async def read_body(self) -> bytes:
        """The current request's body (``HttpRequest.read_body`` keeps it, or the error); cancel-safe."""
        limits = self._limits
        if self._expects_continue and not self._continue_sent and self._h11.they_are_waiting_for_100_continue:
            self._body_clock()
            self._continue_sent = True
            await self.send([h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue")])
        while True:
            try:
                event = self._poll_event()
                if event is h11.NEED_DATA:  # only then is the clock read (if not yet) and a timeout scope entered
                    with trio.move_on_at(self._body_clock()):
                        event = await self._next_event()
                    if event is h11.NEED_DATA:
                        raise RequestBodyTimeout(f"request body not received within {limits.body_timeout:g} s")
            except h11.RemoteProtocolError as exc:
                if self._peer_gone:
                    raise ClientDisconnected("the client went away before sending the whole body") from None
                raise MalformedRequestBody(f"malformed request body: {exc}") from None
            if isinstance(event, h11.Data):
                self._received += len(event.data)
                if self._received > limits.max_body_bytes:
                    raise RequestBodyTooLarge(f"request body over the {limits.max_body_bytes}-byte limit")
                self._chunks.append(event.data)  # h11's own copy: joined into bytes once, at the end
            elif isinstance(event, h11.EndOfMessage):
                body = b"".join(self._chunks)
                self._chunks.clear()
                return body
            else:  # pragma: no cover - h11 yields only Data/EndOfMessage in SEND_BODY
                raise RuntimeError(f"unexpected {event!r} in a request body")
