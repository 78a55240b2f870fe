"""MCP over HTTP, server side: Streamable HTTP for both eras and the legacy HTTP+SSE transport, on one port.

One endpoint (``/mcp`` by default) serves three kinds of traffic, chosen per request:

- **Stateless (2026-07-28).** A POST whose body carries the per-request ``_meta`` (or whose
  ``MCP-Protocol-Version`` names a modern revision) is served on its own: its headers are checked against
  the body (400 + -32020 on any mismatch), a fresh connection serves the one request, the answer is JSON or
  an SSE stream, and closing that stream cancels the request. No session id is minted or read.
- **Sessions (2025-03-26 .. 2025-11-25).** ``initialize`` opens a session (``Mcp-Session-Id`` from
  ``secrets``); later POSTs carry the id, GET opens the standalone SSE stream, DELETE ends the session.
  Server messages go on the stream of the request they relate to, others on the GET stream, each on one
  stream only. Events have ids naming their stream, kept in a bounded ``EventStore``, so a client whose
  stream broke resumes with GET and ``Last-Event-ID``; on 2025-11-25 each stream opens with a priming event
  and a ``retry`` hint. A dropped stream is not a cancellation in this era. Idle sessions are reaped and
  their number is capped.
- **HTTP+SSE (2024-11-05).** GET on ``/sse`` opens a session whose first event names the POST endpoint
  (``/messages?session_id=...``); every server message goes on that one stream.

Every request is checked first: ``Host`` and ``Origin`` against allow-lists (DNS rebinding), the body
against the size limit. The transport knows framing, routing and headers; what a message means is the
business of the ``connect`` callback it is given (``Server.serve_connection``).
"""

from __future__ import annotations

import collections
import contextvars
import functools
import logging
import secrets
import ssl
from typing import Any, Awaitable, Callable, Final, Mapping, NoReturn, Protocol, Sequence
from urllib.parse import urlsplit

import attrs
import trio

from .._core.jsonrpc import RequestId, classify, decode, encode, error_message, is_request_id, Request
from .._core.mcp_headers import header_matches
from .._core.sse import encode_comment, encode_event
from .._wire.versions import DEFAULT_NEGOTIATED_VERSION, HANDSHAKE_VERSIONS, MODERN_VERSIONS, V2025_11_25
from ..errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    ConnectionClosed,
)
from ._base import MessageStream
from ._http_server import (
    ClientDisconnected,
    HttpLimits,
    HttpRequest,
    HttpResponse,
    RequestBodyError,
    serve_http_listeners,
)

__all__ = [
    "HttpTransportOptions",
    "EventStore",
    "MemoryEventStore",
    "ConnectFunction",
    "StreamableHttpApp",
    "serve_streamable_http",
    "serve_mounts",
    "request_principal",
]

logger = logging.getLogger("trio_mcp.http")

_META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
_LOCAL_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
_SSE_HEADERS: Final = (
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
)
_JSON: Final = (("content-type", "application/json"),)
#: Methods whose ``Mcp-Name`` header mirrors ``params.name`` or ``params.uri`` (``params.taskId``: tasks extension).
_NAMED: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                 "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}
#: Modern errors that mean "your request was wrong" (HTTP 400), as the 2026-07-28 transport page lists.
_BAD_REQUEST_CODES: Final = frozenset(
    {PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY,
     UNSUPPORTED_PROTOCOL_VERSION}
)


#: Who sent the HTTP request being handled (set per request task; None without authentication).
request_principal: contextvars.ContextVar[Any] = contextvars.ContextVar("trio_mcp_http_principal", default=None)


class ConnectFunction(Protocol):
    """Serves one connection over ``stream`` until it closes (``Server.serve_connection``).

    ``principal`` is what ``HttpTransportOptions.authenticate`` said about the caller (None without it).
    """

    def __call__(self, stream: MessageStream, *, modern_only: bool = ..., principal: Any = ...) -> Awaitable[None]: ...


class RequestGuard(Protocol):
    """Authorization in front of the endpoints (``trio_mcp.auth.ResourceServerAuth``): it answers the paths of
    ``metadata_paths`` itself, and admits a request (returns its principal) or answers it and returns None."""

    def metadata_paths(self, endpoint_path: str) -> tuple[str, ...]: ...

    async def __call__(self, request: HttpRequest, response: HttpResponse, endpoint_path: str) -> Any: ...


HeaderPaths = Callable[[str], "Mapping[str, tuple[str, ...]] | None"]
"""For a tool name: ``{x-mcp-header name (lower case): argument path}``, or None for an unknown tool."""


class EventStore(Protocol):
    """Keeps the SSE events of legacy sessions so a client can resume a broken stream (``Last-Event-ID``)."""

    def append(self, session_id: str, stream_id: str, sequence: int, message: Any) -> None:
        """Remember the event ``sequence`` of a stream."""

    def replay(self, session_id: str, stream_id: str, after: int) -> list[tuple[int, Any]]:
        """The events of a stream after ``after``, oldest first (those it no longer has are skipped)."""

    def forget(self, session_id: str) -> None:
        """Drop everything kept for a session (it ended)."""


class MemoryEventStore:
    """The default ``EventStore``: the last ``max_events_per_stream`` events of each stream, in memory."""

    def __init__(self, max_events_per_stream: int = 256, max_streams_per_session: int = 256) -> None:
        self._max_events = max_events_per_stream
        self._max_streams = max_streams_per_session
        self._events: dict[str, dict[str, collections.deque[tuple[int, Any]]]] = {}

    def append(self, session_id: str, stream_id: str, sequence: int, message: Any) -> None:
        streams = self._events.setdefault(session_id, {})
        if stream_id not in streams and len(streams) >= self._max_streams:
            streams.pop(next(iter(streams)))  # forget the oldest stream
        streams.setdefault(stream_id, collections.deque(maxlen=self._max_events)).append((sequence, message))

    def replay(self, session_id: str, stream_id: str, after: int) -> list[tuple[int, Any]]:
        events = self._events.get(session_id, {}).get(stream_id, ())
        return [(sequence, message) for sequence, message in events if sequence > after]

    def forget(self, session_id: str) -> None:
        self._events.pop(session_id, None)


def _default_store() -> EventStore:
    return MemoryEventStore()


@attrs.frozen(kw_only=True)
class HttpTransportOptions:
    """How the HTTP transport behaves; the defaults are safe for a server on 127.0.0.1."""

    #: The Streamable HTTP endpoint.
    path: str = "/mcp"
    #: The legacy HTTP+SSE (2024-11-05) GET endpoint, or None to turn that transport off.
    sse_path: str | None = "/sse"
    #: The legacy HTTP+SSE POST endpoint.
    messages_path: str = "/messages"
    #: ``Host`` values (hostnames, any port) accepted; None accepts any. Default: the local names when the
    #: server binds a loopback address, and no check otherwise.
    allowed_hosts: Sequence[str] | None = None
    #: ``Origin`` values accepted (full origins such as ``https://app.example``, or bare hostnames, any
    #: port); requests without ``Origin`` are always accepted. Default: local origins only.
    allowed_origins: Sequence[str] | None = None
    #: Answer session-era requests with a JSON body instead of an SSE stream.
    json_response: bool = False
    #: Seconds a session may go without traffic before it is ended (it stays while a stream is open).
    session_idle_timeout: float = 1800.0
    #: Most sessions at once; another ``initialize`` gets 503.
    max_sessions: int = 1000
    #: Where session events are kept for resumption (None: streams cannot be resumed).
    event_store: EventStore | None = attrs.field(factory=_default_store)
    #: The ``retry`` hint (milliseconds) sent with priming events on 2025-11-25.
    retry_ms: int = 1000
    #: Seconds between ``:`` keep-alive comments on an idle SSE stream.
    keepalive_interval: float = 15.0
    #: Serve 2026-07-28 stateless requests.
    stateless: bool = True
    #: Serve the handshake era (sessions, and HTTP+SSE when ``sse_path`` is set).
    sessions: bool = True
    #: HTTP limits: body and header sizes, timeouts, connection cap.
    limits: HttpLimits = HttpLimits()
    #: Bearer-token check: called with the token of ``Authorization: Bearer <token>``, it returns who the caller
    #: is (any value but None) or None to refuse (401 with ``WWW-Authenticate: Bearer``). A session stays bound
    #: to the principal that opened it. None: no authentication.
    authenticate: Callable[[str], Awaitable[Any]] | None = None
    #: OAuth protection (``trio_mcp.auth.ResourceServerAuth``): metadata, challenges, scopes, DPoP. It replaces
    #: ``authenticate`` when both are set.
    auth: RequestGuard | None = None


# -- where a message goes ----------------------------------------------------------------------------------


class _Writer:
    """An HTTP response currently carrying one SSE stream; writes are shielded so a cancelled sender never
    leaves half an event on the wire."""

    __slots__ = ("response", "legacy_event")

    def __init__(self, response: HttpResponse, *, legacy_event: bool = False) -> None:
        self.response = response
        self.legacy_event = legacy_event

    async def event(self, message: Any, event_id: str | None, *, last: bool = False) -> bool:
        """Write one event (and with ``last``, end the response with it); False if the client is gone."""
        data = encode(message).decode("ascii")
        payload = encode_event(data, id=event_id, event="message" if self.legacy_event else None)
        return await self.raw(payload, last=last)

    async def raw(self, payload: bytes, *, last: bool = False) -> bool:
        """Write ``payload``; with ``last`` it also ends the response, in the same write."""
        if self.response.disconnected.is_set() or self.response.finished:
            return False
        with trio.CancelScope(shield=True):
            try:
                if last:
                    await self.response.finish(payload)
                else:
                    await self.response.write(payload)
            except ClientDisconnected:
                return False
        return True


class _Stream:
    """One logical SSE stream of a session: the GET stream, or the answers to one POST."""

    __slots__ = ("id", "sequence", "pending", "writer", "backlog", "complete", "watch")

    def __init__(self, stream_id: str, pending: set[RequestId]) -> None:
        self.id = stream_id
        #: The scope holding the HTTP response open; cancelled to end it early (SEP-1699 polling).
        self.watch: trio.CancelScope | None = None
        self.sequence = 0
        #: Request ids whose responses have not been sent yet (POST streams).
        self.pending = pending
        self.writer: _Writer | None = None
        #: Events for a stream with no client attached and no event store (bounded).
        self.backlog: collections.deque[tuple[str, Any]] = collections.deque(maxlen=256)
        self.complete = trio.Event()


class _Session:
    """A handshake-era session: its id, its streams, and the ``MessageStream`` its connection runs over."""

    def __init__(self, app: StreamableHttpApp, session_id: str, *, sse_only: bool, principal: Any) -> None:
        self.app = app
        self.id = session_id
        self.principal = principal
        self.sse_only = sse_only
        self.version = DEFAULT_NEGOTIATED_VERSION
        self.last_activity = trio.current_time()
        self.scope = trio.CancelScope()
        self.closed = trio.Event()
        self.standalone = _Stream("0", set())
        self.streams: dict[str, _Stream] = {"0": self.standalone}
        self.owner: dict[RequestId, _Stream] = {}
        self._next_stream = 1
        self._inbound_send, self._inbound = trio.open_memory_channel[Any](64)

    # MessageStream, as the connection sees it --------------------------------------------------------------

    async def receive(self) -> Any:
        try:
            return await self._inbound.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise ConnectionClosed("HTTP session ended") from None

    async def send(self, message: Any, *, related_request_id: RequestId | None = None) -> None:
        if self.closed.is_set():
            raise ConnectionClosed("HTTP session ended")
        first = message[0] if type(message) is list and message else message
        answered = first.get("id") if type(first) is dict and "method" not in first else None
        stream = self.standalone
        if not self.sse_only:
            key = answered if answered is not None else related_request_id
            owner = self.owner.get(key) if key is not None else None
            if owner is not None and not (self.app.options.json_response and answered is None):
                stream = owner
        completes = answered is not None and stream is not self.standalone and _answers_all(message, stream.pending)
        await self._emit(stream, message, last=completes)
        if answered is not None:
            ids = [item.get("id") for item in message] if type(message) is list else [answered]
            for request_id in ids:
                owner = self.owner.pop(request_id, None)
                if owner is not None:
                    owner.pending.discard(request_id)
                    if not owner.pending:
                        owner.complete.set()

    async def aclose(self) -> None:
        self.end()

    # streams -----------------------------------------------------------------------------------------------

    def open_stream(self, request_ids: set[RequestId]) -> _Stream:
        stream = _Stream(str(self._next_stream), set(request_ids))
        self._next_stream += 1
        self.streams[stream.id] = stream
        for request_id in request_ids:
            self.owner[request_id] = stream
        return stream

    async def _emit(self, stream: _Stream, message: Any, *, last: bool = False) -> None:
        stream.sequence += 1
        event_id = f"{stream.id}_{stream.sequence}"
        store = self.app.options.event_store
        if store is not None and not self.sse_only:
            store.append(self.id, stream.id, stream.sequence, message)
        writer = stream.writer
        if writer is not None and await writer.event(message, None if self.sse_only else event_id, last=last):
            return
        stream.writer = None
        # Nobody is reading this stream now. The GET stream keeps what it missed for the next GET; a POST
        # stream's events wait in the event store for a resuming GET (or here, without a store).
        if store is None or self.sse_only or stream is self.standalone:
            stream.backlog.append((event_id, message))

    async def attach(self, stream: _Stream, writer: _Writer, *, after: int | None) -> None:
        """Point ``stream`` at a client's response, first sending what it missed."""
        store = self.app.options.event_store
        if after is not None and store is not None:
            stream.backlog.clear()  # a resuming client gets the stored events instead
            for sequence, message in store.replay(self.id, stream.id, after):
                if not await writer.event(message, f"{stream.id}_{sequence}"):
                    return
        while stream.backlog:
            event_id, message = stream.backlog.popleft()
            if not await writer.event(message, None if self.sse_only else event_id):
                return
        stream.writer = writer

    async def close_request_stream(self, request_id: RequestId) -> bool:
        """End the SSE response carrying ``request_id`` now, keeping the request running (SEP-1699 polling).

        The client reconnects with GET and ``Last-Event-ID`` after the ``retry`` sent here and gets the rest
        from the event store. False when the stream cannot be resumed (no event store, or no open stream).
        """
        stream = self.owner.get(request_id)
        writer = stream.writer if stream is not None else None
        if stream is None or writer is None or self.app.options.event_store is None or self.sse_only:
            return False
        await writer.raw(encode_event("", id=f"{stream.id}_{stream.sequence}", retry=self.app.options.retry_ms))
        stream.writer = None
        if stream.watch is not None:
            stream.watch.cancel()
        return True

    def touch(self) -> None:
        self.last_activity = trio.current_time()

    def busy(self) -> bool:
        return any(stream.writer is not None for stream in self.streams.values())

    async def deliver(self, message: Any) -> None:
        """Hand a client message to the connection (waits while its inbox is full)."""
        try:
            await self._inbound_send.send(message)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ConnectionClosed("HTTP session ended") from None

    def end(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        self._inbound_send.close()
        self.scope.cancel()
        for stream in self.streams.values():
            stream.complete.set()
        self.app.forget_session(self)


# -- a stateless exchange ---------------------------------------------------------------------------------


class _Exchange:
    """The ``MessageStream`` of one stateless POST: one request in, its notifications and answer out.

    The answer goes as a JSON body when nothing came before it; anything earlier turns the response into
    an SSE stream. Once the answer is written, the stream closes and the connection ends.
    """

    def __init__(self, app: StreamableHttpApp, response: HttpResponse, message: dict[str, Any]) -> None:
        self._app = app
        self._response = response
        self._request_id = message.get("id")
        self._message: dict[str, Any] | None = message
        self.done = trio.Event()
        self._writer: _Writer | None = None

    async def receive(self) -> Any:
        message, self._message = self._message, None
        if message is not None:
            return message
        await self.done.wait()
        raise ConnectionClosed("stateless request finished")

    async def send(self, message: Any, *, related_request_id: RequestId | None = None) -> None:
        if self.done.is_set():
            raise ConnectionClosed("stateless request finished")
        final = type(message) is dict and "method" not in message and message.get("id") == self._request_id
        try:
            if final and self._writer is None:
                await self._response.send(_status_for(message, modern=True), _JSON, encode(message))
            else:
                if self._writer is None:
                    await self._response.start(200, _SSE_HEADERS)
                    self._writer = _Writer(self._response)
                    self._app.keep_alive(self._writer, self.done)
                if not await self._writer.event(message, None, last=final):
                    raise ClientDisconnected()
        except ClientDisconnected:
            self.done.set()
            raise ConnectionClosed("the client closed the stream") from None
        if final:
            self.done.set()

    async def aclose(self) -> None:
        self.done.set()


# -- the application --------------------------------------------------------------------------------------


class StreamableHttpApp:
    """The HTTP handler for MCP: give it to ``serve_http`` (``serve_streamable_http`` does both)."""

    def __init__(
        self,
        connect: ConnectFunction,
        nursery: trio.Nursery,
        *,
        options: HttpTransportOptions = HttpTransportOptions(),
        header_paths: HeaderPaths | None = None,
        bound_host: str = "127.0.0.1",
    ) -> None:
        self.options = options
        self._connect = connect
        self._nursery = nursery
        self._header_paths = header_paths
        self.sessions: dict[str, _Session] = {}
        hosts = options.allowed_hosts
        if hosts is None and _is_loopback(bound_host):
            hosts = tuple(_LOCAL_HOSTS)
        self._allowed_hosts = None if hosts is None else frozenset(h.lower() for h in hosts)
        origins = options.allowed_origins if options.allowed_origins is not None else tuple(_LOCAL_HOSTS)
        self._allowed_origins = frozenset(o.lower().rstrip("/") for o in origins)

    # -- entry ---------------------------------------------------------------------------------------------

    def handles(self, path: str) -> bool:
        """Whether ``path`` is one of this app's endpoints (for serving several apps on one listener)."""
        options = self.options
        if path == options.path:
            return True
        if options.auth is not None and path in options.auth.metadata_paths(options.path):
            return True
        return options.sessions and options.sse_path is not None and path in (options.sse_path, options.messages_path)

    async def __call__(self, request: HttpRequest, response: HttpResponse) -> None:
        refusal = self._check_host_and_origin(request)
        if refusal is not None:
            status, message = refusal
            await _send_error(response, status, None, INVALID_REQUEST, message)
            return
        principal: Any = None
        if self.options.auth is not None:
            principal = await self.options.auth(request, response, self.options.path)
            if principal is None:
                return
        elif self.options.authenticate is not None:
            principal = await self._authenticate(request)
            if principal is None:
                await _send_error(response, 401, None, INVALID_REQUEST, "Unauthorized: a valid bearer token is required",
                                  headers=(("www-authenticate", 'Bearer realm="mcp"'),))
                return
        request_principal.set(principal)
        options = self.options
        if request.path == options.path:
            if request.method == "POST":
                await self._post(request, response)
            elif request.method == "GET":
                await self._get(request, response)
            elif request.method == "DELETE":
                await self._delete(request, response)
            else:
                await response.send(405, (("allow", self._allowed_methods()),))
        elif options.sessions and options.sse_path is not None and request.path == options.sse_path:
            if request.method != "GET":
                await response.send(405, (("allow", "GET"),))
            else:
                await self._legacy_sse(request, response)
        elif options.sessions and options.sse_path is not None and request.path == options.messages_path:
            if request.method != "POST":
                await response.send(405, (("allow", "POST"),))
            else:
                await self._legacy_post(request, response)
        else:
            await response.send(404, (("content-type", "text/plain"),), b"not found\n")

    async def _authenticate(self, request: HttpRequest) -> Any:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        assert self.options.authenticate is not None
        return await self.options.authenticate(token.strip())

    def _allowed_methods(self) -> str:
        return "GET, POST, DELETE" if self.options.sessions else "POST"

    def _check_host_and_origin(self, request: HttpRequest) -> tuple[int, str] | None:
        if self._allowed_hosts is not None:
            host = request.headers.get("host", "")
            if _hostname(host) not in self._allowed_hosts:
                return 421, f"Invalid Host header: {host!r}"
        origin = request.headers.get("origin")
        if origin is not None:
            lowered = origin.lower().rstrip("/")
            parts = urlsplit(lowered)
            host_only = _hostname(parts.netloc) if parts.scheme in ("http", "https") else None
            if lowered not in self._allowed_origins and host_only not in self._allowed_origins:
                return 403, f"Invalid Origin header: {origin!r}"
        return None

    # -- POST ----------------------------------------------------------------------------------------------

    async def _post(self, request: HttpRequest, response: HttpResponse) -> None:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            await _send_error(response, 415, None, INVALID_REQUEST, "Content-Type must be application/json")
            return
        accept = request.headers.get("accept", "*/*").lower()
        if not any(kind in accept for kind in ("application/json", "text/event-stream", "*/*", "application/*")):
            await _send_error(response, 406, None, INVALID_REQUEST,
                              "Accept must allow application/json and text/event-stream")
            return
        message = await _read_message(request, response)
        if message is None:
            return
        header_version = request.headers.get("mcp-protocol-version")
        if self.options.stateless and (
            (type(message) is dict and _is_modern_body(message)) or header_version in MODERN_VERSIONS
        ):
            await self._stateless_post(request, response, message, header_version)
            return
        if not self.options.sessions:
            # A modern-only server names the versions it speaks, so a dual-era client knows it is modern.
            requested = header_version or (message.get("params") or {}).get("protocolVersion") if type(message) is dict else None
            await _send_error(response, 400, _id_of(message), UNSUPPORTED_PROTOCOL_VERSION,
                              "Unsupported protocol version: this server speaks only the stateless revision",
                              data={"supported": list(MODERN_VERSIONS), "requested": requested})
            return
        await self._session_post(request, response, message, header_version)

    async def _stateless_post(
        self, request: HttpRequest, response: HttpResponse, message: Any, header_version: str | None
    ) -> None:
        if type(message) is not dict:
            await _send_error(response, 400, None, INVALID_REQUEST, "Invalid Request: batches are not supported")
            return
        event = classify(message)
        if type(event) is not Request:
            if "method" in message and "id" not in message:
                await response.send(202)  # no client notification is defined over HTTP in this revision
            else:
                await _send_error(response, 400, None, INVALID_REQUEST, "Invalid Request: expected a request")
            return
        mismatch = self._check_modern_headers(request, event, header_version)
        if mismatch is not None:
            await _send_error(response, 400, event.id, HEADER_MISMATCH, f"Header mismatch: {mismatch}")
            return
        exchange = _Exchange(self, response, message)
        with trio.CancelScope() as scope:
            response.cancel_on_disconnect(scope)  # closing the stream is the cancellation
            await self._connect(exchange, modern_only=True, principal=request_principal.get())

    def _check_modern_headers(self, request: HttpRequest, event: Request, header_version: str | None) -> str | None:
        headers = request.headers
        meta = (event.params or {}).get("_meta")
        body_version = meta.get(_META_VERSION) if type(meta) is dict else None
        if header_version is None:
            return "the MCP-Protocol-Version header is required"
        if body_version is not None and header_version != body_version:
            return f"MCP-Protocol-Version {header_version!r} does not match _meta version {body_version!r}"
        for name in ("mcp-method", "mcp-name"):
            if len(headers.get_all(name)) > 1:
                return f"the {name} header appears more than once"
        method_header = headers.get("mcp-method")
        if method_header is None:
            return "the Mcp-Method header is required"
        if method_header.strip(" \t") != event.method:
            return f"Mcp-Method {method_header!r} does not match body method {event.method!r}"
        field = _NAMED.get(event.method)
        if field is not None:
            value = (event.params or {}).get(field)
            name_header = headers.get("mcp-name")
            if name_header is None:
                return "the Mcp-Name header is required"
            if not header_matches(name_header, value):
                return f"Mcp-Name {name_header!r} does not match body {field} {value!r}"
        if event.method == "tools/call" and self._header_paths is not None:
            return self._check_param_headers(headers, event.params or {})
        return None

    def _check_param_headers(self, headers: Any, params: Mapping[str, Any]) -> str | None:
        name = params.get("name")
        paths = self._header_paths(name) if isinstance(name, str) and self._header_paths else None
        if not paths:
            return None
        arguments = params.get("arguments") or {}
        for header, path in paths.items():
            value: Any = arguments
            for key in path:
                value = value.get(key) if isinstance(value, Mapping) else None
            received = headers.get_all(f"mcp-param-{header}")
            if value is None:
                if received:
                    return f"Mcp-Param-{header} was sent but the argument is absent"
                continue
            if len(received) != 1:
                return f"Mcp-Param-{header} is {'missing' if not received else 'repeated'}"
            if not header_matches(received[0], value):
                return f"Mcp-Param-{header} {received[0]!r} does not match the argument {value!r}"
        return None

    async def _session_post(
        self, request: HttpRequest, response: HttpResponse, message: Any, header_version: str | None
    ) -> None:
        if header_version is not None and header_version not in HANDSHAKE_VERSIONS:
            await _send_error(response, 400, _id_of(message), INVALID_REQUEST,
                              f"Unsupported MCP-Protocol-Version: {header_version!r}")
            return
        session_id = request.headers.get("mcp-session-id")
        is_initialize = type(message) is dict and message.get("method") == "initialize"
        if session_id is None:
            if not is_initialize:
                await _send_error(response, 400, _id_of(message), INVALID_REQUEST,
                                  "Bad Request: Mcp-Session-Id header is required")
                return
            session = await self._open_session(response, sse_only=False)
            if session is None:
                return
        else:
            found = self._find_session(session_id)
            if found is None:
                await _send_error(response, 404, _id_of(message), INVALID_REQUEST, "Session not found")
                return
            session = found
        if type(message) is list and session.version != "2025-03-26" and not is_initialize:
            await _send_error(response, 400, None, INVALID_REQUEST,
                              "Invalid Request: JSON-RPC batches exist only in protocol revision 2025-03-26")
            return
        session.touch()
        items = message if type(message) is list else [message]
        request_ids = {item["id"] for item in items if type(item) is dict and "method" in item
                       and is_request_id(item.get("id"))}
        if not request_ids:
            await session.deliver(message)
            await response.send(202)
            return
        stream = session.open_stream(request_ids)
        headers: list[tuple[str, str]] = [("mcp-session-id", session.id)]
        if self.options.json_response:
            await session.deliver(message)
            await _wait_any(stream.complete, response.disconnected, request.server_stopping)
            answers = self._collect_answers(session, stream)
            if not response.disconnected.is_set() and not session.closed.is_set():
                body = answers[0] if type(message) is dict and len(answers) == 1 else answers
                await response.send(200, [*_JSON, *headers], encode(body))
            return
        # The revision is known only once initialize is answered: no priming event before that.
        priming = None if is_initialize else self._priming(session, stream)
        await response.start(200, [*_SSE_HEADERS, *headers], priming or b"")
        writer = _Writer(response)
        await session.attach(stream, writer, after=None)
        await session.deliver(message)
        await self._stream_until_done(session, stream, writer, response)

    def _collect_answers(self, session: _Session, stream: _Stream) -> list[Any]:
        store = self.options.event_store
        events = store.replay(session.id, stream.id, 0) if store is not None else list(enumerate(
            message for _, message in stream.backlog))
        stream.backlog.clear()
        return [message for _, message in events if type(message) is dict and "method" not in message]

    def _priming(self, session: _Session, stream: _Stream) -> bytes | None:
        """On 2025-11-25 a resumable stream opens with an event id and empty data, plus a ``retry`` hint."""
        if session.version >= V2025_11_25 and self.options.event_store is not None:
            return encode_event("", id=f"{stream.id}_0", retry=self.options.retry_ms)
        return None

    async def _stream_until_done(
        self, session: _Session, stream: _Stream, writer: _Writer, response: HttpResponse
    ) -> None:
        """Hold the response open until its stream is complete, the client leaves, or the server stops (then
        the stream is ended cleanly: a client of this era resumes it elsewhere). Idle streams get ``:``
        keep-alive comments. No task is spawned for any of this."""
        with trio.CancelScope() as watch:
            stream.watch = watch
            response.cancel_on_disconnect(watch, or_shutdown=True)
            while not stream.complete.is_set():
                with trio.move_on_after(self.options.keepalive_interval):
                    await stream.complete.wait()
                if not stream.complete.is_set() and not await writer.raw(encode_comment()):
                    break
        if stream.writer is writer:
            stream.writer = None
        if stream.watch is watch:
            stream.watch = None
        if not response.disconnected.is_set() and not response.finished:
            with trio.CancelScope(shield=True):
                try:
                    await response.finish()
                except ClientDisconnected:
                    pass
        session.touch()

    async def _open_session(self, response: HttpResponse, *, sse_only: bool) -> _Session | None:
        if len(self.sessions) >= self.options.max_sessions:
            self.reap_idle()
        if len(self.sessions) >= self.options.max_sessions:
            await _send_error(response, 503, None, INVALID_REQUEST, "Too many sessions; try again later",
                              headers=(("retry-after", "5"),))
            return None
        session = _Session(self, secrets.token_urlsafe(32), sse_only=sse_only, principal=request_principal.get())
        self.sessions[session.id] = session
        self._nursery.start_soon(self._run_session, session)
        return session

    async def _run_session(self, session: _Session) -> None:
        with session.scope:
            try:
                await self._connect(_VersionTracking(session), principal=session.principal)
            except ConnectionClosed:
                pass
        session.end()

    def forget_session(self, session: _Session) -> None:
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]
        if self.options.event_store is not None:
            self.options.event_store.forget(session.id)

    def reap_idle(self) -> None:
        """End sessions that have had no traffic for ``session_idle_timeout`` and have no open stream."""
        limit = trio.current_time() - self.options.session_idle_timeout
        for session in list(self.sessions.values()):
            if session.last_activity < limit and not session.busy():
                logger.info("ending idle HTTP session %s", session.id[:8])
                session.end()

    async def reaper(self) -> NoReturn:
        """Reap idle sessions periodically (runs for the life of the app)."""
        interval = max(min(self.options.session_idle_timeout / 4, 60.0), 0.05)
        while True:
            await trio.sleep(interval)
            self.reap_idle()

    # -- GET and DELETE ------------------------------------------------------------------------------------

    async def _get(self, request: HttpRequest, response: HttpResponse) -> None:
        session = await self._session_for(request, response)
        if session is None:
            return
        if "text/event-stream" not in request.headers.get("accept", "text/event-stream").lower():
            await _send_error(response, 406, None, INVALID_REQUEST, "Accept must allow text/event-stream")
            return
        session.touch()
        last_event = request.headers.get("last-event-id")
        stream, after = session.standalone, None
        if last_event is not None:
            stream_id, _, sequence = last_event.partition("_")
            resumed = session.streams.get(stream_id)
            if resumed is None or not sequence.isdigit():
                await _send_error(response, 400, None, INVALID_REQUEST, f"Unknown Last-Event-ID {last_event!r}")
                return
            stream, after = resumed, int(sequence)
        elif session.standalone.writer is not None:
            await _send_error(response, 409, None, INVALID_REQUEST, "A GET stream is already open for this session")
            return
        await response.start(200, [*_SSE_HEADERS, ("mcp-session-id", session.id)])
        writer = _Writer(response)
        await session.attach(stream, writer, after=after)
        if stream is session.standalone:
            await self._stream_until_done(session, stream, writer, response)
            return
        if stream.complete.is_set():
            await response.finish()
            return
        await self._stream_until_done(session, stream, writer, response)

    async def _delete(self, request: HttpRequest, response: HttpResponse) -> None:
        session = await self._session_for(request, response)
        if session is None:
            return
        session.end()
        await response.send(200)

    async def _session_for(self, request: HttpRequest, response: HttpResponse) -> _Session | None:
        session_id = request.headers.get("mcp-session-id")
        if session_id is None or not self.options.sessions:
            await response.send(405, (("allow", "POST"),))
            return None
        session = self._find_session(session_id)
        if session is None:
            await _send_error(response, 404, None, INVALID_REQUEST, "Session not found")
            return None
        return session

    def _find_session(self, session_id: str) -> _Session | None:
        """The session with this id, if it belongs to this caller (another principal's session is not found)."""
        session = self.sessions.get(session_id)
        if session is None or session.principal != request_principal.get():
            return None
        session.principal = request_principal.get()  # the same caller; its latest token (refreshed, stepped up)
        return session

    # -- HTTP+SSE (2024-11-05) -----------------------------------------------------------------------------

    async def _legacy_sse(self, request: HttpRequest, response: HttpResponse) -> None:
        session = await self._open_session(response, sse_only=True)
        if session is None:
            return
        session.version = "2024-11-05"
        await response.start(200, _SSE_HEADERS)
        writer = _Writer(response, legacy_event=True)
        await writer.raw(encode_event(f"{self.options.messages_path}?session_id={session.id}", event="endpoint"))
        await session.attach(session.standalone, writer, after=None)
        stop = trio.Event()
        self.keep_alive(writer, stop)
        try:
            await _wait_any(session.closed, response.disconnected, request.server_stopping)
        finally:
            stop.set()
            session.end()  # this transport's session lives exactly as long as its stream
        if not response.disconnected.is_set():
            with trio.CancelScope(shield=True):
                try:
                    await response.finish()
                except ClientDisconnected:
                    pass

    async def _legacy_post(self, request: HttpRequest, response: HttpResponse) -> None:
        session_ids = request.query_params.get("session_id") or request.query_params.get("sessionId")
        if not session_ids:
            await _send_error(response, 400, None, INVALID_REQUEST, "session_id is required")
            return
        session = self._find_session(session_ids[0])
        if session is None or not session.sse_only:
            await _send_error(response, 404, None, INVALID_REQUEST, "Session not found")
            return
        message = await _read_message(request, response)
        if message is None:
            return
        session.touch()
        await session.deliver(message)
        await response.send(202, (("content-type", "text/plain"),), b"Accepted")

    # -- helpers -------------------------------------------------------------------------------------------

    def keep_alive(self, writer: _Writer, stop: trio.Event) -> None:
        """Send ``:`` comments on ``writer`` every ``keepalive_interval`` until ``stop`` is set."""

        async def tick() -> None:
            while not stop.is_set():
                with trio.move_on_after(self.options.keepalive_interval):
                    await stop.wait()
                    return
                if not await writer.raw(encode_comment()):
                    return

        self._nursery.start_soon(tick)


class _VersionTracking:
    """The session's ``MessageStream``, noting the revision its ``initialize`` result negotiates."""

    def __init__(self, session: _Session) -> None:
        self._session = session

    async def receive(self) -> Any:
        return await self._session.receive()

    async def send(self, message: Any, *, related_request_id: RequestId | None = None) -> None:
        result = message.get("result") if type(message) is dict else None
        if type(result) is dict and isinstance(result.get("protocolVersion"), str) and "serverInfo" in result:
            self._session.version = result["protocolVersion"]
        await self._session.send(message, related_request_id=related_request_id)

    async def aclose(self) -> None:
        await self._session.aclose()

    async def close_request_stream(self, request_id: RequestId) -> bool:
        """See ``_Session.close_request_stream``."""
        return await self._session.close_request_stream(request_id)

    @property
    def principal(self) -> Any:
        """Who sent the session's latest request (``ServerConnection.principal`` reads it)."""
        return self._session.principal


async def _read_message(request: HttpRequest, response: HttpResponse) -> Any:
    """The POSTed JSON-RPC message (an object or a batch), or None after answering 413/408/400 for it."""
    try:
        body = await request.read_body()
    except RequestBodyError as exc:
        await _send_error(response, exc.status, None, INVALID_REQUEST, f"Invalid request body: {exc}")
        return None
    message = decode(body)
    if type(message) is not dict and type(message) is not list:
        reason = getattr(message, "reason", "Parse error: the body is not a JSON object or array")
        await _send_error(response, 400, None, PARSE_ERROR, reason)
        return None
    return message


def _answers_all(message: Any, pending: set[RequestId]) -> bool:
    """Whether ``message`` (a response, or a batch of them) answers every request still pending on a stream."""
    items = message if type(message) is list else [message]
    return {item.get("id") for item in items if type(item) is dict} >= pending


def _is_modern_body(message: dict[str, Any]) -> bool:
    params = message.get("params")
    meta = params.get("_meta") if type(params) is dict else None
    return type(meta) is dict and _META_VERSION in meta


def _id_of(message: Any) -> RequestId | None:
    request_id = message.get("id") if type(message) is dict else None
    return request_id if is_request_id(request_id) else None


def _status_for(message: dict[str, Any], *, modern: bool) -> int:
    error = message.get("error")
    if not modern or type(error) is not dict:
        return 200
    code = error.get("code")
    if code == METHOD_NOT_FOUND:
        return 404
    return 400 if code in _BAD_REQUEST_CODES else 200


async def _send_error(
    response: HttpResponse,
    status: int,
    request_id: RequestId | None,
    code: int,
    message: str,
    *,
    headers: Sequence[tuple[str, str]] = (),
    data: Any = None,
) -> None:
    body = encode(error_message(request_id, code, message, data))
    try:
        await response.send(status, [*_JSON, *headers], body)
    except ClientDisconnected:
        pass


async def _wait_any(*events: trio.Event) -> None:
    """Return as soon as one of ``events`` is set."""
    if any(event.is_set() for event in events):
        return
    async with trio.open_nursery() as nursery:

        async def wait(event: trio.Event) -> None:
            await event.wait()
            nursery.cancel_scope.cancel()

        for event in events:
            nursery.start_soon(wait, event)


def _hostname(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


async def serve_streamable_http(
    connect: ConnectFunction,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    options: HttpTransportOptions = HttpTransportOptions(),
    header_paths: HeaderPaths | None = None,
    ssl_context: ssl.SSLContext | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """Serve MCP over HTTP (HTTPS with ``ssl_context``) on ``host:port`` until cancelled.

    ``task_status.started()`` gets the bound port. Resource handling: every session and every request runs
    in nurseries this function owns; cancelling it stops accepting, gives in-flight responses
    ``limits.graceful_shutdown_timeout`` seconds, then ends every session.
    """
    await serve_mounts({"": (connect, header_paths, options)}, host, port, ssl_context=ssl_context,
                       task_status=task_status)


Mount = tuple[ConnectFunction, "HeaderPaths | None", HttpTransportOptions]
"""One MCP server on a listener: how to connect to it, its tools' header paths, and its options."""


async def serve_mounts(
    mounts: Mapping[str, Mount],
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    ssl_context: ssl.SSLContext | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """Serve several MCP servers on one listener, each under its own path prefix (``""`` for the root).

    The endpoints of a server mounted at ``/weather`` are ``/weather/mcp``, ``/weather/sse`` and
    ``/weather/messages`` (with the default options). The HTTP limits of the first mount apply to the listener.
    """
    async with trio.open_nursery() as nursery:
        apps = []
        for prefix, (connect, header_paths, options) in mounts.items():
            prefix = prefix.rstrip("/")
            mounted = attrs.evolve(
                options,
                path=prefix + options.path,
                sse_path=None if options.sse_path is None else prefix + options.sse_path,
                messages_path=prefix + options.messages_path,
            )
            app = StreamableHttpApp(connect, nursery, options=mounted, header_paths=header_paths, bound_host=host)
            nursery.start_soon(app.reaper)
            apps.append(app)

        async def route(request: HttpRequest, response: HttpResponse) -> None:
            for app in apps:
                if app.handles(request.path):
                    await app(request, response)
                    return
            await response.send(404, (("content-type", "text/plain"),), b"not found\n")

        limits = next(iter(mounts.values()))[2].limits
        listeners: list[Any] = await trio.open_tcp_listeners(port, host=host)
        if ssl_context is not None:
            listeners = [trio.SSLListener(listener, ssl_context, https_compatible=True) for listener in listeners]
        bound = await nursery.start(functools.partial(serve_http_listeners, route, listeners, limits=limits))
        first = bound[0]
        socket_listener = first.transport_listener if isinstance(first, trio.SSLListener) else first
        assert isinstance(socket_listener, trio.SocketListener)
        task_status.started(int(socket_listener.socket.getsockname()[1]))
        await trio.sleep_forever()
    raise AssertionError("unreachable")
