"""An HTTP/1.1 client on h11 and trio, with a small keep-alive pool per origin and no hidden tasks.

Made for the MCP HTTP transports: short JSON POSTs, and long-lived responses read piece by piece (Server-Sent
Events). h11 carries one request at a time per connection, so concurrent requests to one origin use several
connections (up to ``max_connections_per_origin``); a connection whose response was read to the end goes back
to the pool, one whose response was abandoned is closed, which is how a caller cancels a streamed request.

Every failure is one of the ``HttpError`` classes, translated from trio, OS and h11 errors in one place
(``_io`` and ``_Connection.next_event``). Responses with any status are returned, never raised: a 404 or 500
is an answer, not a transport failure.

What it does not do: redirects, cookies, authentication, compression, proxies, HTTP/2, request bodies that
stream, automatic retries (a POST is never resent on another connection behind the caller's back).
"""

from __future__ import annotations

import select
import ssl
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from urllib.parse import urlsplit

import attrs
import h11
import trio

from ..._util import first_leaf
from .._http_types import Headers, HeadersLike, decode_headers, encode_headers, has_header

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "ClientResponse",
    "Headers",
    "HttpClient",
    "HttpClosed",
    "HttpConnectError",
    "HttpError",
    "HttpProtocolError",
    "HttpResponseTooLarge",
    "HttpTimeout",
    "HttpTimeouts",
]

_READ_SIZE = 65536
_DEFAULT_READ_LIMIT = 16 * 1024 * 1024
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_Origin = tuple[str, str, int]


# --- errors --------------------------------------------------------------------------------------------------


class HttpError(Exception):
    """Base class of every error the HTTP client raises for transport trouble (never for a status code)."""


class HttpConnectError(HttpError):
    """No connection could be made: refused, unreachable, DNS failure, or a TLS handshake that failed."""


class HttpTimeout(HttpError):
    """A bounded wait ran out; ``phase`` says which: ``"connect"``, ``"read"``, ``"write"`` or ``"pool"``."""

    def __init__(self, message: str, *, phase: str) -> None:
        super().__init__(message)
        self.phase = phase


class HttpProtocolError(HttpError):
    """The server sent something that is not valid HTTP/1.1 (or a response larger than we accept)."""


class HttpResponseTooLarge(HttpProtocolError):
    """``read(limit=...)`` found more body than ``limit`` bytes."""


class HttpClosed(HttpError):
    """The server closed (or reset) the connection before the response was complete."""


@contextmanager
def _io(phase: str, timeout: float) -> Iterator[None]:
    """The one place where trio and OS errors of a socket operation become ``HttpError`` classes."""
    try:
        with trio.fail_after(timeout):
            yield
    except trio.TooSlowError:
        raise HttpTimeout(f"{phase} timed out after {timeout:g} s", phase=phase) from None
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
        detail: BaseException = exc.__cause__ or exc
        if isinstance(detail, BaseExceptionGroup):  # trio's "all attempts failed": name the first reason
            detail = first_leaf(detail, OSError) or exc
        if phase == "connect":
            raise HttpConnectError(f"cannot connect: {detail}") from exc
        raise HttpClosed(f"the connection broke during {phase}: {detail}") from exc


# --- configuration -------------------------------------------------------------------------------------------


def _positive(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be positive, not {value!r}")


@attrs.frozen(kw_only=True)
class HttpTimeouts:
    """Bounds on each wait, in seconds (``math.inf`` disables one). There is no total timeout by design.

    ``read_idle`` is the longest gap between two pieces of a response (or before its head): a stream that
    keeps sending, even slowly, never trips it. Five minutes by default, because a long tool call may send
    nothing until it is done; an SSE stream with keep-alive comments can use much less.
    """

    #: TCP connect plus TLS handshake.
    connect: float = attrs.field(default=10.0, validator=_positive)
    #: Longest silence while waiting for the response head or the next piece of its body.
    read_idle: float = attrs.field(default=300.0, validator=_positive)
    #: Sending the whole request.
    write: float = attrs.field(default=30.0, validator=_positive)
    #: Waiting for a free connection slot when ``max_connections_per_origin`` are all busy.
    pool_acquire: float = attrs.field(default=60.0, validator=_positive)


# --- one connection ------------------------------------------------------------------------------------------


def _socket_of(stream: trio.abc.Stream) -> trio.SocketStream | None:
    inner: object = stream
    while isinstance(inner, trio.SSLStream):
        inner = inner.transport_stream
    return inner if isinstance(inner, trio.SocketStream) else None


def _readable_now(stream: trio.abc.Stream) -> bool:
    """Whether an idle connection has input waiting: EOF, a reset, or garbage; any of them means do not reuse."""
    sock = _socket_of(stream)
    if sock is None:
        return False
    try:
        fd = sock.socket.fileno()
        if fd < 0:
            return True
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        readable, _, _ = select.select([fd], [], [], 0)  # pragma: no cover - Windows
        return bool(readable)
    except (OSError, ValueError):  # pragma: no cover - a socket closed under us
        return True


class _Connection:
    """One keep-alive connection: an h11 client state machine and the stream it drives."""

    def __init__(self, stream: trio.abc.Stream, *, max_header_bytes: int) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=max_header_bytes)
        self.idle_since = trio.current_time()
        self.eof = False

    def reusable(self, now: float, expiry: float) -> bool:
        return (
            now - self.idle_since < expiry
            and self.h11.our_state is h11.IDLE
            and self.h11.their_state is h11.IDLE
            and not _readable_now(self.stream)
        )

    async def send(self, events: list[h11.Event], timeout: float) -> None:
        data = b"".join(self.h11.send(event) or b"" for event in events)
        try:
            with _io("write", timeout):
                await self.stream.send_all(data)
        except BaseException:
            self.h11.send_failed()
            raise

    async def next_event(self, timeout: float) -> h11.Event:
        """The next event from the server, reading as needed; raises ``HttpError`` subclasses only."""
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                if self.eof:  # h11's wording ("can't handle event type ConnectionClosed ...") helps nobody
                    raise HttpClosed("the server closed the connection before the response was complete") from None
                raise HttpProtocolError(f"invalid response from the server: {exc}") from None
            if event is h11.NEED_DATA:
                with _io("read", timeout):
                    data = await self.stream.receive_some(_READ_SIZE)
                if not data:
                    self.eof = True
                self.h11.receive_data(data if isinstance(data, bytes) else bytes(data))
                continue
            if event is h11.PAUSED:  # pragma: no cover - we never read past our own response
                raise HttpProtocolError("the server sent data we did not ask for")
            assert isinstance(event, h11.Event)
            if isinstance(event, h11.ConnectionClosed):
                raise HttpClosed("the server closed the connection before responding")
            return event

    async def aclose(self) -> None:
        await trio.aclose_forcefully(self.stream)


class _Pool:
    """The connections to one origin, and the semaphore that caps them."""

    def __init__(self, client: HttpClient, origin: _Origin) -> None:
        self._client = client
        self.origin = origin
        self._slots = trio.Semaphore(client._max_connections)
        self._idle: list[_Connection] = []
        self._in_use: set[_Connection] = set()
        self.closed = False

    async def acquire(self, timeouts: HttpTimeouts) -> _Connection:
        try:
            with trio.fail_after(timeouts.pool_acquire):
                await self._slots.acquire()
        except trio.TooSlowError:
            raise HttpTimeout(
                f"no connection to {self.origin[1]}:{self.origin[2]} became free within {timeouts.pool_acquire:g} s",
                phase="pool",
            ) from None
        try:
            await self.prune()
            now = trio.current_time()
            while self._idle:
                conn = self._idle.pop()  # the most recently used one
                if conn.reusable(now, self._client._keep_alive_expiry):
                    break
                await conn.aclose()
            else:
                conn = await self._connect(timeouts)
            self._in_use.add(conn)
            return conn
        except BaseException:
            self._slots.release()
            raise

    async def _connect(self, timeouts: HttpTimeouts) -> _Connection:
        scheme, host, port = self.origin
        stream: trio.abc.Stream | None = None
        try:
            with _io("connect", timeouts.connect):
                stream = await trio.open_tcp_stream(host, port)
                if scheme == "https":
                    stream = trio.SSLStream(stream, self._client._ssl(), server_hostname=host, https_compatible=True)
                    await stream.do_handshake()
        except BaseException:
            if stream is not None:
                await trio.aclose_forcefully(stream)
            raise
        return _Connection(stream, max_header_bytes=self._client._max_header_bytes)

    def put_back(self, conn: _Connection) -> None:
        self._in_use.discard(conn)
        conn.idle_since = trio.current_time()
        self._idle.append(conn)
        self._slots.release()

    async def discard(self, conn: _Connection) -> None:
        self._in_use.discard(conn)
        self._slots.release()
        await conn.aclose()

    async def prune(self) -> None:
        """Close idle connections older than the keep-alive expiry."""
        now = trio.current_time()
        expired = [c for c in self._idle if now - c.idle_since >= self._client._keep_alive_expiry]
        for conn in expired:
            self._idle.remove(conn)
        for conn in expired:
            await conn.aclose()

    async def aclose(self) -> None:
        self.closed = True
        conns = self._idle + list(self._in_use)
        self._idle = []
        for conn in conns:
            await conn.aclose()


# --- responses -----------------------------------------------------------------------------------------------


class ClientResponse:
    """A response whose head has arrived; the body is read with ``read()`` or ``receive_some()``.

    Always ``aclose()`` it (or use ``async with``): a body read to the end returns the connection to the pool,
    anything else closes the connection, which the server sees as the client going away.
    """

    def __init__(self, pool: _Pool, conn: _Connection, event: h11.Response, timeout: float) -> None:
        #: The status code; any status is returned as is.
        self.status = event.status_code
        #: The reason phrase, for messages only.
        self.reason = event.reason.decode("latin-1")
        #: "1.1" or "1.0".
        self.http_version = event.http_version.decode("ascii")
        #: Case-insensitive response headers.
        self.headers = decode_headers(event.headers)
        self._pool = pool
        self._conn: _Connection | None = conn
        self._read_timeout = timeout
        self._done = False

    @property
    def complete(self) -> bool:
        """Whether the whole body has been received."""
        return self._done

    async def receive_some(self) -> bytes:
        """The next piece of the body as it arrives, ``b""`` at its end.

        Cancel-safe, and a ``read_idle`` ``HttpTimeout`` leaves the response usable too; ``HttpClosed`` and
        ``HttpProtocolError`` close it.
        """
        if self._done:
            return b""
        conn = self._conn
        if conn is None:
            raise trio.ClosedResourceError("the response has been closed")
        while True:
            try:
                event = await conn.next_event(self._read_timeout)
            except (HttpClosed, HttpProtocolError):
                await self._drop()
                raise
            if isinstance(event, h11.Data):
                if event.data:
                    return bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._done = True
                await self._release()
                return b""
            else:  # pragma: no cover - h11 yields only Data/EndOfMessage here
                await self._drop()
                raise HttpProtocolError(f"unexpected {type(event).__name__} in a response body")

    async def read(self, limit: int = _DEFAULT_READ_LIMIT) -> bytes:
        """The whole body; the connection then goes back to the pool. Raises ``HttpResponseTooLarge``.

        Any failure (including cancellation) closes the response, since the part already read is gone.
        """
        declared = self.headers.get("content-length")
        try:
            if declared is not None and declared.isdigit() and int(declared) > limit:
                raise HttpResponseTooLarge(f"the response body of {declared} bytes is over the {limit}-byte limit")
            chunks: list[bytes] = []
            total = 0
            while True:
                chunk = await self.receive_some()
                if not chunk:
                    return b"".join(chunks)
                total += len(chunk)
                if total > limit:
                    raise HttpResponseTooLarge(f"the response body is over the {limit}-byte limit")
                chunks.append(chunk)
        except BaseException:
            await self._drop()
            raise

    async def _release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if conn.h11.our_state is h11.DONE and conn.h11.their_state is h11.DONE and not self._pool.closed:
            conn.h11.start_next_cycle()
            self._pool.put_back(conn)
        else:
            # The server said Connection: close (or spoke HTTP/1.0), or the client is closed.
            await self._pool.discard(conn)

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._pool.discard(conn)

    async def aclose(self) -> None:
        """Release the connection: back to the pool if the body was read to the end, else closed."""
        if self._done:
            await self._release()
        else:
            await self._drop()

    async def __aenter__(self) -> ClientResponse:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<ClientResponse {self.status} {self.reason}>"


# --- the client ----------------------------------------------------------------------------------------------


def _parse_url(url: str) -> tuple[_Origin, str, str]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"only http and https URLs are supported, not {url!r}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("credentials in the URL are not supported; send an Authorization header")
    host = parts.hostname
    if not host:
        raise ValueError(f"the URL has no host: {url!r}")
    explicit_port = parts.port  # raises ValueError for a bad port
    port = explicit_port if explicit_port is not None else (443 if scheme == "https" else 80)
    host_header = f"[{host}]" if ":" in host else host
    if explicit_port is not None:
        host_header += f":{port}"
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return (scheme, host, port), target, host_header


class HttpClient:
    """Sends HTTP/1.1 requests over pooled keep-alive connections; use as ``async with HttpClient() as http``.

    No background tasks: idle connections older than ``keep_alive_expiry`` seconds are closed when the pool is
    next used, and an idle connection the server has closed is detected (without blocking) before reuse.
    """

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        max_connections_per_origin: int = 10,
        timeouts: HttpTimeouts = HttpTimeouts(),
        keep_alive_expiry: float = 10.0,
        max_header_bytes: int = 64 * 1024,
    ) -> None:
        if max_connections_per_origin < 1:
            raise ValueError("max_connections_per_origin must be at least 1")
        self._ssl_context = ssl_context
        self._max_connections = max_connections_per_origin
        self._timeouts = timeouts
        self._keep_alive_expiry = keep_alive_expiry
        self._max_header_bytes = max_header_bytes
        self._pools: dict[_Origin, _Pool] = {}
        self._closed = False

    def _ssl(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = ssl.create_default_context()
        return self._ssl_context

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: HeadersLike = (),
        body: bytes = b"",
        timeouts: HttpTimeouts | None = None,
    ) -> ClientResponse:
        """Send a request and return once the response head has arrived (any status).

        ``Host`` and ``Content-Length`` are added unless given. ``timeouts`` overrides the client's for this
        request and its response (e.g. a shorter ``read_idle`` for an SSE stream with keep-alives).

        Raises:
            HttpConnectError, HttpTimeout, HttpClosed, HttpProtocolError: see each class.
            ValueError: a bad URL, method or header.
        """
        if self._closed:
            raise RuntimeError("the HttpClient is closed")
        timeouts = timeouts or self._timeouts
        origin, target, host_header = _parse_url(url)
        raw = encode_headers(headers)
        if not has_header(raw, b"host"):
            raw.insert(0, (b"host", host_header.encode("ascii")))
        method = method.upper()
        if (body or method in _BODY_METHODS) and not has_header(raw, b"content-length"):
            raw.append((b"content-length", str(len(body)).encode("ascii")))
        try:
            request = h11.Request(method=method, target=target, headers=raw)
        except h11.LocalProtocolError as exc:
            raise ValueError(f"invalid request: {exc}") from None
        events: list[h11.Event] = [request]
        if body:
            events.append(h11.Data(data=body))
        events.append(h11.EndOfMessage())

        pool = self._pools.get(origin)
        if pool is None:
            pool = self._pools[origin] = _Pool(self, origin)
        conn = await pool.acquire(timeouts)
        try:
            write_error: HttpClosed | None = None
            try:
                await conn.send(events, timeouts.write)
            except HttpClosed as exc:
                # The server may have answered early (413, 401) and closed: read that answer if it is there.
                write_error = exc
            try:
                while True:
                    event = await conn.next_event(timeouts.read_idle)
                    if isinstance(event, h11.InformationalResponse):
                        continue
                    if isinstance(event, h11.Response):
                        break
                    raise HttpProtocolError(f"expected a response head, got {type(event).__name__}")  # pragma: no cover
            except HttpError:
                if write_error is not None:
                    raise write_error from None
                raise
        except BaseException:
            await pool.discard(conn)
            raise
        return ClientResponse(pool, conn, event, timeouts.read_idle)

    async def aclose(self) -> None:
        """Close every connection, idle or in use: responses still open then fail with ``HttpClosed``."""
        self._closed = True
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
