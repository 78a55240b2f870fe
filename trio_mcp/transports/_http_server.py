"""An HTTP/1.1 server on h11 and trio, small enough to read in one sitting and strict about its limits.

It is the ground floor of the MCP HTTP transports, and knows nothing of MCP: it parses requests, calls one
handler per request, and writes what the handler sends, either a whole response at once or a stream of chunks
(Server-Sent Events). What it adds over the h11 example server:

- **One nursery per TCP connection** (hypercorn's trio worker): the request cycle, which reads each request
  and runs the handler in the connection's own task, and, from the first time a handler waits, a reader task
  that keeps reading the socket for the rest of the connection's life. A client that goes away while a
  handler waits is therefore noticed at once and reported as state (``HttpResponse.disconnected``), not at
  the next write; a handler that answers without waiting costs no second task and no task switch.
- **Explicit limits** (``HttpLimits``): header size and count (431), body size (413, checked against
  Content-Length before the handler runs, and counted while a chunked body streams), timeouts for the head
  (slowloris), the body, keep-alive idleness and every write (a client that stops reading is dropped), and a
  cap on concurrent connections (see ``HttpLimits.max_connections``).
- **Stopping**: cancelling ``serve_http`` means now: every connection and every handler is cancelled at once.
  A graceful stop is a separate act you ask for with a ``Drain``: it closes the listeners, closes idle
  keep-alive connections, ends long-lived streams, and waits (with a deadline you give) for the requests in
  flight; then you cancel.
- **Strict framing**: a request with both ``Content-Length`` and ``Transfer-Encoding`` (a smuggling vector,
  RFC 9112 section 6.1), several ``Host`` fields or an invalid one (section 3.2) gets 400 and the connection
  is closed, so nothing sent behind it is served.

What it does not do: routing, content negotiation, compression, HTTP/2, protocol switching (an ``Upgrade``
offer is declined by answering normally; ``CONNECT`` gets 501), pipelining (requests on one connection are handled one after
another; bytes the client sends early are kept, not lost), and trailers.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import sys
import weakref
from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus
from typing import Any, NoReturn, TypeVar
from urllib.parse import parse_qs

import h11
import trio

from .._core.hosts import parse_host
from .._failures import must_propagate
from .._in_task import run_noting_waits
from ._http_types import (
    ClientDisconnected,
    Headers,
    HeadersLike,
    HttpLimits,
    MalformedRequestBody,
    RequestBodyError,
    RequestBodyTimeout,
    RequestBodyTooLarge,
    _encode_headers,
    _has_header,
)
from ._quick_lock import QuickLock
from ._write_at_once import write_at_once

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "ClientDisconnected",
    "Drain",
    "Handler",
    "Headers",
    "HeadersLike",
    "HttpLimits",
    "HttpRequest",
    "HttpResponse",
    "MalformedRequestBody",
    "RequestBodyError",
    "RequestBodyTimeout",
    "RequestBodyTooLarge",
    "serve_http",
    "serve_http_listeners",
]

logger = logging.getLogger("trio_mcp.http")

_READ_SIZE = 65536
#: Whether a socket's answer may be written straight to its descriptor (``_Connection._write_at_once``).
_WRITE_FD = os.name == "posix"
# After answering a request whose body we did not read (413, 400, ...), we keep reading and discarding for a
# moment before closing: closing a socket with unread input makes the kernel send RST, and an RST can destroy
# our error response in the client's receive buffer before the client has read it.
_LINGER_SECONDS = 1.0
_LINGER_BYTES = 4 * 1024 * 1024
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
_NO_BODY_STATUSES = frozenset({204, 304})
_REASONS = {status.value: status.phrase.encode("ascii") for status in HTTPStatus}


# --- request and response ------------------------------------------------------------------------------------


class HttpRequest:
    """One parsed request: its head as attributes, its body through ``await read_body()``.

    ``target`` is the raw request-target; ``path`` and ``query`` are its two halves, still percent-encoded.
    ``peer`` is the client's ``(host, port)`` when the transport is a TCP socket (possibly under TLS).
    """

    __slots__ = (
        "method",
        "target",
        "path",
        "query",
        "http_version",
        "headers",
        "peer",
        "host",
        "_conn",
        "_chunks",
        "_received",
        "_body",
        "_body_error",
        "_reading",
        "_deadline",
        "_continue_sent",
        "_expects_continue",
    )

    def __init__(self, conn: _Connection, event: h11.Request, peer: tuple[str, int] | None) -> None:
        self.method = event.method.decode("ascii")
        self.target = event.target.decode("ascii")
        path, _, query = self.target.partition("?")
        self.path = path
        self.query = query
        self.http_version = event.http_version.decode("ascii")
        self.headers = Headers._from_raw(event.headers.raw_items())
        self.peer = peer
        host = self.headers.get("host")
        #: The ``Host`` (``trio_mcp._core.hosts.parse_host``): lower case, IPv6 bracketed, no port; None if absent.
        self.host = parse_host(host) if host is not None else None
        self._conn = conn
        self._chunks: list[bytes] = []
        self._received = 0
        self._body: bytes | None = None
        self._body_error: Exception | None = None
        self._reading = False
        self._deadline: float | None = None
        self._continue_sent = False
        self._expects_continue = conn._h11.they_are_waiting_for_100_continue

    @property
    def server_stopping(self) -> trio.Event:
        """Set when a ``Drain`` begins (a graceful stop): long-lived responses (streams) should end now."""
        return self._conn._server._shutdown

    @property
    def query_params(self) -> dict[str, list[str]]:
        """The query string decoded into ``{name: [values...]}`` (blank values kept)."""
        return parse_qs(self.query, keep_blank_values=True)

    async def read_body(self) -> bytes:
        """The whole request body, read on first call (sending ``100 Continue`` if the client asked for it).

        Bounded by ``max_body_bytes`` and ``body_timeout``. Later calls return the same bytes (or raise the
        same error). Cancel-safe: a cancelled call keeps what it read, and the next call carries on.

        Raises:
            RequestBodyTooLarge, RequestBodyTimeout, MalformedRequestBody: the client's fault (413/408/400).
            ClientDisconnected: the client went away before sending it all.
        """
        if self._body is not None:
            return self._body
        if self._body_error is not None:
            raise self._body_error
        if self._reading:
            raise RuntimeError("read_body() is already running in another task")
        self._reading = True
        try:
            self._body = await self._conn._read_body(self)
        except (RequestBodyError, ClientDisconnected) as exc:
            self._body_error = exc
            raise
        finally:
            self._reading = False
        return self._body

    def __repr__(self) -> str:
        return f"<HttpRequest {self.method} {self.target} from {self.peer}>"


class HttpResponse:
    """The handler's side of one response: ``send()`` once, or ``start()``, ``write()``... and ``finish()``.

    Writes are serialised (several tasks may write one stream) and each is bounded by ``write_timeout``. A write
    that is cancelled, times out or fails breaks the response and the connection is closed afterwards, as in
    h11's own trio example; so write from a task whose cancellation should end the stream.
    ``disconnected`` is set as soon as the client goes away before the response is complete.
    """

    __slots__ = (
        "disconnected",
        "_conn",
        "_request",
        "_started",
        "_finished",
        "_ending",
        "_held",
        "status",
        "_cancel_scopes",
        "_cancels_task",
    )

    def __init__(self, conn: _Connection, request: HttpRequest) -> None:
        #: Set when the client closes or resets the connection (or stops reading) mid-request.
        self.disconnected = trio.Event()
        self._cancel_scopes: list[trio.CancelScope] = []
        self._cancels_task = False
        #: The status sent, once started.
        self.status: int | None = None
        self._conn = conn
        self._request = request
        self._started = False
        self._finished = False
        #: Set when the last write of the response has been asked for: nothing may follow it.
        self._ending = False
        #: A head (its fields and first bytes) started with ``hold``, not sent yet: it goes with the next write.
        self._held: tuple[list[tuple[bytes, bytes]], bytes] | None = None

    def cancel_on_disconnect(self, scope: trio.CancelScope, *, or_shutdown: bool = False) -> None:
        """Cancel ``scope`` as soon as the client goes away (at once if it already has), and with
        ``or_shutdown`` also when a ``Drain`` begins: no watcher task per request."""
        if self.disconnected.is_set() or (or_shutdown and self._conn._server.shutting_down):
            scope.cancel()
            return
        self._cancel_scopes.append(scope)
        if or_shutdown:
            self._conn._server.shutdown_scopes.add(scope)

    def cancel_task_on_disconnect(self) -> bool:
        """Have the client going away cancel the task serving this response: the connection's, which serves
        nothing else meanwhile and ends with its client anyway. A handler then needs no scope of its own for it
        (entering one costs several microseconds). Always possible here: True."""
        self._cancels_task = True
        if self.disconnected.is_set() and self._conn._nursery is not None:
            self._conn._nursery.cancel_scope.cancel()
        return True

    @property
    def started(self) -> bool:
        """Whether a status line has been sent (after which an error can only close the connection)."""
        return self._started

    @property
    def finished(self) -> bool:
        """Whether the whole response has been sent."""
        return self._finished

    def _head_fields(self, status: int, headers: HeadersLike) -> list[tuple[bytes, bytes]]:
        if self._started:
            raise RuntimeError("the response has already been started")
        if not 200 <= status <= 599:
            raise ValueError(f"the status must be a final status in 200..599, not {status!r}")
        raw = _encode_headers(headers)
        if self._conn._server.shutting_down:
            raw.append((b"connection", b"close"))
        return raw

    async def send(self, status: int, headers: HeadersLike = (), body: bytes = b"") -> None:
        """Send a complete response; ``Content-Length`` is added unless given. Raises ``ClientDisconnected``."""
        if status in _NO_BODY_STATUSES and body:
            raise ValueError(f"a {status} response cannot have a body")
        raw = self._head_fields(status, headers)
        if status not in _NO_BODY_STATUSES and not _has_header(raw, b"content-length"):
            raw.append((b"content-length", str(len(body)).encode("ascii")))
        # One h11.Response (h11 validates every field of each one it is given), one write for the whole answer.
        events: list[h11.Event] = [h11.Response(status_code=status, headers=raw, reason=_REASONS.get(status, b""))]
        if body and self._request.method != "HEAD":
            events.append(h11.Data(data=body))
        events.append(h11.EndOfMessage())
        self._started = self._ending = True
        self.status = status
        await self._conn._send(events)
        self._finished = True

    async def start(self, status: int, headers: HeadersLike = (), first: bytes = b"", *, hold: bool = False) -> None:
        """Send the head of a streamed response now (chunked, or close-delimited for HTTP/1.0 clients), and
        ``first`` with it in the same write (an SSE stream's opening event, say). With ``hold`` they wait for
        the next ``write()`` or ``finish()`` and go in the same write: an answer that is quick costs one
        write, not two (``write(b"")`` sends them on their own), and a response finished while its head is
        held goes whole, with a ``Content-Length`` and no chunk framing."""
        raw = self._head_fields(status, headers)
        self._started = True
        self.status = status
        if hold:
            self._held = (raw, bytes(first))
            return
        await self._conn._send(self._head_events(raw, first))

    def _head_events(self, raw: list[tuple[bytes, bytes]], first: bytes) -> list[h11.Event]:
        assert self.status is not None
        events: list[h11.Event] = [
            h11.Response(status_code=self.status, headers=raw, reason=_REASONS.get(self.status, b""))
        ]
        if first and self._request.method != "HEAD":
            events.append(h11.Data(data=bytes(first)))
        return events

    def _take_held(self) -> list[h11.Event]:
        held, self._held = self._held, None
        return [] if held is None else self._head_events(*held)

    async def write(self, data: bytes, *, shielded: bool = False) -> None:
        """Send one piece of a started response (e.g. one SSE event). Raises ``ClientDisconnected``.

        With ``shielded``, a cancelled writer still sends it whole (and the head held with it): the write is shielded
        from the writer's cancellation, only when it has to wait (a write the socket takes at once needs no scope)."""
        if not self._started:
            raise RuntimeError("start() the response before write()")
        if self._ending:
            raise RuntimeError("the response is already finished")
        events = self._take_held()
        if data and self._request.method != "HEAD":
            events.append(h11.Data(data=bytes(data)))
        if events:
            await self._conn._send(events, shielded=shielded)

    async def finish(self, last: bytes = b"", *, shielded: bool = False) -> None:
        """End a started response, sending ``last`` with the end in the same write (``shielded`` as for
        ``write``). Raises ``ClientDisconnected``."""
        if not self._started:
            raise RuntimeError("start() the response before finish()")
        if self._ending:
            return
        self._ending = True
        held, self._held = self._held, None
        if held is not None:  # the whole response is known: sent with its length
            raw, first = held
            body = first + last
            raw.append((b"content-length", str(len(body)).encode("ascii")))
            events = self._head_events(raw, body)
        else:
            events = [h11.Data(data=bytes(last))] if last and self._request.method != "HEAD" else []
        events.append(h11.EndOfMessage())
        await self._conn._send(events, shielded=shielded)
        self._finished = True


Handler = Callable[[HttpRequest, HttpResponse], Awaitable[None]]
"""``async def handler(request, response) -> None``: called once per request, must respond."""


# --- one connection ------------------------------------------------------------------------------------------


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


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for child in exc.exceptions for leaf in _leaves(child)]
    return [exc]


def _framing_refusal(headers: Headers) -> str | None:
    """Why a request head is refused before anything else (RFC 9112 sections 3.2 and 6.1), or None."""
    if "transfer-encoding" in headers and "content-length" in headers:
        return "a request may not carry both Content-Length and Transfer-Encoding"
    if len(headers.get_all("host")) > 1:
        return "more than one Host header"
    return None


def _declared_length(headers: Headers) -> int | None:
    lengths = headers.get_all("content-length")
    if not lengths or "transfer-encoding" in headers:
        return None
    return int(lengths[-1])  # h11 has validated it


class _Connection:
    """Serves the requests of one TCP connection, one after another."""

    def __init__(self, server: _Server, stream: trio.abc.Stream) -> None:
        limits = server.limits
        self._server = server
        self._limits = limits
        self._stream = stream
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

    # -- reading --------------------------------------------------------------------------------------------

    def _buffered(self) -> int:
        return len(self._h11.trailing_data[0])

    def _wake(self) -> None:
        self._data_arrived.set()
        self._data_arrived = trio.Event()

    def _close_if_idle(self) -> None:
        """A graceful stop began: a connection waiting for its next request closes."""
        if self._idle and self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    async def _receive(self) -> None:
        """One read from the socket, fed to h11; EOF and resets become ``_peer_gone``."""
        try:
            data = await self._stream.receive_some(_READ_SIZE)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        self._h11.receive_data(data if isinstance(data, bytes) else bytes(data))
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
            response.disconnected.set()
            for scope in response._cancel_scopes:
                scope.cancel()
            if response._cancels_task and self._nursery is not None:
                self._nursery.cancel_scope.cancel()

    def _poll_event(self) -> h11.Event | type[h11.NEED_DATA]:
        """The next h11 event from what is already buffered, or ``h11.NEED_DATA``. Raises ``h11.RemoteProtocolError``.

        Usually the reader has the whole request by the time it is parsed: then no timeout scope is entered."""
        event = self._h11.next_event()
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

    async def _send(self, events: Sequence[h11.Event], *, shielded: bool = False) -> None:
        """Write ``events`` in one write. With ``shielded``, cancelling the writer does not interrupt it: what has to
        wait (the lock another write holds, a full socket buffer) waits in a shielded scope, and a write the socket
        takes at once enters no scope at all."""
        if shielded and self._send_lock.locked:
            with trio.CancelScope(shield=True):
                await self._send_now(events, shielded=True)
        else:
            await self._send_now(events, shielded=shielded)

    async def _send_now(self, events: Sequence[h11.Event], *, shielded: bool) -> None:
        async with self._send_lock:
            if self._send_broken is not None:
                raise ClientDisconnected(self._send_broken)
            try:
                data = b"".join(self._h11.send(event) or b"" for event in events)
            except h11.LocalProtocolError as exc:
                # h11 has moved our side to ERROR: nothing more can be sent on this connection.
                self._send_broken = f"the response broke HTTP/1.1 framing: {exc}"
                raise
            sent = self._write_at_once(data)
            if sent == len(data):
                return
            try:
                # A bare scope rather than fail_after (a generator-based context manager), the shield in the same one.
                with trio.CancelScope(relative_deadline=self._limits.write_timeout, shield=shielded) as timer:
                    await self._stream.send_all(memoryview(data)[sent:] if sent else data)
                if timer.cancelled_caught:
                    self._send_failed(f"the client did not read for {self._limits.write_timeout:g} s")
                    raise ClientDisconnected(self._send_broken)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._send_failed("the client closed the connection")
                raise ClientDisconnected(self._send_broken) from None
            except BaseException:
                self._send_failed("a write was interrupted")
                raise

    def _write_at_once(self, data: bytes) -> int:
        """Write what a plain TCP socket takes without waiting (most answers, whole: no scope and no scheduler
        pass for them); how much. 0 for TLS, a closed or broken socket or a full buffer: ``send_all`` then
        waits, or says what went wrong."""
        stream = self._stream
        if not _WRITE_FD or type(stream) is not trio.SocketStream:
            return 0
        return write_at_once(stream.socket.fileno(), data)  # -1 once closed: never another connection's descriptor

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
        events: list[h11.Event] = [h11.Response(status_code=status, headers=headers, reason=_REASONS.get(status, b""))]
        if self._request_method != "HEAD":
            events.append(h11.Data(data=body))
        events.append(h11.EndOfMessage())
        try:
            await self._send(events)
        except (ClientDisconnected, h11.LocalProtocolError):
            pass
        if self._response is not None:
            self._response._started = self._response._finished = self._response._ending = True
            self._response.status = status

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
            try:
                if isinstance(self._stream, trio.abc.HalfCloseableStream):
                    await self._stream.send_eof()
                discarded = 0
                while discarded < _LINGER_BYTES:
                    data = await self._stream.receive_some(_READ_SIZE)
                    if not data:
                        break
                    discarded += len(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass

    async def _serve(self) -> None:
        first = True
        while True:
            event = await self._read_head(first)
            if event is None:
                return
            first = False
            if not await self._handle(event):
                return
            try:
                self._h11.start_next_cycle()
            except h11.LocalProtocolError:  # pragma: no cover - _handle checked both sides are DONE
                return

    async def _read_head(self, first: bool) -> h11.Request | None:
        limits = self._limits
        self._request_method = None
        if not first and not self._buffered():
            # Keep-alive: wait for the first byte of the next request, timed by the connection's own scope (whose
            # deadline or graceful stop ends the connection): no scope of its own per request.
            assert self._nursery is not None
            timer = self._nursery.cancel_scope
            timer.deadline = trio.current_time() + limits.keep_alive_timeout
            self._idle = True
            try:
                while not self._buffered() and not self._peer_gone and not self._server.shutting_down:
                    await self._fill()
            finally:
                self._idle = False
                timer.deadline = math.inf
            if not self._buffered() or timer.cancel_called:
                return None
        elif not first:
            await trio.lowlevel.checkpoint()  # the next request was sent early: let the other connections run
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
        request = HttpRequest(self, event, self.peer)
        response = HttpResponse(self, request)
        self._response = response
        if self._peer_gone:
            response.disconnected.set()
        refusal = _framing_refusal(request.headers)
        if refusal is not None:
            await self._send_error(400, refusal)
            return False
        if request.host is None and "host" in request.headers:
            await self._send_error(400, f"invalid Host header {request.headers['host']!r}")
            return False
        try:
            declared = _declared_length(request.headers)
            if declared is not None and declared > self._limits.max_body_bytes:
                await self._send_error(
                    413, f"request body of {declared} bytes is over the {self._limits.max_body_bytes}-byte limit"
                )
                return False
            await self._run_handler(request, response)
            if not response.finished or self._send_broken is not None or self._server.shutting_down:
                return False
            if self._h11.their_state is h11.SEND_BODY:
                # The handler answered without reading the whole body: read and drop the rest (bounded by the
                # same limits), unless the client is still waiting for a 100 Continue it will never get.
                if request._expects_continue and not request._continue_sent:
                    return False
                try:
                    await request.read_body()
                except (RequestBodyError, ClientDisconnected):
                    return False
            return self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE
        finally:
            self._response = None

    async def _run_handler(self, request: HttpRequest, response: HttpResponse) -> None:
        try:
            if self._reader_running:
                await self._server.handler(request, response)
            else:
                await run_noting_waits(self._server.handler(request, response), self._watch)
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
        if not response.started:
            if response.disconnected.is_set():
                return  # the client left and the handler gave up: nothing to answer, nothing wrong
            logger.error("HTTP handler returned without responding to %s %s; sent 500", request.method, request.target)
            await self._send_error(500, "internal server error: the handler did not respond", close=False)
        elif not response.finished:
            try:
                await response.finish()
            except ClientDisconnected:
                pass

    async def _read_body(self, request: HttpRequest) -> bytes:
        limits = self._limits
        if request._deadline is None:
            request._deadline = trio.current_time() + limits.body_timeout
        if self._h11.they_are_waiting_for_100_continue and not request._continue_sent:
            request._continue_sent = True
            await self._send([h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue")])
        while True:
            try:
                event = self._poll_event()
                if event is h11.NEED_DATA:  # only then is a timeout scope entered
                    with trio.move_on_at(request._deadline):
                        event = await self._next_event()
                    if event is h11.NEED_DATA:
                        raise RequestBodyTimeout(f"request body not received within {limits.body_timeout:g} s")
            except h11.RemoteProtocolError as exc:
                if self._peer_gone:
                    raise ClientDisconnected("the client went away before sending the whole body") from None
                raise MalformedRequestBody(f"malformed request body: {exc}") from None
            if isinstance(event, h11.Data):
                request._received += len(event.data)
                if request._received > limits.max_body_bytes:
                    raise RequestBodyTooLarge(f"request body over the {limits.max_body_bytes}-byte limit")
                request._chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                body = b"".join(request._chunks)
                request._chunks = []
                return body
            else:  # pragma: no cover - h11 yields only Data/EndOfMessage in SEND_BODY
                raise RuntimeError(f"unexpected {event!r} in a request body")


# --- the server ----------------------------------------------------------------------------------------------


class Drain:
    """A graceful stop of an HTTP server, asked for explicitly (cancelling the server is immediate).

    Give it to the server (``serve_http(..., drain=drain)``, or ``HttpTransportOptions(drain=drain)``), then
    ``await drain()``, for instance on SIGTERM: the server stops accepting, closes idle keep-alive connections,
    ends long-lived streams (a session-era client resumes them elsewhere) and lets the requests in flight
    finish, for at most ``timeout`` seconds (default: ``HttpLimits.graceful_shutdown_timeout``). Then cancel
    the server, which ends whatever is left at once.
    """

    def __init__(self) -> None:
        self._server: _Server | None = None

    def _attach(self, server: _Server) -> None:
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


class _Server:
    def __init__(self, handler: Handler, limits: HttpLimits) -> None:
        self.handler = handler
        self.limits = limits
        self.shutting_down = False
        self.active = 0
        self.rejecting = 0
        self.connections: set[_Connection] = set()
        self._shutdown = trio.Event()
        #: Set once draining and no connection is left.
        self.idle = trio.Event()
        self.accepting: trio.CancelScope | None = None
        #: Scopes of long-lived responses to cancel when the graceful stop begins (weakly held).
        self.shutdown_scopes: weakref.WeakSet[trio.CancelScope] = weakref.WeakSet()

    async def own_connections(self, *, task_status: trio.TaskStatus[trio.Nursery]) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started(nursery)
            await trio.sleep_forever()

    def begin_shutdown(self) -> None:
        """Start a graceful stop: no new connections, streams ended, idle connections closed."""
        self.shutting_down = True
        self._shutdown.set()
        if self.accepting is not None:
            self.accepting.cancel()
        for scope in self.shutdown_scopes:
            scope.cancel()
        for conn in list(self.connections):
            conn._close_if_idle()
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
        conn = _Connection(self, stream)
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
    server = _Server(handler, limits)
    if drain is not None:
        drain._attach(server)
    try:
        async with trio.open_nursery() as outer:
            connections = handler_nursery if handler_nursery is not None else await outer.start(server.own_connections)
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
