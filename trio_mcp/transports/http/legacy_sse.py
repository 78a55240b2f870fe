"""The HTTP+SSE transport of 2024-11-05: GET on ``/sse`` opens a session whose first event names the POST
endpoint (``/messages?session_id=...``); every server message goes on that one stream, and the session lives
exactly as long as it."""

from __future__ import annotations

import trio

from ..._core.inbound import Refusal, Rejection
from ..._core.jsonrpc import decode
from ..._core.sse import encode_comment, encode_event
from ..._wire.versions import V2024_11_05
from ._common import SSE_HEADERS, SseWriter, read_body, refuse
from .exchange import Request as HttpRequest  # the h11 server's, or the ASGI adapter's
from .exchange import Response as HttpResponse
from .sessions import SessionEndpoint

__all__ = ["serve_sse_post", "serve_sse_stream"]


async def serve_sse_stream(sessions: SessionEndpoint, request: HttpRequest, response: HttpResponse) -> None:
    """GET ``/sse``: open a session and carry its messages until the client or the session goes."""
    session = await sessions.open_session(response, sse_only=True)
    if session is None:
        return
    session.version = V2024_11_05
    await response.start(200, SSE_HEADERS)
    writer = SseWriter(response, legacy_event=True)
    messages_path = sessions.options.messages_path
    try:
        await writer.raw(encode_event(f"{messages_path}?session_id={session.id}", event="endpoint"))
        await session.attach(session.standalone, writer)
        with trio.CancelScope() as watch:
            response.cancel_on_disconnect(watch, or_shutdown=True)
            while not session.closed:
                with trio.move_on_after(sessions.options.keepalive_interval):
                    await session.wait_closed()
                if not session.closed and not await writer.raw(encode_comment()):
                    break
    finally:
        session.end()  # this transport's session lives exactly as long as its stream
    await writer.end()


async def serve_sse_post(sessions: SessionEndpoint, request: HttpRequest, response: HttpResponse) -> None:
    """POST ``/messages?session_id=...``: hand one client message to its session (202)."""
    session_ids = request.query_params.get("session_id") or request.query_params.get("sessionId")
    if not session_ids:
        await refuse(response, Rejection(Refusal.SESSION_REQUIRED, "session_id is required"))
        return
    session = sessions.find(session_ids[0])
    if session is None or not session.sse_only:
        await refuse(response, Rejection(Refusal.SESSION_NOT_FOUND, "Session not found"))
        return
    body = await read_body(request, response)
    if body is None:
        return
    message = decode(body)
    if type(message) is not dict and type(message) is not list:
        reason = getattr(message, "reason", "Parse error: the body is not a JSON object or array")
        await refuse(response, Rejection(Refusal.PARSE_ERROR, reason))
        return
    session.touch()
    await session.deliver(message)
    await response.send(202, (("content-type", "text/plain"),), b"Accepted")
