"""MCP over Streamable HTTP, client side: ``MessageStream``s for both protocol eras.

- ``StreamableHttpSessionStream`` speaks the legacy era (2025-03-26 .. 2025-11-25): one POST per message,
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
from collections.abc import Mapping
from typing import Any

import trio

from ..._core.jsonrpc import RequestId, encode, is_request_id
from ..._core.sse import SSEDecoder
from ...errors import ConnectionClosed
from .._base import connection_lost
from .common import (
    DEFAULT_TIMEOUTS,
    DELETE_TIMEOUT,
    HTTP_ERROR,
    JSON_TYPE,
    SSE_TYPE,
    Call,
    HeaderPathsFor,
    HttpAuth,
    HttpMessageStream,
    LegacyTransportRequired,
    as_text,
    http_failure,
    is_modern_error,
    jsonrpc_error_in,
    logger,
    media_type,
    read_excerpt,
    with_id,
)
from .h11client import ClientResponse, HttpClient, HttpError, HttpTimeouts
from .stateless import StatelessHttpStream

__all__ = [
    "DEFAULT_TIMEOUTS",
    "HTTP_ERROR",
    "HeaderPathsFor",
    "HttpAuth",
    "LegacyTransportRequired",
    "StatelessHttpStream",
    "StreamableHttpSessionStream",
]


# -- the legacy era ----------------------------------------------------------------------------------------


class StreamableHttpSessionStream(HttpMessageStream):
    """Streamable HTTP for the legacy revisions (2025-03-26 .. 2025-11-25), as a ``MessageStream``.

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
        max_reconnect_delay: float = 30.0,
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
        max_reconnect_attempts: consecutive resumptions of a request's stream with nothing new before that
            request is given up.
        default_retry: seconds to wait before reconnecting when the server sent no ``retry`` field.
        max_reconnect_delay: the standalone GET stream reconnects for as long as the session lives, waiting
            ``retry`` (or ``default_retry``) seconds, doubled after each reconnection that brought nothing, up to
            this many seconds (or the server's ``retry``, if longer).
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
        self.max_reconnect_delay = max_reconnect_delay
        self.delete_on_close = delete_on_close
        self._init_id: RequestId | None = None
        self._calls: dict[RequestId, Call] = {}
        self._standalone_opened = False

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

    async def send(self, message: Any, *, related_request_id: RequestId | None = None, final: bool = False) -> None:
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
            call = Call(requests)
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
        with trio.move_on_after(DELETE_TIMEOUT):
            try:
                response = await self._http("DELETE", self.url, self._headers(), timeouts=self._short)  # with auth
                await response.aclose()
            except (HttpError, ConnectionClosed, RuntimeError) as exc:
                logger.debug("DELETE of the session failed: %s", exc)

    # -- internals -------------------------------------------------------------------------------------------

    def _headers(
        self, accept: str | None = None, *, post: bool = False, last_event_id: str | None = None
    ) -> list[tuple[str, str]]:
        headers = dict(self.headers)
        if accept is not None:
            headers["accept"] = accept
        if post:
            headers["content-type"] = JSON_TYPE
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        if last_event_id:
            headers["last-event-id"] = last_event_id
        return list(headers.items())

    def _post_headers(self) -> list[tuple[str, str]]:
        return self._headers(f"{JSON_TYPE}, {SSE_TYPE}", post=True)

    def _forget(self, request_id: RequestId, call: Call) -> None:
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
        self._shutdown(
            ConnectionClosed(
                "the server ended the HTTP session (404 Not Found)",
                detail=f"session {(self.session_id or '')[:12]}...; start a new session with initialize",
            )
        )

    async def _initialize(self, call: Call, body: bytes) -> None:
        """POST ``initialize`` in the caller's task up to the response head, so a refusal can be raised."""
        self._init_id = next(rid for rid, method in call.pending.items() if method == "initialize")
        try:
            response = await self._http("POST", self.url, self._post_headers(), body)
        except HttpError as exc:
            detail = f"the POST failed: {exc}"
            self._spawn(self._fail, call, lambda rid, method: connection_lost(rid, method, detail))
            return
        if response.status in (400, 404, 405):
            raw = await read_excerpt(response)
            embedded = jsonrpc_error_in(raw)
            if embedded is None or not is_modern_error(embedded, response.status):
                for request_id in call.pending:
                    self._forget(request_id, call)
                raise LegacyTransportRequired(self.url, response.status, as_text(raw))
            self._spawn(self._fail, call, lambda rid, method: with_id(embedded, rid))
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

    async def _run_call(self, call: Call, body: bytes) -> None:
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

    async def _consume_in_scope(self, call: Call, response: ClientResponse) -> None:
        with call.scope:
            await self._consume(call, response)

    async def _consume(self, call: Call, response: ClientResponse) -> None:
        """Read the answer to a request POST: JSON, or an SSE stream resumed as often as it breaks."""
        try:
            status = response.status
            if status == 404 and self.session_id is not None:
                await response.aclose()
                self._expire()
                return
            content_type = media_type(response)
            if 200 <= status < 300 and status != 202 and content_type == SSE_TYPE:
                await self._follow(call, response)
            elif 200 <= status < 300 and status != 202 and content_type == JSON_TYPE:
                await self._read_json(call, response)
            else:
                await self._fail_with_status(call, response, modern_bodies=False)
        finally:
            await response.aclose()
            for request_id in list(call.pending):
                self._forget(request_id, call)

    async def _follow(self, call: Call, response: ClientResponse) -> None:
        """Read a request's SSE stream; when it ends early, resume with GET + Last-Event-ID after ``retry``."""
        decoder = SSEDecoder()
        failures = 0
        while True:
            before = decoder.last_event_id
            problem = await self._pump(response, decoder, call)
            if not call.pending:
                return
            if problem is not None:
                await self._fail(
                    call,
                    lambda rid, method: http_failure(rid, method, f"unreadable SSE stream: {problem}", 200),  # noqa: B023 (called at once)
                )
                return
            if decoder.last_event_id != before:
                failures = 0
            while True:
                event_id = decoder.last_event_id
                if not event_id:
                    await self._fail(
                        call,
                        lambda rid, method: connection_lost(
                            rid,
                            method,
                            "the server ended the SSE stream before the response, with no event id to resume from",
                        ),
                    )
                    return
                failures += 1
                if failures > self.max_reconnect_attempts:
                    await self._fail(
                        call,
                        lambda rid, method: connection_lost(
                            rid,
                            method,
                            f"the SSE stream broke and {self.max_reconnect_attempts} attempts to resume "
                            f"it (Last-Event-ID {event_id}) brought nothing new",  # noqa: B023 (called at once)
                        ),
                    )  # noqa: B023 (called before the loop moves on)
                    return
                await trio.sleep(decoder.retry / 1000 if decoder.retry is not None else self.default_retry)
                try:
                    response = await self._http("GET", self.url, self._headers(SSE_TYPE, last_event_id=event_id))
                except ConnectionClosed:
                    return
                except HttpError as exc:
                    logger.debug("resuming the stream of %s failed: %s", call.describe(), exc)
                    continue
                if response.status == 404 and self.session_id is not None:
                    await response.aclose()
                    self._expire()
                    return
                if response.status != 200 or media_type(response) != SSE_TYPE:
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
            await read_excerpt(response)
            return
        excerpt = await read_excerpt(response, 500)
        logger.warning("the server refused %s: HTTP %d %s", what, response.status, as_text(excerpt))

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
        """The GET stream for server-initiated messages, reconnected with backoff while the session lives
        (see ``max_reconnect_delay``); given up only when the server refuses it."""
        try:
            await self._run_standalone()
        finally:
            self.standalone_settled.set()

    async def _run_standalone(self) -> None:
        decoder = SSEDecoder()
        failures = 0
        while True:
            headers = self._headers(SSE_TYPE, last_event_id=decoder.last_event_id or None)
            try:
                response = await self._http("GET", self.url, headers)
            except ConnectionClosed:
                return
            except HttpError as exc:
                response = None
                logger.debug("the standalone GET stream failed: %s", exc)
            if response is not None:
                if response.status == 404 and self.session_id is not None:
                    await response.aclose()
                    self._expire()
                    return
                if response.status != 200 or media_type(response) != SSE_TYPE:
                    excerpt = await read_excerpt(response, 300)
                    level = logging.INFO if response.status in (400, 404, 405) else logging.WARNING
                    logger.log(
                        level,
                        "no standalone SSE stream from %s (HTTP %d %s); carrying on without it",
                        self.url,
                        response.status,
                        as_text(excerpt),
                    )
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
            base = decoder.retry / 1000 if decoder.retry is not None else self.default_retry
            delay = min(base * 2 ** min(failures - 1, 32), max(base, self.max_reconnect_delay))
            logger.debug("reconnecting the standalone SSE stream in %.3g s", delay)
            await trio.sleep(delay)
