"""One request and its response, as a handler sees them, over the ``Carrier`` that serves them.

They hold what belongs to the handler's view (the parsed head, the body once read, what has been sent) and ask
their carrier for the rest: bytes off the socket, a write, a cancel when the client leaves. The carrier is
``connection.Connection``; the protocol below is all they know of it, so the connection's state stays its own.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus
from typing import Protocol
from urllib.parse import parse_qs

import h11
import trio

from ..._core.hosts import parse_host
from .._http_types import ClientDisconnected, HeadersLike, RequestBodyError, decode_headers, encode_headers, has_header

__all__ = ["REASONS", "Carrier", "Handler", "HttpRequest", "HttpResponse"]

#: The reason phrase of each status, as h11 sends it.
REASONS = {status.value: status.phrase.encode("ascii") for status in HTTPStatus}
_NO_BODY_STATUSES = frozenset({204, 304})
#: ``parse_host``, remembered for the few ``Host`` values a server sees (every request of a client sends the same).
_parsed_host = functools.lru_cache(maxsize=128)(parse_host)


class Carrier(Protocol):
    """The connection as the request and response it carries see it: one exchange at a time."""

    @property
    def stopping(self) -> trio.Event:
        """Set when a ``Drain`` begins."""

    @property
    def draining(self) -> bool:
        """Whether a ``Drain`` has begun."""

    async def read_body(self) -> bytes:
        """The current request's body, whole (see ``HttpRequest.read_body``)."""

    async def send(self, events: Sequence[h11.Event], *, shielded: bool = False) -> None:
        """Write ``events`` in one write; raises ``ClientDisconnected``."""

    async def send_response(
        self, status: int, fields: list[tuple[bytes, bytes]], body: bytes, *, shielded: bool = False
    ) -> None:
        """Write a whole response, its head ``fields`` (with its ``Content-Length``) and ``body``, in one write;
        raises ``ClientDisconnected``."""

    def cancel_on_drain(self, scope: trio.CancelScope) -> None:
        """Cancel ``scope`` when a ``Drain`` begins (the scope is held weakly)."""

    def cancel_task(self) -> None:
        """Cancel the task serving the exchange (the connection's, which ends with its client anyway)."""

    @property
    def handler_scope(self) -> trio.CancelScope:
        """The scope the exchange's handler runs in (see ``HttpResponse.handler_scope``)."""


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
        "_carrier",
        "_body",
        "_body_error",
        "_reading",
    )

    def __init__(self, carrier: Carrier, event: h11.Request, peer: tuple[str, int] | None) -> None:
        self.method = event.method.decode("ascii")
        self.target = event.target.decode("ascii")
        path, _, query = self.target.partition("?")
        self.path = path
        self.query = query
        self.http_version = event.http_version.decode("ascii")
        self.headers = decode_headers(event.headers.raw_items())
        self.peer = peer
        host = self.headers.get("host")
        #: The ``Host`` (``trio_mcp._core.hosts.parse_host``): lower case, IPv6 bracketed, no port; None if absent.
        self.host = _parsed_host(host) if host is not None else None
        self._carrier = carrier
        self._body: bytes | None = None
        self._body_error: Exception | None = None
        self._reading = False

    @property
    def server_stopping(self) -> trio.Event:
        """Set when a ``Drain`` begins (a graceful stop): long-lived responses (streams) should end now."""
        return self._carrier.stopping

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
            self._body = await self._carrier.read_body()
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
        "_disconnected",
        "_gone",
        "_carrier",
        "_request",
        "_started",
        "_finished",
        "_ending",
        "_held",
        "status",
        "_cancel_scopes",
        "_cancels_task",
        "_after_cancel",
    )

    def __init__(self, carrier: Carrier, request: HttpRequest) -> None:
        # ``disconnected``, made when first asked for: most responses end without anyone waiting for it.
        self._disconnected: trio.Event | None = None
        self._gone = False
        self._cancel_scopes: list[trio.CancelScope] = []
        self._cancels_task = False
        #: The status sent, once started.
        self.status: int | None = None
        self._carrier = carrier
        self._request = request
        self._started = False
        self._finished = False
        #: Set when the last write of the response has been asked for: nothing may follow it.
        self._ending = False
        #: A head (its fields and first bytes) started with ``hold``, not sent yet: it goes with the next write.
        self._held: tuple[list[tuple[bytes, bytes]], bytes] | None = None
        self._after_cancel: Callable[[], Awaitable[None]] | None = None

    @property
    def disconnected(self) -> trio.Event:
        """Set when the client closes or resets the connection (or stops reading) mid-request."""
        event = self._disconnected
        if event is None:
            event = self._disconnected = trio.Event()
            if self._gone:
                event.set()
        return event

    @property
    def gone(self) -> bool:
        """Whether the client went away before the response was complete (``disconnected`` is set)."""
        return self._gone

    def cancel_on_disconnect(self, scope: trio.CancelScope, *, or_shutdown: bool = False) -> None:
        """Cancel ``scope`` as soon as the client goes away (at once if it already has), and with
        ``or_shutdown`` also when a ``Drain`` begins: no watcher task per request."""
        if self._gone or (or_shutdown and self._carrier.draining):
            scope.cancel()
            return
        self._cancel_scopes.append(scope)
        if or_shutdown:
            self._carrier.cancel_on_drain(scope)

    def cancel_task_on_disconnect(self) -> bool:
        """Have the client going away cancel the task serving this response: the connection's, which serves
        nothing else meanwhile and ends with its client anyway. A handler then needs no scope of its own for it
        (entering one costs several microseconds). Always possible here: True."""
        self._cancels_task = True
        if self._gone:
            self._carrier.cancel_task()
        return True

    @property
    def handler_scope(self) -> trio.CancelScope:
        """A cancel scope the handler already runs in, which the connection enters once for its requests until one
        is cancelled through it: cancelling it ends this handler (``trio.Cancelled`` out of it) but not the
        connection, which awaits what ``after_cancel`` gave, ends the response, and serves its next request in a new
        one. So a handler needs no scope of its own to be cancellable from outside (entering one costs several
        microseconds). This exchange's only while the handler runs: afterwards it may be the next one's."""
        return self._carrier.handler_scope

    def after_cancel(self, end: Callable[[], Awaitable[None]]) -> None:
        """What the connection awaits, as part of this exchange, once the handler was cancelled through
        ``handler_scope`` and has unwound: the rest of the response, which the cancelled handler cannot write."""
        self._after_cancel = end

    def take_after_cancel(self) -> Callable[[], Awaitable[None]] | None:
        """The carrier's call: what ``after_cancel`` gave, once."""
        end, self._after_cancel = self._after_cancel, None
        return end

    def mark_disconnected(self) -> None:
        """The carrier's call when the client goes away before the response is complete."""
        self._gone = True
        if self._disconnected is not None:
            self._disconnected.set()
        for scope in self._cancel_scopes:
            scope.cancel()
        if self._cancels_task:
            self._carrier.cancel_task()

    def mark_answered(self, status: int) -> None:
        """The carrier's call when it answered in the handler's place (an error): nothing more may be sent."""
        self._started = self._finished = self._ending = True
        self.status = status

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
        raw = encode_headers(headers)
        if self._carrier.draining:
            raw.append((b"connection", b"close"))
        return raw

    async def send(self, status: int, headers: HeadersLike = (), body: bytes = b"") -> None:
        """Send a complete response; ``Content-Length`` is added unless given. Raises ``ClientDisconnected``."""
        if status in _NO_BODY_STATUSES and body:
            raise ValueError(f"a {status} response cannot have a body")
        raw = self._head_fields(status, headers)
        if status not in _NO_BODY_STATUSES and not has_header(raw, b"content-length"):
            raw.append((b"content-length", b"%d" % len(body)))
        self._started = self._ending = True
        self.status = status
        await self._carrier.send_response(status, raw, body)  # one write for the whole answer
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
        await self._carrier.send(self._head_events(raw, first))

    def withdraw(self) -> bool:
        """Take back a head started with ``hold`` that has not gone out, so the handler can still answer otherwise
        (what it was to answer turned out gone); False once anything was sent."""
        if self._held is None or self._ending:
            return False
        self._held = None
        self._started = False
        self.status = None
        return True

    def _head_events(self, raw: list[tuple[bytes, bytes]], first: bytes) -> list[h11.Event]:
        assert self.status is not None
        events: list[h11.Event] = [
            h11.Response(status_code=self.status, headers=raw, reason=REASONS.get(self.status, b""))
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
            await self._carrier.send(events, shielded=shielded)

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
            body = first + bytes(last)
            raw.append((b"content-length", b"%d" % len(body)))
            assert self.status is not None
            await self._carrier.send_response(self.status, raw, body, shielded=shielded)
        else:
            events: list[h11.Event] = [h11.Data(data=bytes(last))] if last and self._request.method != "HEAD" else []
            events.append(h11.EndOfMessage())
            await self._carrier.send(events, shielded=shielded)
        self._finished = True


Handler = Callable[[HttpRequest, HttpResponse], Awaitable[None]]
"""``async def handler(request, response) -> None``: called once per request, must respond."""
