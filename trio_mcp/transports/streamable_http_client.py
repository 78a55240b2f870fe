"""MCP over Streamable HTTP, client side: ``MessageStream``s for both protocol eras.

- ``StreamableHttpSessionStream`` speaks the handshake era (2025-03-26 .. 2025-11-25): one POST per message,
  the ``Mcp-Session-Id`` and negotiated ``MCP-Protocol-Version`` remembered from ``initialize``, the
  standalone GET stream, resumption of broken SSE streams with GET + ``Last-Event-ID`` after the server's
  ``retry`` delay, and DELETE on close.
- ``StatelessHttpStream`` speaks 2026-07-28: every request its own POST with the standard request headers
  (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``); cancelling a request closes its
  response, which is how HTTP cancels in that revision.

The session engine (``_session.Session``) reads everything through one ``receive()`` loop, so whatever goes
wrong with one HTTP exchange (a 500, an HTML page, a stream that ends too early) is turned into a JSON-RPC
error response for the request it carried (code ``HTTP_ERROR``) and fed into that loop: the caller gets an
``McpError`` naming the status and the method, and the session lives on. Only a server that cannot be reached
at all, or a session the server has ended (404), closes the stream with ``ConnectionClosed``.

Every task runs in a nursery the stream opens inside the nursery it is given (``connect(nursery, url)``);
``aclose()`` ends them all.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Awaitable, Callable, Final, Mapping, Protocol, Sequence, TypeVar

import trio

from .._core.jsonrpc import RequestId, decode, encode, error_message, is_request_id
from .._core.mcp_headers import encode_header_value
from .._core.sse import SSEDecoder, SSEProtocolError
from .._wire.versions import LATEST_VERSION
from ..errors import (
    HEADER_MISMATCH,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    ConnectionClosed,
    TrioMcpError,
)
from ._base import connection_lost
from ._http_client import ClientResponse, HttpClient, HttpConnectError, HttpError, HttpTimeout, HttpTimeouts

__all__ = [
    "DEFAULT_TIMEOUTS",
    "HTTP_ERROR",
    "HeaderPathsFor",
    "HttpAuth",
    "LegacyTransportRequired",
    "StatelessHttpStream",
    "StreamableHttpSessionStream",
]

logger = logging.getLogger("trio_mcp.http.client")

#: The JSON-RPC code of the error responses the transports make up for HTTP failures (implementation range).
HTTP_ERROR: Final = -32000

#: Connect within 10 s; a response may be silent for 5 minutes (SSE keep-alive comments reset that clock),
#: so slow tools are bounded by the engine's request timeout, not by the transport.
DEFAULT_TIMEOUTS: Final = HttpTimeouts(connect=10.0, read_idle=300.0)
# For POSTs answered by a bare 202 and for DELETE.
_SHORT_READ: Final = 30.0
_DELETE_TIMEOUT: Final = 2.0
_INBOX_SIZE: Final = 128
_EXCERPT_BYTES: Final = 2048
_DRAIN_SECONDS: Final = 0.5
_CONNECT_BACKOFF: Final = 0.2
_META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
_NAMED: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                 "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}
#: Error codes only a 2026-07-28 server sends in an HTTP 4xx body.
_MODERN_CODES: Final = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})
_SSE: Final = "text/event-stream"
_JSON: Final = "application/json"

class HttpAuth(Protocol):
    """What a stream asks of an authorization provider (``trio_mcp.client._oauth.OAuthClientProvider``).

    ``auth_headers(method, url)`` is read before every request (a DPoP proof names both); on a 401 or 403 the
    stream calls ``handle_challenge`` (with the answer's ``DPoP-Nonce``, if any) and, when it returns True (new
    credentials, a DPoP nonce), sends the request again with fresh headers (at most twice). ``note_success()``
    is called for every answer below 400.
    """

    async def auth_headers(self, method: str = "POST", url: str | None = None) -> Mapping[str, str]: ...

    async def handle_challenge(
        self,
        http: HttpClient,
        url: str,
        status: int,
        www_authenticate: str | None,
        sent: Mapping[str, str],
        dpop_nonce: str | None = None,
    ) -> bool: ...

    def note_success(self) -> None: ...


HeaderPathsFor = Callable[[str], "Mapping[str, Sequence[str]] | None"]
"""For a tool name: ``{x-mcp-header name: property path in the arguments}``, or None (the client layer knows
the tool schemas from ``tools/list``; ``_core.mcp_headers.header_paths`` computes the mapping)."""

_S = TypeVar("_S", bound="_HttpMessageStream")


class LegacyTransportRequired(TrioMcpError):
    """The ``initialize`` POST got 400/404/405 without a modern JSON-RPC error: try the HTTP+SSE transport.

    Raised from ``send()`` of ``initialize`` (so from ``Client.start``), as the backward-compatibility rule of
    the Streamable HTTP transport asks; ``status`` and ``body`` (an excerpt) say what the server answered.
    """

    def __init__(self, url: str, status: int, body: str) -> None:
        super().__init__(f"POST {url} answered HTTP {status}: the server may only speak the HTTP+SSE transport")
        self.url = url
        self.status = status
        self.body = body


# -- helpers --------------------------------------------------------------------------------------------------


def _content_type(response: ClientResponse) -> str:
    return response.headers.get("content-type", "").split(";")[0].strip().lower()


async def _excerpt(response: ClientResponse, limit: int = _EXCERPT_BYTES) -> bytes:
    """Up to ``limit`` bytes of the body, then the response is closed (never reads an endless body)."""
    chunks: list[bytes] = []
    size = 0
    try:
        with trio.move_on_after(_SHORT_READ):
            while size < limit:
                chunk = await response.receive_some()
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except HttpError:
        pass
    finally:
        await response.aclose()
    return b"".join(chunks)[:limit]


def _text(body: bytes) -> str:
    return body.decode("utf-8", "replace")


def _jsonrpc_error(body: bytes) -> dict[str, Any] | None:
    """The body as a JSON-RPC error response, or None if it is not one."""
    message = decode(body)
    if type(message) is not dict or message.get("jsonrpc") != "2.0" or "method" in message:
        return None
    error = message.get("error")
    if type(error) is not dict or type(error.get("code")) is not int:
        return None
    return message


def _with_id(message: dict[str, Any], request_id: RequestId) -> dict[str, Any]:
    """An error body as the response to ``request_id`` (servers may send ``id: null`` in HTTP error bodies)."""
    if message.get("id") == request_id:
        return message
    return {**message, "id": request_id}


def _is_modern_error(message: dict[str, Any], status: int) -> bool:
    code = message["error"]["code"]
    return code in _MODERN_CODES or (status == 404 and code == METHOD_NOT_FOUND)


def _status_error(
    request_id: RequestId, method: str, response: ClientResponse, body: bytes, *, content_type: str
) -> dict[str, Any]:
    """The JSON-RPC error that stands for an HTTP answer that is not an MCP one."""
    status = response.status
    reason = f" {response.reason}" if response.reason else ""
    if 200 <= status < 300:
        kind = content_type or "no content type"
        detail = f"the server answered HTTP {status} with {kind}, not a JSON-RPC message"
        if content_type == "text/html":
            detail = f"the server answered HTTP {status} with an HTML page, not a JSON-RPC message"
    else:
        detail = f"the server answered HTTP {status}{reason}"
    data: dict[str, Any] = {"status": status}
    if content_type:
        data["contentType"] = content_type
    if body:
        data["body"] = _text(body)
    embedded = _jsonrpc_error(body)
    if embedded is not None:
        data["error"] = embedded["error"]
        inner = embedded["error"].get("message")
        if isinstance(inner, str):
            detail += f": {inner}"
    challenge = response.headers.get("www-authenticate")
    if challenge is not None:
        data["wwwAuthenticate"] = challenge
    return error_message(request_id, HTTP_ERROR, f"{method} failed: {detail}", data)


def _failure(request_id: RequestId, method: str, detail: str, status: int | None = None) -> dict[str, Any]:
    data = {"status": status} if status is not None else None
    return error_message(request_id, HTTP_ERROR, f"{method} failed: {detail}", data)


class _Call:
    """The requests one POST carries (one, or several in a 2025-03-26 batch) and the task serving them."""

    __slots__ = ("pending", "scope")

    def __init__(self, pending: dict[RequestId, str]) -> None:
        #: Request id -> method, for the responses not received yet.
        self.pending = pending
        self.scope = trio.CancelScope()

    def describe(self) -> str:
        return ", ".join(sorted(set(self.pending.values()))) or "request"


# -- the common machinery ----------------------------------------------------------------------------------


class _HttpMessageStream:
    """An inbox that tasks fill and ``receive()`` empties, the task nursery, and connection-failure policy."""

    def __init__(
        self,
        url: str,
        *,
        http: HttpClient | None,
        headers: Mapping[str, str] | None,
        timeouts: HttpTimeouts,
        connect_attempts: int,
        auth: HttpAuth | None = None,
    ) -> None:
        if connect_attempts < 1:
            raise ValueError("connect_attempts must be at least 1")
        #: The MCP endpoint.
        self.url = url
        #: Extra headers on every request (``Authorization``, say); may be updated between requests.
        self.headers: dict[str, str] = {name.lower(): value for name, value in (headers or {}).items()}
        self.timeouts = timeouts
        self._short = HttpTimeouts(
            connect=timeouts.connect, read_idle=min(timeouts.read_idle, _SHORT_READ), write=timeouts.write,
            pool_acquire=timeouts.pool_acquire,
        )
        self._own_http = http is None
        self.http = http if http is not None else HttpClient(timeouts=timeouts)
        self._connect_attempts = connect_attempts
        #: Supplies the ``Authorization`` header and answers 401/403 challenges (None: no authorization).
        self.auth = auth
        self._inbox_send, self._inbox = trio.open_memory_channel[Any](_INBOX_SIZE)
        self._nursery: trio.Nursery | None = None
        self._closed: ConnectionClosed | None = None
        self._stop = trio.Event()
        self._finished = trio.Event()
        self._started = False
        self._aclosed = False

    # -- lifetime --------------------------------------------------------------------------------------------

    async def _start(self, nursery: trio.Nursery) -> None:
        await nursery.start(self._run)
        self._started = True

    async def _run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with trio.open_nursery() as tasks:
                self._nursery = tasks
                task_status.started()
                await self._stop.wait()
                tasks.cancel_scope.cancel()
        finally:
            self._shutdown(ConnectionClosed("the HTTP transport stopped"))
            if self._own_http:
                with trio.CancelScope(shield=True):
                    await self.http.aclose()
            self._finished.set()

    def _shutdown(self, reason: ConnectionClosed) -> None:
        """Close the inbox (``receive()`` raises ``reason`` once it is empty) and stop every task."""
        if self._closed is None:
            self._closed = reason
        self._inbox_send.close()
        self._stop.set()

    def _closed_error(self) -> ConnectionClosed:
        closed = self._closed or ConnectionClosed("the HTTP transport is closed")
        return ConnectionClosed(closed.reason, detail=closed.detail)

    def _check_open(self) -> None:
        if self._closed is not None or self._aclosed:
            raise self._closed_error()
        if self._nursery is None:
            raise RuntimeError("start the stream with its connect() class method first")

    def _spawn(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        if self._nursery is None or self._closed is not None:
            raise self._closed_error()
        try:
            self._nursery.start_soon(self._guarded, fn, *args)
        except RuntimeError:  # the nursery is exiting: the transport is stopping
            raise self._closed_error() from None

    async def _guarded(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        """The stream is the failure boundary: a bug in one of its tasks closes it, not the caller's nursery."""
        try:
            await fn(*args)
        except Exception as exc:
            logger.exception("the HTTP transport to %s failed", self.url)
            self._shutdown(ConnectionClosed("the HTTP transport failed", detail=repr(exc)))

    async def _before_close(self) -> None:
        """What a transport says to the server on the way out (DELETE for sessions)."""

    async def aclose(self) -> None:
        """Stop every task and close the inbox; bounded, so it is safe in a ``finally``."""
        if self._aclosed:
            return
        self._aclosed = True
        with trio.CancelScope(shield=True):
            if self._closed is None:
                await self._before_close()
            self._shutdown(ConnectionClosed("the HTTP transport was closed"))
            if self._started:
                with trio.move_on_after(_DELETE_TIMEOUT):
                    await self._finished.wait()
            elif self._own_http:
                await self.http.aclose()

    # -- the inbox -------------------------------------------------------------------------------------------

    async def receive(self) -> Any:
        """The next message from the server (or an error response this transport made up for a failed request)."""
        try:
            return await self._inbox.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise self._closed_error() from None

    async def _feed(self, message: Any) -> bool:
        try:
            await self._inbox_send.send(message)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return False
        return True

    def _feed_soon(self, message: Any) -> None:
        """Feed from a task of its own: a sender must never wait on the inbox its own reader empties."""

        async def feed() -> None:
            await self._feed(message)

        try:
            self._spawn(feed)
        except ConnectionClosed:
            pass

    # -- HTTP ------------------------------------------------------------------------------------------------

    async def _http(
        self,
        method: str,
        url: str,
        headers: list[tuple[str, str]],
        body: bytes = b"",
        *,
        timeouts: HttpTimeouts | None = None,
    ) -> ClientResponse:
        """Send a request, retrying only when no connection could be made (so nothing was sent).

        A server unreachable on every attempt closes the stream: raises ``ConnectionClosed``. Other transport
        failures raise ``HttpError`` for the caller to pin on its request. With an ``auth`` provider, its
        headers go with the request, and a 401/403 it resolves (new credentials) sends the request once more.
        """
        if self.auth is None:
            return await self._http_once(method, url, headers, body, timeouts=timeouts)
        for attempt in range(3):  # the first try, after an authorization, after a DPoP nonce challenge
            sent = dict(await self.auth.auth_headers(method, url))
            names = {name.lower() for name in sent}
            merged = [(name, value) for name, value in headers if name.lower() not in names] + list(sent.items())
            response = await self._http_once(method, url, merged, body, timeouts=timeouts)
            if response.status < 400:
                self.auth.note_success()
                return response
            if attempt == 2 or response.status not in (401, 403):
                return response
            challenge = response.headers.get("www-authenticate")
            nonce = response.headers.get("dpop-nonce")
            if not await self.auth.handle_challenge(self.http, self.url, response.status, challenge, sent, nonce):
                return response
            await response.aclose()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _http_once(
        self,
        method: str,
        url: str,
        headers: list[tuple[str, str]],
        body: bytes = b"",
        *,
        timeouts: HttpTimeouts | None = None,
    ) -> ClientResponse:
        failure: HttpError | None = None
        for attempt in range(self._connect_attempts):
            if attempt:
                await trio.sleep(_CONNECT_BACKOFF * 2 ** (attempt - 1))
            try:
                return await self.http.request(method, url, headers=headers, body=body, timeouts=timeouts or self.timeouts)
            except HttpConnectError as exc:
                failure = exc
            except HttpTimeout as exc:
                if exc.phase != "connect":
                    raise
                failure = exc
            except RuntimeError:  # the HttpClient was closed under us
                raise self._closed_error() from None
        reason = ConnectionClosed(f"cannot reach the MCP server at {url}", detail=str(failure))
        self._shutdown(reason)
        raise self._closed_error()

    async def _pump(
        self,
        response: ClientResponse,
        decoder: SSEDecoder,
        call: _Call | None,
        *,
        on_message: Callable[[Any], None] | None = None,
    ) -> str | None:
        """Feed the messages of one SSE response until it ends (or, with ``call``, until its responses are in).

        Returns None when the stream ended (or everything expected arrived), or a reason it cannot go on.
        Always closes ``response``. Events with empty data (priming events) and comments are skipped, as are
        events of other types than ``message``.
        """
        try:
            drain_at = math.inf
            while True:
                if call is not None and not call.pending and drain_at == math.inf:
                    # Everything arrived: read on briefly, so the connection can go back to the pool.
                    drain_at = trio.current_time() + _DRAIN_SECONDS
                with trio.move_on_at(drain_at) as draining:
                    try:
                        chunk = await response.receive_some()
                    except HttpTimeout as exc:
                        logger.debug("SSE stream from %s idle: %s", self.url, exc)
                        return None
                    except HttpError as exc:
                        logger.debug("SSE stream from %s broke: %s", self.url, exc)
                        return None
                if draining.cancelled_caught:
                    return None
                try:
                    events = decoder.receive_data(chunk) if chunk else decoder.receive_eof()
                except SSEProtocolError as exc:
                    return str(exc)
                for event in events:
                    if not event.data or event.event != "message":
                        continue
                    message = decode(event.data)
                    if type(message) is not dict and type(message) is not list:
                        logger.warning("skipping an SSE event that is not a JSON-RPC message: %r", event.data[:200])
                        continue
                    if call is not None:
                        self._answered(call, message)
                    if on_message is not None:
                        on_message(message)
                    if not await self._feed(message):
                        return None
                if not chunk:
                    return None
        finally:
            await response.aclose()

    def _answered(self, call: _Call, message: Any) -> None:
        for item in message if type(message) is list else (message,):
            if type(item) is dict and "method" not in item and item.get("id") in call.pending:
                call.pending.pop(item["id"])
                self._forget(item["id"], call)

    def _forget(self, request_id: RequestId, call: _Call) -> None:
        """Hook: the response to ``request_id`` is in (or was given up on)."""

    async def _fail(self, call: _Call, make: Callable[[RequestId, str], dict[str, Any]]) -> None:
        """Answer every request still pending on ``call`` with the error ``make(id, method)``."""
        pending, call.pending = call.pending, {}
        for request_id, method in pending.items():
            self._forget(request_id, call)
            await self._feed(make(request_id, method))

    async def _fail_with_status(self, call: _Call, response: ClientResponse, *, modern_bodies: bool) -> None:
        """Fail ``call`` for a non-MCP HTTP answer; a JSON-RPC error body passes through as is when allowed."""
        content_type = _content_type(response)
        body = await _excerpt(response)
        embedded = _jsonrpc_error(body) if not 200 <= response.status < 300 else None
        if embedded is not None and len(call.pending) == 1 and (
            (modern_bodies and response.status in (400, 404)) or _is_modern_error(embedded, response.status)
        ):
            await self._fail(call, lambda rid, method: _with_id(embedded, rid))
            return
        await self._fail(call, lambda rid, method: _status_error(rid, method, response, body, content_type=content_type))

    async def _read_json(self, call: _Call, response: ClientResponse) -> None:
        """Feed a JSON answer; requests it does not answer fail."""
        try:
            raw = await response.read()
        except HttpError as exc:
            detail = f"reading the answer failed: {exc}"
            await self._fail(call, lambda rid, method: connection_lost(rid, method, detail))
            return
        finally:
            await response.aclose()
        message = decode(raw)
        if type(message) is not dict and type(message) is not list:
            await self._fail(call, lambda rid, method: _status_error(
                rid, method, response, raw[:_EXCERPT_BYTES], content_type=_JSON))
            return
        self._answered(call, message)
        await self._feed(message)
        await self._fail(call, lambda rid, method: _failure(
            rid, method, "the server's JSON answer did not contain the response", response.status))


# -- the handshake era -------------------------------------------------------------------------------------


class StreamableHttpSessionStream(_HttpMessageStream):
    """Streamable HTTP for the handshake revisions (2025-03-26 .. 2025-11-25), as a ``MessageStream``.

    Create it with ``await StreamableHttpSessionStream.connect(nursery, url)`` and run a ``Client`` over it.
    ``session_id`` and ``protocol_version`` are learnt from ``initialize``; ``session_expired`` tells why the
    stream closed when the server ended the session (the caller may start over with a new stream).
    """

    def __init__(
        self,
        url: str,
        *,
        http: HttpClient | None = None,
        headers: Mapping[str, str] | None = None,
        timeouts: HttpTimeouts = DEFAULT_TIMEOUTS,
        standalone_stream: bool = True,
        max_reconnect_attempts: int = 3,
        default_retry: float = 1.0,
        connect_attempts: int = 3,
        delete_on_close: bool = True,
        auth: HttpAuth | None = None,
    ) -> None:
        """Args:
        url: the MCP endpoint.
        http: a client to share (its connection limit bounds concurrent requests); by default one of its own,
            closed with the stream.
        headers: extra headers on every request.
        timeouts: connect and read-idle bounds (see ``DEFAULT_TIMEOUTS``).
        standalone_stream: open the GET stream for server-initiated messages after initialization.
        max_reconnect_attempts: consecutive reconnections with nothing new before a broken stream is given up.
        default_retry: seconds to wait before reconnecting when the server sent no ``retry`` field.
        connect_attempts: tries before a server that refuses connections closes the stream.
        delete_on_close: send DELETE for the session in ``aclose()``.
        auth: an authorization provider (``HttpAuth``): its headers on every request, 401/403 answered by it.
        """
        super().__init__(
            url, http=http, headers=headers, timeouts=timeouts, connect_attempts=connect_attempts, auth=auth
        )
        #: The ``Mcp-Session-Id`` the server assigned (None before initialize, or when it assigns none).
        self.session_id: str | None = None
        #: The revision ``initialize`` negotiated; sent as ``MCP-Protocol-Version`` from then on.
        self.protocol_version: str | None = None
        #: True once the server answered 404 for our session: the stream is closed, start a new session.
        self.session_expired = False
        #: Set while the standalone GET stream is connected.
        self.standalone_connected = trio.Event()
        #: Set once the first attempt at the GET stream has an outcome (open, refused or failed), so a
        #: caller can wait for it before its first request: some servers drop requests sent before it.
        self.standalone_settled = trio.Event()
        self.standalone_stream = standalone_stream
        self.max_reconnect_attempts = max_reconnect_attempts
        self.default_retry = default_retry
        self.delete_on_close = delete_on_close
        self._init_id: RequestId | None = None
        self._calls: dict[RequestId, _Call] = {}
        self._standalone_opened = False

    @classmethod
    async def connect(cls: type[_S], nursery: trio.Nursery, url: str, **options: Any) -> _S:
        """A stream whose tasks live in ``nursery`` (nothing is sent until the first message)."""
        stream = cls(url, **options)
        await stream._start(nursery)
        return stream

    # -- MessageStream ---------------------------------------------------------------------------------------

    async def receive(self) -> Any:
        """The next server message; notes the negotiated revision when the ``initialize`` result goes by."""
        message = await super().receive()
        if self._init_id is not None and type(message) is dict and "method" not in message:
            if message.get("id") == self._init_id:
                self._init_id = None
                result = message.get("result")
                if type(result) is dict and isinstance(result.get("protocolVersion"), str):
                    self.protocol_version = result["protocolVersion"]
        return message

    async def send(self, message: Any, *, related_request_id: RequestId | None = None) -> None:
        """POST one message (or batch). Requests are answered through ``receive()``; this returns at once.

        Raises ``LegacyTransportRequired`` for an ``initialize`` the server refuses with 400/404/405 and no
        modern JSON-RPC error, and ``ConnectionClosed`` once the server is unreachable or the session ended.
        """
        self._check_open()
        items = message if type(message) is list else [message]
        requests: dict[RequestId, str] = {}
        cancelled: list[Any] = []
        for item in items:
            if type(item) is not dict or not isinstance(item.get("method"), str):
                continue
            if "id" in item and is_request_id(item["id"]):
                requests[item["id"]] = item["method"]
            elif item["method"] == "notifications/cancelled" and type(item.get("params")) is dict:
                cancelled.append(item["params"].get("requestId"))
        body = encode(message)
        if requests:
            call = _Call(requests)
            for request_id in requests:
                self._calls[request_id] = call
            if "initialize" in requests.values():
                await self._initialize(call, body)
            else:
                self._spawn(self._run_call, call, body)
            return
        try:
            await self._post_accepted(body, items)
        finally:
            for request_id in cancelled:
                self._abandon(request_id)
        if any(type(item) is dict and item.get("method") == "notifications/initialized" for item in items):
            self._open_standalone()

    async def _before_close(self) -> None:
        if self.session_id is None or not self.delete_on_close:
            return
        with trio.move_on_after(_DELETE_TIMEOUT):
            try:
                response = await self._http("DELETE", self.url, self._headers(), timeouts=self._short)  # with auth
                await response.aclose()
            except (HttpError, ConnectionClosed, RuntimeError) as exc:
                logger.debug("DELETE of the session failed: %s", exc)

    # -- internals -------------------------------------------------------------------------------------------

    def _headers(self, accept: str | None = None, *, post: bool = False, last_event_id: str | None = None) -> list[tuple[str, str]]:
        headers = dict(self.headers)
        if accept is not None:
            headers["accept"] = accept
        if post:
            headers["content-type"] = _JSON
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        if last_event_id:
            headers["last-event-id"] = last_event_id
        return list(headers.items())

    def _post_headers(self) -> list[tuple[str, str]]:
        return self._headers(f"{_JSON}, {_SSE}", post=True)

    def _forget(self, request_id: RequestId, call: _Call) -> None:
        if self._calls.get(request_id) is call:
            del self._calls[request_id]

    def _abandon(self, request_id: Any) -> None:
        """The engine cancelled ``request_id``: no response will come, so stop reading for it."""
        call = self._calls.pop(request_id, None) if is_request_id(request_id) else None
        if call is None:
            return
        call.pending.pop(request_id, None)
        if not call.pending:
            call.scope.cancel()

    def _expire(self) -> None:
        self.session_expired = True
        self._shutdown(ConnectionClosed(
            "the server ended the HTTP session (404 Not Found)",
            detail=f"session {(self.session_id or '')[:12]}...; start a new session with initialize",
        ))

    async def _initialize(self, call: _Call, body: bytes) -> None:
        """POST ``initialize`` in the caller's task up to the response head, so a refusal can be raised."""
        self._init_id = next(rid for rid, method in call.pending.items() if method == "initialize")
        try:
            response = await self._http("POST", self.url, self._post_headers(), body)
        except HttpError as exc:
            detail = f"the POST failed: {exc}"
            self._spawn(self._fail, call, lambda rid, method: connection_lost(rid, method, detail))
            return
        if response.status in (400, 404, 405):
            raw = await _excerpt(response)
            embedded = _jsonrpc_error(raw)
            if embedded is None or not _is_modern_error(embedded, response.status):
                for request_id in call.pending:
                    self._forget(request_id, call)
                raise LegacyTransportRequired(self.url, response.status, _text(raw))
            self._spawn(self._fail, call, lambda rid, method: _with_id(embedded, rid))
            return
        session_id = response.headers.get("mcp-session-id")
        if session_id is not None and 200 <= response.status < 300:
            if session_id and all(0x21 <= ord(ch) <= 0x7E for ch in session_id):
                self.session_id = session_id
            else:
                logger.warning("ignoring an Mcp-Session-Id with characters outside visible ASCII: %r", session_id)
        try:
            self._spawn(self._consume_in_scope, call, response)
        except BaseException:
            await response.aclose()
            raise

    async def _run_call(self, call: _Call, body: bytes) -> None:
        with call.scope:
            try:
                response = await self._http("POST", self.url, self._post_headers(), body)
            except ConnectionClosed:
                return
            except HttpError as exc:
                detail = f"the POST failed: {exc}"
                await self._fail(call, lambda rid, method: connection_lost(rid, method, detail))
                return
            await self._consume(call, response)

    async def _consume_in_scope(self, call: _Call, response: ClientResponse) -> None:
        with call.scope:
            await self._consume(call, response)

    async def _consume(self, call: _Call, response: ClientResponse) -> None:
        """Read the answer to a request POST: JSON, or an SSE stream resumed as often as it breaks."""
        try:
            status = response.status
            if status == 404 and self.session_id is not None:
                await response.aclose()
                self._expire()
                return
            content_type = _content_type(response)
            if 200 <= status < 300 and status != 202 and content_type == _SSE:
                await self._follow(call, response)
            elif 200 <= status < 300 and status != 202 and content_type == _JSON:
                await self._read_json(call, response)
            else:
                await self._fail_with_status(call, response, modern_bodies=False)
        finally:
            await response.aclose()
            for request_id in list(call.pending):
                self._forget(request_id, call)

    async def _follow(self, call: _Call, response: ClientResponse) -> None:
        """Read a request's SSE stream; when it ends early, resume with GET + Last-Event-ID after ``retry``."""
        decoder = SSEDecoder()
        failures = 0
        while True:
            before = decoder.last_event_id
            problem = await self._pump(response, decoder, call)
            if not call.pending:
                return
            if problem is not None:
                await self._fail(call, lambda rid, method: _failure(rid, method, f"unreadable SSE stream: {problem}", 200))
                return
            if decoder.last_event_id != before:
                failures = 0
            while True:
                event_id = decoder.last_event_id
                if not event_id:
                    await self._fail(call, lambda rid, method: connection_lost(
                        rid, method, "the server ended the SSE stream before the response, "
                        "with no event id to resume from"))
                    return
                failures += 1
                if failures > self.max_reconnect_attempts:
                    await self._fail(call, lambda rid, method: connection_lost(
                        rid, method, f"the SSE stream broke and {self.max_reconnect_attempts} attempts to resume "
                        f"it (Last-Event-ID {event_id}) brought nothing new"))
                    return
                await trio.sleep(decoder.retry / 1000 if decoder.retry is not None else self.default_retry)
                try:
                    response = await self._http("GET", self.url, self._headers(_SSE, last_event_id=event_id))
                except ConnectionClosed:
                    return
                except HttpError as exc:
                    logger.debug("resuming the stream of %s failed: %s", call.describe(), exc)
                    continue
                if response.status == 404 and self.session_id is not None:
                    await response.aclose()
                    self._expire()
                    return
                if response.status != 200 or _content_type(response) != _SSE:
                    await self._fail_with_status(call, response, modern_bodies=False)
                    return
                break

    async def _post_accepted(self, body: bytes, items: list[Any]) -> None:
        """POST notifications or responses; the server should answer 202. Only a dead server or session raises."""
        what = ", ".join(
            str(item.get("method") or f"response to {item.get('id')!r}") for item in items if type(item) is dict
        )
        try:
            response = await self._http("POST", self.url, self._post_headers(), body, timeouts=self._short)
        except HttpError as exc:
            logger.warning("could not deliver %s: %s", what, exc)
            return
        if response.status == 404 and self.session_id is not None:
            await response.aclose()
            self._expire()
            raise self._closed_error()
        if 200 <= response.status < 300:
            await _excerpt(response)
            return
        excerpt = await _excerpt(response, 500)
        logger.warning("the server refused %s: HTTP %d %s", what, response.status, _text(excerpt))

    def _open_standalone(self) -> None:
        if not self.standalone_stream:
            self.standalone_settled.set()
        if self.standalone_stream and not self._standalone_opened:
            self._standalone_opened = True
            try:
                self._spawn(self._standalone)
            except ConnectionClosed:
                pass

    async def _standalone(self) -> None:
        """The GET stream for server-initiated messages; reconnects after ``retry``, gives up quietly."""
        try:
            await self._run_standalone()
        finally:
            self.standalone_settled.set()

    async def _run_standalone(self) -> None:
        decoder = SSEDecoder()
        failures = 0
        while True:
            headers = self._headers(_SSE, last_event_id=decoder.last_event_id or None)
            try:
                response = await self._http("GET", self.url, headers)
            except ConnectionClosed:
                return
            except HttpError as exc:
                response = None
                logger.debug("the standalone GET stream failed: %s", exc)
            if response is not None:
                if response.status != 200 or _content_type(response) != _SSE:
                    excerpt = await _excerpt(response, 300)
                    level = logging.INFO if response.status in (400, 404, 405) else logging.WARNING
                    logger.log(level, "no standalone SSE stream from %s (HTTP %d %s); carrying on without it",
                               self.url, response.status, _text(excerpt))
                    return
                self.standalone_connected.set()
                self.standalone_settled.set()
                received = False

                def note(message: Any) -> None:
                    nonlocal received
                    received = True

                before = decoder.last_event_id
                try:
                    problem = await self._pump(response, decoder, None, on_message=note)
                finally:
                    self.standalone_connected = trio.Event()
                if problem is not None:
                    logger.warning("giving up the standalone SSE stream: %s", problem)
                    return
                if received or decoder.last_event_id != before:
                    failures = 0
            failures += 1
            if failures > self.max_reconnect_attempts:
                logger.warning("giving up the standalone SSE stream after %d attempts", failures - 1)
                return
            await trio.sleep(decoder.retry / 1000 if decoder.retry is not None else self.default_retry)


# -- 2026-07-28 --------------------------------------------------------------------------------------------


class StatelessHttpStream(_HttpMessageStream):
    """Streamable HTTP for 2026-07-28, as a ``MessageStream``: one self-contained POST per request.

    Requests must carry their ``_meta`` (the client layer adds it). The engine's ``notifications/cancelled``
    closes the request's response instead of being sent, which is what cancellation is on HTTP now; other
    notifications and responses have no meaning here and are dropped.
    """

    def __init__(
        self,
        url: str,
        *,
        http: HttpClient | None = None,
        headers: Mapping[str, str] | None = None,
        timeouts: HttpTimeouts = DEFAULT_TIMEOUTS,
        header_paths_for: HeaderPathsFor | None = None,
        protocol_version: str = LATEST_VERSION,
        connect_attempts: int = 3,
        auth: HttpAuth | None = None,
    ) -> None:
        """Args:
        url, http, headers, timeouts, connect_attempts, auth: as for ``StreamableHttpSessionStream``.
        header_paths_for: the ``x-mcp-header`` paths of a tool, for the ``Mcp-Param-*`` headers of tools/call.
        protocol_version: the ``MCP-Protocol-Version`` for a request whose ``_meta`` names none.
        """
        super().__init__(
            url, http=http, headers=headers, timeouts=timeouts, connect_attempts=connect_attempts, auth=auth
        )
        self.header_paths_for = header_paths_for
        self.protocol_version = protocol_version
        self._calls: dict[RequestId, _Call] = {}

    @classmethod
    async def connect(cls: type[_S], nursery: trio.Nursery, url: str, **options: Any) -> _S:
        """A stream whose tasks live in ``nursery``."""
        stream = cls(url, **options)
        await stream._start(nursery)
        return stream

    def request_headers(self, message: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The headers of the POST that carries the request ``message`` (the standard MCP request headers)."""
        method = str(message.get("method"))
        params = message.get("params")
        params = params if isinstance(params, Mapping) else {}
        meta = params.get("_meta")
        version = meta.get(_META_VERSION) if isinstance(meta, Mapping) else None
        headers = dict(self.headers)
        headers["accept"] = f"{_JSON}, {_SSE}"
        headers["content-type"] = _JSON
        headers["mcp-protocol-version"] = version if isinstance(version, str) else self.protocol_version
        headers["mcp-method"] = method
        field = _NAMED.get(method)
        if field is not None and isinstance(params.get(field), str):
            headers["mcp-name"] = encode_header_value(params[field])
        name = params.get("name")
        if method == "tools/call" and self.header_paths_for is not None and isinstance(name, str):
            arguments = params.get("arguments")
            for header, path in (self.header_paths_for(name) or {}).items():
                value: Any = arguments
                for key in path:
                    value = value.get(key) if isinstance(value, Mapping) else None
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                if value is None:
                    continue  # null or absent: the header is left out
                if not isinstance(value, (str, int, bool)):
                    logger.warning("tool %r: argument for Mcp-Param-%s is a %s, not a scalar; header left out",
                                   name, header, type(value).__name__)
                    continue
                headers[f"mcp-param-{header.lower()}"] = encode_header_value(value)
        return list(headers.items())

    async def send(self, message: Any, *, related_request_id: RequestId | None = None) -> None:
        """POST a request (answered through ``receive()``); a cancellation closes that request's stream."""
        self._check_open()
        if type(message) is not dict:
            logger.warning("dropping a JSON-RPC batch: 2026-07-28 has none")
            return
        method = message.get("method")
        if isinstance(method, str) and "id" in message and is_request_id(message["id"]):
            call = _Call({message["id"]: method})
            self._calls[message["id"]] = call
            self._spawn(self._run_request, call, encode(message), self.request_headers(message))
        elif method == "notifications/cancelled":
            params = message.get("params")
            request_id = params.get("requestId") if type(params) is dict else None
            cancelled = self._calls.pop(request_id, None) if is_request_id(request_id) else None
            if cancelled is not None:
                cancelled.pending.clear()
                cancelled.scope.cancel()  # closing the response stream is the cancellation
        elif isinstance(method, str):
            logger.debug("dropping %s: no client notification is defined over stateless HTTP", method)
        else:
            logger.warning("dropping a response: a 2026-07-28 server sends no requests")

    def _forget(self, request_id: RequestId, call: _Call) -> None:
        if self._calls.get(request_id) is call:
            del self._calls[request_id]

    async def _run_request(self, call: _Call, body: bytes, headers: list[tuple[str, str]]) -> None:
        with call.scope:
            try:
                try:
                    response = await self._http("POST", self.url, headers, body)
                except ConnectionClosed:
                    return
                except HttpError as exc:
                    detail = f"the POST failed: {exc}"
                    await self._fail(call, lambda rid, method: connection_lost(rid, method, detail))
                    return
                content_type = _content_type(response)
                if response.status == 200 and content_type == _SSE:
                    problem = await self._pump(response, SSEDecoder(), call)
                    detail = (f"unreadable SSE stream: {problem}" if problem else
                              "the server ended the SSE stream before the response; a stateless request cannot "
                              "be resumed, re-issue it with a new id")
                    await self._fail(call, lambda rid, method: connection_lost(rid, method, detail))
                elif response.status == 200 and content_type == _JSON:
                    await self._read_json(call, response)
                else:
                    await self._fail_with_status(call, response, modern_bodies=True)
            finally:
                for request_id in list(call.pending):
                    self._forget(request_id, call)

