"""The modern revision (2026-07-28) on Streamable HTTP: each POST is served on its own.

A fresh connection serves the one request, in the HTTP request's own task. Its answer goes as a JSON body when
nothing came before it; anything earlier (progress, a log record) turns the response into an SSE stream that
the answer ends. Closing that stream cancels the request, and everything the request started (its keep-alive
ticks included) ends with it. No session id is minted or read.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Final

import trio

from ..._core.inbound import Route, answer_status
from ..._core.jsonrpc import RequestId, encode
from ..._core.sse import encode_comment
from ..._runner import InCaller
from ..._task_set import TaskSet
from ...errors import ConnectionClosed
from .._h11server import ClientDisconnected
from ._common import (
    JSON_HEADERS,
    SSE_HEADERS,
    ConnectFunction,
    SseWriter,
    request_principal,
)
from .exchange import Request as HttpRequest  # the h11 server's, or the ASGI adapter's
from .exchange import Response as HttpResponse

__all__ = ["serve_stateless"]

logger = logging.getLogger("trio_mcp.http")

#: What an ``_Exchange`` holds once its message was taken.
_TAKEN: Final = object()


def _background_failed(exc: BaseException) -> None:
    """Something a stateless request started failed after it (the request has its answer already)."""
    if not isinstance(exc, ConnectionClosed):
        logger.error("work started by a stateless request failed", exc_info=exc)


class _Exchange:
    """The ``MessageStream`` of one stateless POST: its notifications and answer out (the request itself is
    handed to the connection, already read)."""

    def __init__(self, message: Any, response: HttpResponse, nursery: trio.Nursery, keepalive: float) -> None:
        self._message = message
        self._response = response
        self._nursery = nursery
        self._keepalive = keepalive
        #: Cancelled when the request ends, so that its keep-alive ticks end with it (made when they start).
        self.scope: trio.CancelScope | None = None
        self._answered = False
        self._writer: SseWriter | None = None

    async def receive(self) -> Any:
        """The POST's one message, read already, then ``ConnectionClosed``. No checkpoint: it never waits, and
        the connection serving the message checkpoints as soon as it writes."""
        message, self._message = self._message, _TAKEN
        if message is _TAKEN:
            raise ConnectionClosed("a stateless request carries one message")
        return message

    async def send(self, message: Any, *, related_request_id: RequestId | None = None, final: bool = False) -> None:
        # Decisions are made before the first await, so concurrent senders (the handler, the log outbox) agree
        # on who starts the response and nothing is written after the answer.
        if self._answered:
            raise ConnectionClosed("stateless request finished")
        if final:
            self._answered = True
        try:
            writer = self._writer
            if writer is None:
                if final:
                    await self._response.send(answer_status(message), JSON_HEADERS, encode(message))
                    return
                # The first event goes with the head, in one write (the answer, being final, never comes first).
                writer = self._writer = SseWriter(self._response)
                await self._response.start(200, SSE_HEADERS, writer.encode(message, None))
                self.scope = trio.CancelScope()
                self._nursery.start_soon(self._keep_alive, writer, self.scope)
                return
            if await writer.event(message, None, last=final):
                return
        except ClientDisconnected:
            pass
        self._answered = True
        raise ConnectionClosed("the client closed the stream")

    async def aclose(self) -> None:
        pass

    async def _keep_alive(self, writer: SseWriter, scope: trio.CancelScope) -> None:
        with scope:
            while True:
                await trio.sleep(self._keepalive)
                if not await writer.raw(encode_comment()):
                    return


async def serve_stateless(
    connect: ConnectFunction,
    request: HttpRequest,
    response: HttpResponse,
    route: Route,
    *,
    nursery: trio.Nursery,
    keepalive: float,
) -> None:
    """Serve one stateless request (``route`` from the inbound check) and end everything it started.

    The keep-alive task of an SSE answer runs in ``nursery`` (spawned only when the answer streams) inside a
    scope of the request's, cancelled when the request ends.
    """
    if not route.request_ids:
        message = route.message
        if type(message) is dict and "method" in message:
            # No notification of this revision is meant for HTTP, but an extension's may be: the server's
            # handlers (and middleware) get it, then the connection ends, with nothing to answer.
            exchange = _Exchange(message, response, nursery, keepalive)
            await connect(exchange, modern_only=True, principal=request_principal.get(), runner=InCaller())
        await response.send(202)
        return
    exchange = _Exchange(route.request, response, nursery, keepalive)  # classified already: served as it is
    tasks = TaskSet(nursery, on_failure=_background_failed)  # holds nothing unless the request starts something
    serve = functools.partial(
        connect, exchange, modern_only=True, principal=request_principal.get(), runner=InCaller(tasks)
    )
    try:
        # Closing the stream is the cancellation: of the serving task where the server can, else of a scope.
        if response.cancel_task_on_disconnect():
            await serve()
        else:
            with trio.CancelScope() as scope:
                response.cancel_on_disconnect(scope)
                await serve()
    finally:
        if exchange.scope is not None:
            exchange.scope.cancel()
