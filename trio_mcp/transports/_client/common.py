"""What both Streamable HTTP client streams share: an inbox the exchanges fill and ``receive()`` empties, the
task nursery, the connection-failure policy, and the helpers that turn a failed HTTP exchange into a JSON-RPC
error for the request it carried (code ``HTTP_ERROR``), or into ``connection_lost`` when the connection went.

``session`` builds the legacy-era stream on it, ``stateless`` the 2026-07-28 one.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Concatenate, Final, ParamSpec, Protocol, TypeVar

import trio

from ..._core.jsonrpc import RequestId, decode, error_message
from ..._core.sse import SSEDecoder, SSEProtocolError
from ...errors import (
    HEADER_MISMATCH,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    ConnectionClosed,
    TrioMcpError,
)
from .._base import carried_tag, connection_lost, request_tag
from .h11client import ClientResponse, HttpClient, HttpConnectError, HttpError, HttpTimeout, HttpTimeouts

__all__ = [
    "DEFAULT_TIMEOUTS",
    "DELETE_TIMEOUT",
    "HTTP_ERROR",
    "JSON_TYPE",
    "META_VERSION",
    "SSE_TYPE",
    "Call",
    "HeaderPathsFor",
    "HttpAuth",
    "HttpMessageStream",
    "LegacyTransportRequired",
    "as_text",
    "http_failure",
    "is_modern_error",
    "jsonrpc_error_in",
    "media_type",
    "read_excerpt",
    "status_error",
    "with_id",
]

logger = logging.getLogger("trio_mcp.http.client")

#: The JSON-RPC code of the error responses the transports make up for HTTP failures (implementation range).
HTTP_ERROR: Final = -32000

#: Connect within 10 s; a response may be silent for 5 minutes (SSE keep-alive comments reset that clock),
#: so slow tools are bounded by the engine's request timeout, not by the transport.
DEFAULT_TIMEOUTS: Final = HttpTimeouts(connect=10.0, read_idle=300.0)
# For POSTs answered by a bare 202 and for DELETE.
_SHORT_READ: Final = 30.0
DELETE_TIMEOUT: Final = 2.0
_INBOX_SIZE: Final = 128
_EXCERPT_BYTES: Final = 2048
_DRAIN_SECONDS: Final = 0.5
_CONNECT_BACKOFF: Final = 0.2
#: A request answered 503 with Retry-After is sent again this many times at most, waiting at most this long in all.
_BUSY_MAX_WAIT: Final = 5
_BUSY_RETRIES: Final = 3
META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
#: Error codes only a 2026-07-28 server sends in an HTTP 4xx body.
_MODERN_CODES: Final = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})
SSE_TYPE: Final = "text/event-stream"
JSON_TYPE: Final = "application/json"


class HttpAuth(Protocol):
    """What a stream asks of an authorization provider (``trio_mcp.client._oauth.OAuthClientProvider``).

    ``auth_headers(method, url, http=...)`` is read before every request (a DPoP proof names both; ``http`` is
    the client to refresh a token with); on a 401 or 403 the
    stream calls ``handle_challenge`` (with the answer's ``DPoP-Nonce``, if any) and, when it returns True (new
    credentials, a DPoP nonce), sends the request again with fresh headers (at most twice). ``note_success()``
    is called for every answer below 400, and ``note_dpop_nonce()`` for any other answer carrying a
    ``DPoP-Nonce`` (a server may hand out a new nonce in any response: the next proof uses it).
    """

    async def auth_headers(
        self, method: str = "POST", url: str | None = None, *, http: HttpClient | None = None
    ) -> Mapping[str, str]: ...

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

    def note_dpop_nonce(self, url: str, nonce: str) -> None: ...


HeaderPathsFor = Callable[[str], "Mapping[str, Sequence[str]] | None"]
"""For a tool name: ``{x-mcp-header name: property path in the arguments}``, or None (the client layer knows
the tool schemas from ``tools/list``; ``_core.mcp_headers.header_paths`` computes the mapping)."""

_S = TypeVar("_S", bound="HttpMessageStream")
_P = ParamSpec("_P")


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


def media_type(response: ClientResponse) -> str:
    return response.headers.get("content-type", "").split(";")[0].strip().lower()


async def read_excerpt(response: ClientResponse, limit: int = _EXCERPT_BYTES) -> bytes:
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


def as_text(body: bytes) -> str:
    return body.decode("utf-8", "replace")


def jsonrpc_error_in(body: bytes) -> dict[str, Any] | None:
    """The body as a JSON-RPC error response, or None if it is not one."""
    message = decode(body)
    if type(message) is not dict or message.get("jsonrpc") != "2.0" or "method" in message:
        return None
    error = message.get("error")
    if type(error) is not dict or type(error.get("code")) is not int:
        return None
    return message


def with_id(message: dict[str, Any], request_id: RequestId) -> dict[str, Any]:
    """An error body as the response to ``request_id`` (servers may send ``id: null`` in HTTP error bodies)."""
    if message.get("id") == request_id:
        return message
    return {**message, "id": request_id}


def is_modern_error(message: dict[str, Any], status: int) -> bool:
    code = message["error"]["code"]
    return code in _MODERN_CODES or (status == 404 and code == METHOD_NOT_FOUND)


def _retry_after(response: ClientResponse) -> float | None:
    """The ``Retry-After`` delay in seconds (None unless it is a number of seconds; a date is not used)."""
    value = response.headers.get("retry-after", "").strip()
    return float(value) if value.isdigit() else None


def status_error(
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
        data["body"] = as_text(body)
    embedded = jsonrpc_error_in(body)
    if embedded is not None:
        data["error"] = embedded["error"]
        inner = embedded["error"].get("message")
        if isinstance(inner, str):
            detail += f": {inner}"
    challenge = response.headers.get("www-authenticate")
    if challenge is not None:
        data["wwwAuthenticate"] = challenge
    return error_message(request_id, HTTP_ERROR, f"{method} failed: {detail}", data)


def http_failure(request_id: RequestId, method: str, detail: str, status: int | None = None) -> dict[str, Any]:
    data = {"status": status} if status is not None else None
    return error_message(request_id, HTTP_ERROR, f"{method} failed: {detail}", data)


class Call:
    """The requests one POST carries (one, or several in a 2025-03-26 batch) and the task serving them."""

    __slots__ = ("pending", "scope", "tag")

    def __init__(self, pending: dict[RequestId, str]) -> None:
        #: Request id -> method, for the responses not received yet.
        self.pending = pending
        self.scope = trio.CancelScope()
        #: The sender's ``request_tag``: what arrives on this POST's stream carries it (``carried_tag``).
        self.tag = request_tag.get()

    def describe(self) -> str:
        return ", ".join(sorted(set(self.pending.values()))) or "request"


# -- the common machinery ----------------------------------------------------------------------------------


class HttpMessageStream:
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
            connect=timeouts.connect,
            read_idle=min(timeouts.read_idle, _SHORT_READ),
            write=timeouts.write,
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

    @classmethod
    async def connect(
        cls: Callable[Concatenate[str, _P], _S],
        nursery: trio.Nursery,
        url: str,
        /,
        *args: _P.args,
        **options: _P.kwargs,
    ) -> _S:
        """A stream to ``url`` whose tasks live in ``nursery`` (nothing is sent until the first message);
        ``options`` are those of the class's constructor."""
        stream = cls(url, *args, **options)
        await stream._start(nursery)
        return stream

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
                with trio.move_on_after(DELETE_TIMEOUT):
                    await self._finished.wait()
            elif self._own_http:
                await self.http.aclose()

    # -- the inbox -------------------------------------------------------------------------------------------

    async def receive(self) -> Any:
        """The next message from the server (or an error response this transport made up for a failed request)."""
        try:
            message, tag = await self._inbox.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise self._closed_error() from None
        carried_tag.set(tag)
        return message

    async def _feed(self, message: Any, tag: object = None) -> bool:
        try:
            await self._inbox_send.send((message, tag))
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
        """Send a request, retrying only when the server did not handle it.

        That is when no connection could be made (a server unreachable on every attempt closes the stream:
        raises ``ConnectionClosed``), and when it answered 503 with a ``Retry-After`` (busy, or stopping): sent
        again after that delay, ``_BUSY_RETRIES`` times at most and never waiting more than ``_BUSY_MAX_WAIT``
        seconds in all. Other transport failures raise ``HttpError`` for the caller to pin on its request.
        """
        waited = 0.0
        for attempt in range(_BUSY_RETRIES + 1):
            response = await self._http_authorized(method, url, headers, body, timeouts=timeouts)
            delay = _retry_after(response) if response.status == 503 and attempt < _BUSY_RETRIES else None
            if delay is None or waited + delay > _BUSY_MAX_WAIT:
                return response
            waited += delay
            await response.aclose()
            logger.info("%s %s: the server is busy (503); trying again in %g s", method, url, delay)
            await trio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _http_authorized(
        self,
        method: str,
        url: str,
        headers: list[tuple[str, str]],
        body: bytes = b"",
        *,
        timeouts: HttpTimeouts | None = None,
    ) -> ClientResponse:
        """With an ``auth`` provider, its headers go with the request, and a 401/403 it resolves (new
        credentials) sends the request once more."""
        if self.auth is None:
            return await self._http_once(method, url, headers, body, timeouts=timeouts)
        for attempt in range(3):  # the first try, after an authorization, after a DPoP nonce challenge
            sent = dict(await self.auth.auth_headers(method, url, http=self.http))
            names = {name.lower() for name in sent}
            merged = [(name, value) for name, value in headers if name.lower() not in names] + list(sent.items())
            response = await self._http_once(method, url, merged, body, timeouts=timeouts)
            nonce = response.headers.get("dpop-nonce")
            if response.status < 400:
                self.auth.note_success()
            if attempt == 2 or response.status not in (401, 403):
                if nonce:
                    self.auth.note_dpop_nonce(url, nonce)
                return response
            challenge = response.headers.get("www-authenticate")
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
                return await self.http.request(
                    method, url, headers=headers, body=body, timeouts=timeouts or self.timeouts
                )
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
        call: Call | None,
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
                    if not await self._feed(message, call.tag if call is not None else None):
                        return None
                if not chunk:
                    return None
        finally:
            await response.aclose()

    def _answered(self, call: Call, message: Any) -> None:
        for item in message if type(message) is list else (message,):
            if type(item) is dict and "method" not in item and item.get("id") in call.pending:
                call.pending.pop(item["id"])
                self._forget(item["id"], call)

    def _forget(self, request_id: RequestId, call: Call) -> None:
        """Hook: the response to ``request_id`` is in (or was given up on)."""

    async def _fail(self, call: Call, make: Callable[[RequestId, str], dict[str, Any]]) -> None:
        """Answer every request still pending on ``call`` with the error ``make(id, method)``."""
        pending, call.pending = call.pending, {}
        for request_id, method in pending.items():
            self._forget(request_id, call)
            await self._feed(make(request_id, method))

    async def _fail_with_status(self, call: Call, response: ClientResponse, *, modern_bodies: bool) -> None:
        """Fail ``call`` for a non-MCP HTTP answer; a JSON-RPC error body passes through as is when allowed."""
        content_type = media_type(response)
        body = await read_excerpt(response)
        embedded = jsonrpc_error_in(body) if not 200 <= response.status < 300 else None
        if (
            embedded is not None
            and len(call.pending) == 1
            and ((modern_bodies and response.status in (400, 404)) or is_modern_error(embedded, response.status))
        ):
            await self._fail(call, lambda rid, method: with_id(embedded, rid))
            return
        await self._fail(call, lambda rid, method: status_error(rid, method, response, body, content_type=content_type))

    async def _read_json(self, call: Call, response: ClientResponse) -> None:
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
            await self._fail(
                call,
                lambda rid, method: status_error(rid, method, response, raw[:_EXCERPT_BYTES], content_type=JSON_TYPE),
            )
            return
        self._answered(call, message)
        await self._feed(message, call.tag)
        await self._fail(
            call,
            lambda rid, method: http_failure(
                rid, method, "the server's JSON answer did not contain the response", response.status
            ),
        )
