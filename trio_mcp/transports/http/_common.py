"""What every MCP HTTP endpoint shares: the SSE writer, error answers, the caller's principal."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Sequence
from typing import Any, Final, Protocol

import trio

from ..._core.inbound import Rejection
from ..._core.jsonrpc import RequestId, encode, error_message
from ..._core.sse import encode_event
from ..._runner import InCaller, Spawn
from ...errors import INVALID_REQUEST
from .._base import MessageStream, StreamControl
from .._h11server import (
    ClientDisconnected,
    RequestBodyError,
)
from .._http_types import EncodedHeaders
from .exchange import Request as HttpRequest  # the h11 server's, or the ASGI adapter's
from .exchange import Response as HttpResponse

__all__ = [
    "JSON_HEADERS",
    "SSE_HEADERS",
    "ConnectFunction",
    "SseWriter",
    "event_data",
    "finish_quietly",
    "read_body",
    "refuse",
    "request_principal",
    "send_error",
]

# Encoded once: every answer carries one of them.
SSE_HEADERS: Final = EncodedHeaders(
    (
        ("content-type", "text/event-stream"),
        ("cache-control", "no-cache"),
        ("x-accel-buffering", "no"),
    )
)
JSON_HEADERS: Final = EncodedHeaders((("content-type", "application/json"),))

#: Who sent the HTTP request being handled (set per request task; None without authentication).
request_principal: contextvars.ContextVar[Any] = contextvars.ContextVar("trio_mcp_http_principal", default=None)


class ConnectFunction(Protocol):
    """Serves one connection over ``stream`` until it closes (``Server.serve_connection``).

    ``principal`` is what ``HttpTransportOptions.authenticate`` said about the caller (None without it);
    ``control`` lets a session's connection report its revision and end a request's stream; ``runner`` says
    where its requests run: ``InCaller`` serves a stateless request (the one message ``stream.receive()``
    returns) in the caller's task, ``Spawn`` runs a session's in its ``TaskSet`` and returns at once (a session
    that holds no task while idle).
    """

    def __call__(
        self,
        stream: MessageStream,
        *,
        modern_only: bool = ...,
        principal: Any = ...,
        control: StreamControl | None = ...,
        runner: Spawn | InCaller | None = ...,
    ) -> Awaitable[None]: ...


def event_data(message: Any) -> str:
    """The ``data`` of the event carrying ``message``: its JSON text, or nothing for the empty mark a stream's
    start leaves (``{}``). This text is what an event store keeps."""
    return encode(message).decode("ascii") if message != {} else ""


class SseWriter:
    """One HTTP response carrying an SSE stream, and the only way anything is written to it.

    Writes are shielded (a cancelled sender never leaves half an event on the wire). The write that ends the
    response marks it ended before it starts, so nothing, from any task, is ever written after the end.
    """

    __slots__ = ("_ended_event", "_ending", "ended", "legacy_event", "response")

    def __init__(self, response: HttpResponse, *, legacy_event: bool = False) -> None:
        self.response = response
        self.legacy_event = legacy_event
        self.ended = False
        #: Whether the write that ends the response is under way.
        self._ending = False
        #: Set once that write is done, for an ``end()`` waiting for it (which makes it: most ends wait for none).
        self._ended_event: trio.Event | None = None

    @property
    def open(self) -> bool:
        return not (self.ended or self.response.finished or self.response.gone)

    def encode(self, message: Any, event_id: str | None) -> bytes:
        """``message`` as one event of this stream (for a caller that writes it with the response's head)."""
        return self.encode_data(event_data(message), event_id)

    def encode_data(self, data: str, event_id: str | None) -> bytes:
        return encode_event(data, id=event_id, event="message" if self.legacy_event else None)

    def event(self, message: Any, event_id: str | None, *, last: bool = False) -> Awaitable[bool]:
        """Write one event (and with ``last``, end the response with it); False if the stream is gone. (What to
        await: the write, with no coroutine of this method around it.)"""
        return self.raw(self.encode(message, event_id), last=last)

    def data_event(self, data: str, event_id: str | None, *, last: bool = False) -> Awaitable[bool]:
        """``event`` for a message already made into its ``event_data()`` (as an event store keeps it)."""
        return self.raw(self.encode_data(data, event_id), last=last)

    async def raw(self, payload: bytes, *, last: bool = False) -> bool:
        """Write ``payload``; with ``last`` it also ends the response, in the same write."""
        if not self.open:
            return False
        if not last:
            try:
                await self.response.write(payload, shielded=True)
            except ClientDisconnected:
                self.ended = True
                return False
            return True
        self.ended = self._ending = True
        try:
            await self.response.finish(payload, shielded=True)
        except ClientDisconnected:
            return False
        finally:
            self._ending = False
            if self._ended_event is not None:
                self._ended_event.set()
        return True

    async def end(self) -> None:
        """End the response (if it is still open). If another task's ending write is under way, wait for it: the
        handler must not return while its response is half written, or the connection cannot be reused. A
        response already ended (by its last event, as most are) costs no pass through the scheduler."""
        if self.open:
            await self.raw(b"", last=True)
        elif self._ending:
            if self._ended_event is None:
                self._ended_event = trio.Event()
            await self._ended_event.wait()


async def send_error(
    response: HttpResponse,
    status: int,
    request_id: RequestId | None,
    code: int,
    message: str,
    *,
    headers: Sequence[tuple[str, str]] = (),
    data: Any = None,
) -> None:
    """Answer with a JSON-RPC error body and ``status`` (a client that left is ignored)."""
    body = encode(error_message(request_id, code, message, data))
    try:
        await response.send(status, [*JSON_HEADERS, *headers], body)
    except ClientDisconnected:
        pass


async def refuse(response: HttpResponse, rejection: Rejection) -> None:
    """Answer a request the inbound check refused, with the status and code of its table."""
    if rejection.status == 405:
        try:
            await response.send(405, rejection.headers)
        except ClientDisconnected:
            pass
        return
    await send_error(
        response,
        rejection.status,
        rejection.request_id,
        rejection.code,
        rejection.detail,
        headers=rejection.headers,
        data=rejection.data,
    )


async def read_body(request: HttpRequest, response: HttpResponse) -> bytes | None:
    """The request body, or None after answering 413/408/400 for it."""
    try:
        return await request.read_body()
    except RequestBodyError as exc:
        await send_error(response, exc.status, None, INVALID_REQUEST, f"Invalid request body: {exc}")
        return None


async def finish_quietly(response: HttpResponse) -> None:
    """End a started response if the client is still there (shielded: it is one short write)."""
    if response.gone or response.finished:
        return
    with trio.CancelScope(shield=True):
        try:
            await response.finish()
        except ClientDisconnected:
            pass
