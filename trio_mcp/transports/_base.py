"""The transport contract every session runs over, and an in-memory pair for tests and embedding."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Final, Protocol

import trio

from .._core.jsonrpc import InvalidMessage, RequestId, decode, encode, error_message
from .._core.session_record import SessionState
from .._runner import RequestRunner
from ..errors import CONNECTION_CLOSED, ConnectionClosed, McpError

__all__ = [
    "MessageStream",
    "StreamControl",
    "MemoryMessageStream",
    "memory_stream_pair",
    "connection_lost",
    "as_connection_closed",
    "notified_change",
]

#: The change a notification being sent tells of, named alike in every process that heard it (a fan-out sets it
#: while it notifies): a session served by several processes is told of each change once, by one of them.
notified_change: ContextVar[str | None] = ContextVar("trio_mcp_notified_change", default=None)

#: Marks the error responses a transport makes up for a request whose connection failed before its answer.
_CONNECTION_LOST: Final = "trio_mcp.connectionLost"


def connection_lost(request_id: RequestId, method: str, detail: str) -> dict[str, Any]:
    """The error response a transport feeds to its session for a request whose connection failed first.

    Transports with one connection per request (HTTP) lose a request without losing the session; the client
    turns this answer into ``ConnectionClosed`` for that call (``as_connection_closed``), never ``McpError``.
    """
    return error_message(request_id, CONNECTION_CLOSED, f"{method}: {detail}", {_CONNECTION_LOST: True})


def as_connection_closed(error: McpError) -> ConnectionClosed | None:
    """The ``ConnectionClosed`` a ``connection_lost`` answer stands for (None for a real error answer)."""
    if error.code == CONNECTION_CLOSED and type(error.data) is dict and error.data.get(_CONNECTION_LOST) is True:
        return ConnectionClosed(error.message)
    return None


#: What the sender of a request attaches to it: read when the request is sent, in the sender's task.
request_tag: ContextVar[object] = ContextVar("trio_mcp_request_tag", default=None)
#: The ``request_tag`` of the request whose response stream carried the message being received (None when no
#: request's stream carried it). A transport with a stream per request (Streamable HTTP) sets it in ``receive()``,
#: so the task that reads the message, and the handlers it starts for it, see which request it came with.
carried_tag: ContextVar[object] = ContextVar("trio_mcp_carried_tag", default=None)


class MessageStream(Protocol):
    """A bidirectional pipe of JSON-RPC messages.

    ``receive()`` returns one decoded JSON value (an object, or a list for a batch) or an ``InvalidMessage``
    for input that could not be decoded (or, from a transport that classified it already, the message's
    ``_core.jsonrpc.Request``), and raises ``ConnectionClosed`` once the peer is gone.
    ``send()`` writes one message; ``related_request_id`` names the inbound request it belongs to, so that
    transports with one stream per request (Streamable HTTP) can route it, and ``final`` says that it
    answers that request (nothing more for it follows). Both may be called from several tasks; a transport
    serialises its own writes. A transport may also offer ``send_later(message)``, which queues a message for
    its next write without waiting (written before its ``receive()`` waits for input), with ``flush()`` to
    write what is queued now: a session then serves each request in its reader until the request first
    blocks, and answers it with ``send_later``.
    """

    async def send(self, message: Any, *, related_request_id: RequestId | None = None, final: bool = False) -> None: ...

    async def receive(self) -> Any: ...

    async def aclose(self) -> None: ...


class StreamControl(Protocol):
    """What a transport with a stream per request (Streamable HTTP sessions) tells, and lets the connection
    above it do; handed to the connection when it is created."""

    def negotiated(self, version: str) -> None:
        """The revision ``initialize`` settled on (it decides batches, priming events, ...)."""

    async def close_request_stream(self, request_id: RequestId) -> bool:
        """End the stream carrying ``request_id``'s answer now, keeping the request running; False if it cannot."""

    def request_ended(self, request_id: RequestId) -> None:
        """``request_id`` ended without an answer (the client cancelled it, or it was dropped): nothing more is
        sent for it, and its stream ends once it carries nothing else. An answered request's end is the
        ``send(..., final=True)`` of its answer."""

    @property
    def restored(self) -> SessionState | None:
        """The state of a session another process opened (what it last gave ``remember``), for a connection
        that takes it over without a handshake; None for a session that starts here."""

    @property
    def request_id_prefix(self) -> str:
        """Starts the ids of the requests the server sends, unique among the processes serving the session."""

    @property
    def session_id(self) -> str | None:
        """The session's id when other processes may serve it too (a session directory): what its tasks belong
        to, and the session outlives this process's copy of it. None when the session ends with this copy."""

    def on_state(self, apply: Callable[[SessionState], None]) -> None:
        """Have ``apply`` called with the session's state whenever another process serving it changes it."""

    def on_inbound(self, take: Callable[[Any, RequestRunner | None], Awaitable[None]]) -> None:
        """Called when the connection is attached (``serve_connection(..., runner=Spawn(tasks))``): from then on, hand
        each client message to ``take`` in the task that read it, with the runner of its request (None: the
        session's, ``Spawn``; ``InCaller``: that task); ``receive()`` is not used."""

    async def remember(self, state: SessionState) -> None:
        """The session's state changed (``initialize``, ``logging/setLevel``, subscriptions): keep it where
        other processes serving the session read it. Returns once it is kept, before the change is answered."""


class MemoryMessageStream:
    """One end of an in-process pair; messages are serialised on the way through, exactly as on a wire."""

    def __init__(self, send_channel: trio.MemorySendChannel[bytes], receive_channel: trio.MemoryReceiveChannel[bytes]):
        self._send_channel = send_channel
        self._receive_channel = receive_channel

    async def send(self, message: Any, *, related_request_id: RequestId | None = None, final: bool = False) -> None:
        data = encode(message)
        try:
            await self._send_channel.send(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ConnectionClosed("in-memory peer closed") from None

    async def send_raw(self, data: bytes) -> None:
        """Send bytes as they are (for testing how a peer copes with malformed input)."""
        try:
            await self._send_channel.send(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ConnectionClosed("in-memory peer closed") from None

    async def receive(self) -> Any | InvalidMessage:
        try:
            data = await self._receive_channel.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise ConnectionClosed("in-memory peer closed") from None
        return decode(data)

    async def aclose(self) -> None:
        await self._send_channel.aclose()
        await self._receive_channel.aclose()


def memory_stream_pair(buffer: int = 64) -> tuple[MemoryMessageStream, MemoryMessageStream]:
    """Two connected ``MessageStream`` ends; each holds up to ``buffer`` unread messages before ``send`` waits."""
    a_send, b_receive = trio.open_memory_channel[bytes](buffer)
    b_send, a_receive = trio.open_memory_channel[bytes](buffer)
    return MemoryMessageStream(a_send, a_receive), MemoryMessageStream(b_send, b_receive)
