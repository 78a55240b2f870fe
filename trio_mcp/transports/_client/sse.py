"""The legacy HTTP+SSE transport (protocol revision 2024-11-05), client side, as a ``MessageStream``.

The client GETs the SSE URL and keeps that response open; the server's first event, ``endpoint``, names
the URL to POST messages to, and every server message then arrives on the SSE stream as an ``event:
message``. The endpoint must be on the SSE URL's origin: a server cannot send our messages elsewhere.
There is no resumption in this transport: when the SSE stream ends, the session is over.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Concatenate, Final, ParamSpec, TypeVar
from urllib.parse import urljoin, urlsplit

import trio

from ..._core.jsonrpc import RequestId, decode, encode, is_request_id
from ..._core.sse import ServerSentEvent, SSEDecoder, SSEProtocolError
from ...errors import ConnectionClosed, McpError, RemoteProtocolError
from .._base import connection_lost
from .common import (
    DEFAULT_TIMEOUTS,
    HttpAuth,
    HttpMessageStream,
    as_text,
    media_type,
    read_excerpt,
    status_error,
)
from .h11client import ClientResponse, HttpClient, HttpError, HttpTimeout, HttpTimeouts

__all__ = ["SseClientStream"]

_T = TypeVar("_T", bound="SseClientStream")
_P = ParamSpec("_P")

logger = logging.getLogger("trio_mcp.http.client")

SSE_TYPE: Final = "text/event-stream"


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port if parts.port is not None else {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


class SseClientStream(HttpMessageStream):
    """HTTP+SSE (2024-11-05) as a ``MessageStream``: ``await SseClientStream.connect(nursery, sse_url)``.

    ``connect`` returns once the ``endpoint`` event has arrived (``endpoint_url``); run a ``Client`` with
    ``protocol_version="2024-11-05"`` over it. The stream closes with ``ConnectionClosed`` when the server
    ends the SSE response.
    """

    def __init__(
        self,
        url: str,
        *,
        http: HttpClient | None = None,
        headers: Mapping[str, str] | None = None,
        timeouts: HttpTimeouts = DEFAULT_TIMEOUTS,
        endpoint_timeout: float = 10.0,
        connect_attempts: int = 3,
        auth: HttpAuth | None = None,
    ) -> None:
        """Args:
        url: the SSE URL (the GET endpoint, ``/sse`` on most servers).
        http, headers, timeouts, connect_attempts, auth: as for ``StreamableHttpSessionStream`` (the provider's
            headers go on the GET and on every POST).
        endpoint_timeout: seconds to wait for the ``endpoint`` event.
        """
        super().__init__(
            url, http=http, headers=headers, timeouts=timeouts, connect_attempts=connect_attempts, auth=auth
        )
        self.endpoint_timeout = endpoint_timeout
        #: Where messages are POSTed, from the server's ``endpoint`` event.
        self.endpoint_url: str | None = None

    @classmethod
    async def connect(
        cls: Callable[Concatenate[str, _P], _T],
        nursery: trio.Nursery,
        url: str,
        /,
        *args: _P.args,
        **options: _P.kwargs,
    ) -> _T:
        """Open the SSE stream and wait for the ``endpoint`` event; the reader task then lives in ``nursery``.

        Raises ``ConnectionClosed`` when the GET fails or no endpoint arrives in time, and
        ``RemoteProtocolError`` for an endpoint on another origin.
        """
        stream = cls(url, *args, **options)
        try:
            response, decoder, leftovers = await stream._open()
        except BaseException:
            await stream.aclose()
            raise
        try:
            await stream._start(nursery)
            stream._spawn(stream._read, response, decoder, leftovers)
        except BaseException:
            with trio.CancelScope(shield=True):
                await response.aclose()
                await stream.aclose()
            raise
        return stream

    async def _open(self) -> tuple[ClientResponse, SSEDecoder, list[ServerSentEvent]]:
        headers = dict(self.headers)
        headers["accept"] = SSE_TYPE
        try:
            response = await self._http("GET", self.url, list(headers.items()))
        except HttpError as exc:
            raise ConnectionClosed(f"HTTP+SSE: GET {self.url} failed", detail=str(exc)) from None
        try:
            if response.status in (401, 403):  # refused: the McpError Streamable HTTP gives (status, challenge)
                body_bytes = await read_excerpt(response, 500)
                refusal = status_error(  # (the id is never sent anywhere)
                    0, f"HTTP+SSE: GET {self.url}", response, body_bytes, content_type=media_type(response)
                )
                raise McpError.from_error(refusal["error"])
            if response.status != 200 or media_type(response) != SSE_TYPE:
                body = as_text(await read_excerpt(response, 500))
                raise ConnectionClosed(
                    f"HTTP+SSE: GET {self.url} answered HTTP {response.status} "
                    f"({media_type(response) or 'no content type'}), not an event stream",
                    detail=body or None,
                )
            decoder = SSEDecoder()
            with trio.move_on_after(self.endpoint_timeout):
                while True:
                    try:
                        chunk = await response.receive_some()
                        events = decoder.receive_data(chunk) if chunk else decoder.receive_eof()
                    except (HttpError, SSEProtocolError) as exc:
                        raise ConnectionClosed(
                            "HTTP+SSE: the stream broke before the endpoint event", detail=str(exc)
                        ) from None
                    for index, event in enumerate(events):
                        if event.event == "endpoint":
                            self._set_endpoint(event.data.strip())
                            return response, decoder, events[index + 1 :]
                        logger.debug("ignoring a %r event before the endpoint event", event.event)
                    if not chunk:
                        raise ConnectionClosed("HTTP+SSE: the server closed the stream before the endpoint event")
            raise ConnectionClosed(f"HTTP+SSE: no endpoint event within {self.endpoint_timeout:g} s")
        except BaseException:
            await response.aclose()
            raise

    def _set_endpoint(self, data: str) -> None:
        resolved = urljoin(self.url, data)
        if not data or _origin(resolved) != _origin(self.url):
            raise RemoteProtocolError(
                f"HTTP+SSE: the server's endpoint {data!r} is not on the origin of {self.url}; refusing it"
            )
        self.endpoint_url = resolved

    async def _read(self, response: ClientResponse, decoder: SSEDecoder, leftovers: list[ServerSentEvent]) -> None:
        """Feed every ``message`` event until the stream ends, which ends the session."""
        reason = ConnectionClosed("HTTP+SSE: the server closed the event stream")
        try:
            events = leftovers
            while True:
                for event in events:
                    if event.event != "message" or not event.data:
                        continue
                    message = decode(event.data)
                    if type(message) is not dict and type(message) is not list:
                        logger.warning("skipping an SSE event that is not a JSON-RPC message: %r", event.data[:200])
                        continue
                    if not await self._feed(message):
                        return
                events = []
                try:
                    chunk = await response.receive_some()
                except HttpTimeout:
                    continue  # a quiet stream is not a dead one; the response stays usable
                except HttpError as exc:
                    reason = ConnectionClosed("HTTP+SSE: the event stream broke", detail=str(exc))
                    return
                try:
                    events = decoder.receive_data(chunk) if chunk else decoder.receive_eof()
                except SSEProtocolError as exc:
                    reason = ConnectionClosed("HTTP+SSE: unreadable event stream", detail=str(exc))
                    return
                if not chunk:
                    return
        finally:
            with trio.CancelScope(shield=True):
                await response.aclose()
            self._shutdown(reason)

    async def send(self, message: Any, *, related_request_id: RequestId | None = None, final: bool = False) -> None:
        """POST one message to the endpoint; a refused request is answered with an error through ``receive()``.

        Raises ``ConnectionClosed`` once the server is unreachable or has forgotten the session (404).
        """
        self._check_open()
        assert self.endpoint_url is not None
        items = message if type(message) is list else [message]
        requests = {
            item["id"]: item["method"]
            for item in items
            if type(item) is dict and isinstance(item.get("method"), str) and "id" in item and is_request_id(item["id"])
        }
        headers = dict(self.headers)
        headers["content-type"] = "application/json"
        try:
            response = await self._http(
                "POST", self.endpoint_url, list(headers.items()), encode(message), timeouts=self._short
            )
        except HttpError as exc:
            for request_id, method in requests.items():
                self._feed_soon(connection_lost(request_id, method, f"the POST failed: {exc}"))
            if not requests:
                logger.warning("could not deliver a message to %s: %s", self.endpoint_url, exc)
            return
        if 200 <= response.status < 300:
            await read_excerpt(response)
            return
        content_type = media_type(response)
        body = await read_excerpt(response)
        if response.status == 404:
            self._shutdown(ConnectionClosed("HTTP+SSE: the server no longer knows this session (404 Not Found)"))
            raise self._closed_error()
        for request_id, method in requests.items():
            self._feed_soon(status_error(request_id, method, response, body, content_type=content_type))
        if not requests:
            logger.warning("the server refused a message: HTTP %d %s", response.status, as_text(body)[:300])
