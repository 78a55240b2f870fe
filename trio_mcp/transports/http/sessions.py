"""The session era of Streamable HTTP (2025-03-26 .. 2025-11-25): sessions, their SSE streams, resumption.

``initialize`` opens a session (``Mcp-Session-Id`` from ``secrets``); later POSTs carry the id, GET opens the
standalone SSE stream, DELETE ends the session. Server messages go on the stream of the request they relate
to, others on the GET stream, each on one stream only. Every event goes through its stream's lock: it is
recorded in the ``EventStore`` and then written, so a resuming client (GET with ``Last-Event-ID``) gets every
event exactly once and in order, however often its connection drops, even during a replay. On 2025-11-25 each
stream opens with a priming event and a ``retry`` hint. A dropped stream is not a cancellation in this era.
Idle sessions are reaped and their number is capped. With a session directory (``roaming.py``) any process
sharing it serves any request of a session: it takes the session over from its record, and messages whose
reader is elsewhere travel through the directory.
"""

from __future__ import annotations

import collections
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NoReturn

import trio

from ..._core.inbound import Refusal, Rejection, Route
from ..._core.jsonrpc import RequestId, decode, encode, error_message, is_request_id
from ..._core.sse import encode_comment, encode_event
from ..._identity import caller_key
from ..._runner import InCaller, RequestRunner
from ..._task_set import TaskSet
from ..._wire.features import Feature, has
from ..._wire.versions import DEFAULT_NEGOTIATED_VERSION
from ...errors import INTERNAL_ERROR, ConnectionClosed
from .._base import notified_change
from .._quick_lock import QuickLock
from ._common import (
    JSON_HEADERS,
    SSE_HEADERS,
    ConnectFunction,
    SseWriter,
    event_data,
    refuse,
    request_principal,
)
from .exchange import Request as HttpRequest  # the h11 server's, or the ASGI adapter's
from .exchange import Response as HttpResponse
from .options import HttpTransportOptions

__all__ = ["HttpSession", "SessionEndpoint"]

logger = logging.getLogger("trio_mcp.http")

#: Notifications of a change the server's processes all hear; with a directory only the GET stream's holder sends them.
_CHANGES = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    }
)

#: The most events a stream keeps for a client that is not reading it (its GET stream, say).
_BACKLOG = 256

#: The requests whose answer says the session's record changed (``StreamControl.remember``).
_RECORDING = frozenset({"initialize", "resources/subscribe", "resources/unsubscribe", "logging/setLevel"})

#: How long a POST's SSE head waits for the first event to go with it (a quick answer then costs one write).
_HEAD_HOLD = 0.05

#: The most unanswered server requests a session remembers sending (with a session directory).
_MAX_SENT = 4096

#: The mark a stream's start (its priming event) and a handler's stream close leave in the event store: an
#: event without data.
_MARK = ""


#: How soon a client refused during a session directory's outage may try again (our client does, by itself).
_RETRY_AFTER = "1"


def _unavailable(request_id: RequestId | None = None) -> Rejection:
    """The answer to a request that needs the session directory or the event store while it cannot be reached."""
    return Rejection(
        Refusal.DIRECTORY_UNAVAILABLE,
        "Sessions are unavailable; try again later",
        request_id,
        headers=(("retry-after", _RETRY_AFTER),),
    )


def stored_message(data: str) -> Any:
    """The message an event store kept as ``event_data`` (its stream-start mark as ``{}``)."""
    return decode(data) if data else {}


class _Stream:
    """One logical SSE stream of a session: the GET stream, or the answers to one POST."""

    __slots__ = (
        "backlog",
        "collect",
        "complete",
        "id",
        "last_id",
        "lock",
        "origin",
        "pending",
        "replayed",
        "told",
        "watch",
        "writer",
    )

    def __init__(self, stream_id: str, pending: set[RequestId], *, origin: str | None = None) -> None:
        self.id = stream_id
        #: Request ids whose responses have not been sent yet (POST streams).
        self.pending = pending
        #: The response currently carrying this stream, if a client is attached.
        self.writer: SseWriter | None = None
        #: Events kept here: those of the GET stream while no client reads it, every event of a stream
        #: without an event store, and the answers of a JSON-response POST (bounded).
        #: Made with the first event kept (most streams keep none).
        self.backlog: collections.deque[tuple[str | None, Any]] | None = None
        self.complete = trio.Event()
        #: The scope holding the HTTP response open; cancelled to end it early (SEP-1699 polling).
        self.watch: trio.CancelScope | None = None
        #: Held while an event is recorded and written, and while a resuming client catches up.
        self.lock = QuickLock()
        self.last_id: str | None = None
        #: Keep the answers for one JSON body (``json_response``) instead of streaming them.
        self.collect = False
        #: The process serving the requests of a stream resumed here from another one (None: this process).
        self.origin = origin
        #: Ids of the events a resumed stream replayed from the store (the same events may also be routed).
        self.replayed: set[str] = set()
        #: The id of the last event the attached reader got (None before the first one with an id).
        self.told: str | None = None

    def answered(self, message: Any) -> bool:
        """Count the answers in ``message`` off ``pending``; True when none is left."""
        for item in message if type(message) is list else (message,):
            if type(item) is dict and "method" not in item:
                self.pending.discard(item.get("id"))
        return not self.pending


class HttpSession:
    """A session-era session: its id, its streams, and the ``MessageStream`` its connection runs over."""

    def __init__(
        self,
        session_id: str,
        options: HttpTransportOptions,
        nursery: trio.Nursery,
        *,
        sse_only: bool,
        principal: Any,
        on_end: Callable[[HttpSession], None],
        restored: Mapping[str, Any] | None = None,
    ) -> None:
        self.id = session_id
        self.principal = principal
        #: Who the session belongs to (``caller_key``): the same for every token of that caller, in every process.
        self.caller = caller_key(principal)
        self.sse_only = sse_only
        self._store = None if sse_only else options.event_store
        self.directory = None if sse_only else options.session_directory
        self._restored = restored
        #: Whether the directory holds a record of this session (taken over from one, or ``remember`` ran).
        self.recorded = restored is not None
        #: How often the directory could not keep the session's record (the request that changed it is then
        #: refused with 503).
        self.unrecorded = 0
        #: Ids of the requests this process sent the client and has no answer for yet (with a directory; the
        #: oldest are forgotten past ``_MAX_SENT``, as the requests themselves time out).
        self.sent: dict[RequestId, None] = {}
        #: Takes the session's state when another process serving it changed it (set by the connection).
        self.apply_state: Callable[[Mapping[str, Any]], None] | None = None
        #: Handles a client message in the task that read it (the connection's, given by ``on_inbound``).
        self._take: Callable[[Any, RequestRunner | None], Awaitable[None]] | None = None
        self._json_response = options.json_response
        self._retry_ms = options.retry_ms
        self._on_end = on_end
        self.version = restored["protocolVersion"] if restored is not None else DEFAULT_NEGOTIATED_VERSION
        self.last_activity = trio.current_time()
        #: What the connection runs (its requests, notifications, tasks), in the endpoint's nursery: an idle
        #: session holds no task. Cancelled when the session ends.
        self.tasks = TaskSet(nursery, on_failure=self._failed)
        self.closed = trio.Event()
        self.standalone = _Stream("0", set())
        self.streams: dict[str, _Stream] = {"0": self.standalone}
        self.owner: dict[RequestId, _Stream] = {}
        self._next_stream = 1

    # MessageStream, as the connection sees it --------------------------------------------------------------

    async def receive(self) -> Any:
        """Nothing arrives here: each client message goes to the connection in the task that read it
        (``deliver``). Waits for the session's end."""
        await self.closed.wait()
        raise ConnectionClosed("HTTP session ended")

    async def send(self, message: Any, *, related_request_id: RequestId | None = None, final: bool = False) -> None:
        if self.closed.is_set():
            raise ConnectionClosed("HTTP session ended")
        if self.directory is not None and type(message) is dict and "method" in message and "id" in message:
            self.sent[message["id"]] = None
            if len(self.sent) > _MAX_SENT:
                del self.sent[next(iter(self.sent))]
        stream = self.standalone
        owner = self.owner.get(related_request_id) if related_request_id is not None and not self.sse_only else None
        if owner is not None and (final or not self._json_response):
            stream = owner
        if not final or owner is None:
            await self._emit(stream, message)
            return
        # The answer releases its requests before it is written: whatever is sent for them afterwards (a log
        # record queued during the call, say) goes to the GET stream, never after the end of this one.
        items = message if type(message) is list else [message]
        answered = [item["id"] for item in items if type(item) is dict and is_request_id(item.get("id"))]
        for request_id in answered:
            if self.owner.get(request_id) is owner:
                del self.owner[request_id]
                owner.pending.discard(request_id)
        await self._emit(owner, message, last=not owner.pending)
        if not owner.pending:
            self._complete(owner)

    async def aclose(self) -> None:
        self.end()

    # StreamControl, as the connection sees it ---------------------------------------------------------------

    def negotiated(self, version: str) -> None:
        self.version = version

    @property
    def restored(self) -> Mapping[str, Any] | None:
        return self._restored

    @property
    def session_id(self) -> str | None:
        return self.id if self.directory is not None else None

    @property
    def request_id_prefix(self) -> str:
        return f"{self.directory.origin}-" if self.directory is not None else ""

    def on_state(self, apply: Callable[[Mapping[str, Any]], None]) -> None:
        self.apply_state = apply

    def on_inbound(self, take: Callable[[Any, RequestRunner | None], Awaitable[None]]) -> None:
        self._take = take

    async def remember(self, state: Mapping[str, Any]) -> None:
        if self.directory is not None:
            try:
                await self.directory.save(self.id, {"principal": self.caller, "state": dict(state)})
            except Exception:
                self.unrecorded += 1
                raise
            self.recorded = True
            await self.directory.publish(self.id, {"kind": "state", "state": dict(state)})

    async def close_request_stream(self, request_id: RequestId) -> bool:
        """End the SSE response carrying ``request_id`` now, keeping the request running (SEP-1699 polling).

        The client reconnects with GET and ``Last-Event-ID`` after the ``retry`` sent here and gets the rest
        from the event store. False when the stream cannot be resumed (no event store, or no open stream).
        """
        stream = self.owner.get(request_id)
        if stream is None or self._store is None:
            return False
        async with stream.lock:
            writer = stream.writer
            if writer is None or not writer.open:
                return False
            if stream.last_id is None:
                stream.last_id = await self._record(stream, _MARK)
            if stream.last_id is None:
                return False
            await writer.raw(encode_event("", id=stream.last_id, retry=self._retry_ms), last=True)
            stream.writer = None
        if stream.watch is not None:
            stream.watch.cancel()
        return True

    def request_ended(self, request_id: RequestId) -> None:
        """The request ended without an answer (cancelled): its stream waits for it no longer, and ends, as an
        answered one does, once it waits for nothing else."""
        owner = self.owner.pop(request_id, None)
        if owner is None:
            return
        owner.pending.discard(request_id)
        if not owner.pending:
            self._complete(owner)

    def _complete(self, stream: _Stream) -> None:
        """Nothing more comes on ``stream``: its response ends, and a client resuming it now gets what the store
        kept (the session keeps only open streams)."""
        stream.complete.set()
        self.streams.pop(stream.id, None)

    # streams -----------------------------------------------------------------------------------------------

    async def open_stream(self, request_ids: set[RequestId]) -> _Stream:
        """A stream for the answers to ``request_ids``; its id names this process when sessions roam, and the
        directory learns its requests (to answer them if this process dies while another one resumes it)."""
        if self.directory is None:
            stream = _Stream(str(self._next_stream), set(request_ids))
        else:
            stream = _Stream(f"{self.directory.origin}.{self._next_stream}", set(request_ids))
            try:
                await self.directory.open_stream(self.id, stream.id, sorted(request_ids, key=str))
            except Exception as exc:  # the directory's own failure: only a resumption after this process dies is lost
                logger.warning("stream %s of session %s not recorded: %s", stream.id, self.id[:8], type(exc).__name__)
        self._next_stream += 1
        self.streams[stream.id] = stream
        for request_id in request_ids:
            self.owner[request_id] = stream
        return stream

    async def priming(self, stream: _Stream) -> bytes | None:
        """On 2025-11-25 a resumable stream opens with an event id and empty data, plus a ``retry`` hint."""
        if not has(self.version, Feature.PRIMING_EVENTS) or self._store is None:
            return None
        stream.last_id = await self._record(stream, _MARK)
        if stream.last_id is None:
            return None
        return encode_event("", id=stream.last_id, retry=self._retry_ms)

    async def _record(self, stream: _Stream, data: str) -> str | None:
        """Keep an event (its ``event_data``) in the store; its id, or None when the store failed (a networked
        store in an outage): the event is still sent, only it cannot be resumed from."""
        assert self._store is not None
        try:
            event_id = await self._store.append(self.id, stream.id, data)
        except Exception as exc:
            logger.warning("an event of session %s was not stored: %s", self.id[:8], type(exc).__name__)
            return None
        stream.last_id = event_id
        return event_id

    async def _emit(self, stream: _Stream, message: Any, *, last: bool = False) -> None:
        if (
            self.directory is not None
            and stream is self.standalone
            and type(message) is dict
            and message.get("method") in _CHANGES
            and not await self._first_to_tell(stream)
        ):
            return
        async with stream.lock:
            # Events get ids only where they can be resumed from: with an event store.
            # Made into text once: the store keeps the text (nothing for the collector to walk), the writer sends it.
            data = event_data(message)
            event_id = await self._record(stream, data) if self._store is not None else None
            writer = stream.writer
            if writer is not None and await self._tell(stream, writer, data, event_id, last=last):
                return
            if stream.writer is writer:
                stream.writer = None
            if self.directory is not None and not stream.collect:
                # Its reader may be attached to another process: the GET stream, or a stream resumed there.
                routed = {"kind": "event", "stream": stream.id, "id": event_id, "message": message, "last": last}
                await self.directory.publish(self.id, routed)
                return
            # Nobody is reading this stream now. The GET stream keeps what it missed for the next GET; a POST
            # stream's events wait in the event store for a resuming GET (or here, without a store).
            if self._store is None or stream is self.standalone or stream.collect:
                if stream.backlog is None:
                    stream.backlog = collections.deque(maxlen=_BACKLOG)
                stream.backlog.append((event_id, message))

    async def _first_to_tell(self, stream: _Stream) -> bool:
        """Whether this process tells the client of the change being sent. Every process serving the session
        hears each change (``RedisFanout``): the first to claim it records it in the event store and writes it, or
        routes it to the GET stream's reader; so it is told once, and kept for a client resuming its GET stream
        anywhere, even with the stream's holder gone. A change heard here alone is told if the reader is here."""
        assert self.directory is not None
        change = notified_change.get()
        if change is None:
            return stream.writer is not None
        try:
            return await self.directory.claim(self.id, change)
        except Exception as exc:  # the directory's own failure: the event could not be stored either
            logger.warning("a change for session %s not claimed: %s", self.id[:8], type(exc).__name__)
            return stream.writer is not None

    async def attach(self, stream: _Stream, writer: SseWriter, *, last_event_id: str | None = None) -> bool:
        """Point ``stream`` at a client's response, first sending what it missed; False if it left meanwhile.

        Events emitted while the backlog is replayed wait on the stream's lock, so none is skipped or doubled.
        """
        async with stream.lock:
            told = last_event_id
            if last_event_id is not None and self._store is not None:
                stream.backlog = None  # a resuming client gets the stored events instead
                replay = await self._store.replay(self.id, last_event_id)
                for event_id, data in replay[1] if replay is not None else ():
                    if stream.origin is not None:
                        if not await self._follow(stream, writer, event_id, stored_message(data)):
                            return False
                        if stream.complete.is_set():
                            break
                    elif not await writer.data_event(data, event_id):
                        return False
                    told = event_id
            while stream.backlog:
                kept_id, kept = stream.backlog[0]
                if not await writer.event(kept, kept_id):
                    return False
                stream.backlog.popleft()
                told = kept_id or told
            stream.told = told
            stream.writer = writer
            return True

    async def _tell(
        self, stream: _Stream, writer: SseWriter, data: str, event_id: str | None, *, last: bool = False
    ) -> bool:
        """Write one event to the reader of ``stream`` (its lock held); False when the client is gone.

        The GET stream of a session several processes serve goes in the order the event store keeps: whatever it
        holds past the last event this reader got, this one included. Each process writes what it recorded and
        gets what the others recorded routed, in whatever order pub/sub brings it; so the reader gets each event
        once, in the order a resumption elsewhere would replay it."""
        if stream is self.standalone and self.directory is not None and stream.told is not None and event_id:
            assert self._store is not None  # event ids come from it
            try:
                replay = await self._store.replay(self.id, stream.told)
            except Exception as exc:  # a networked store in an outage: this event goes as it is
                logger.warning("cannot read the stored events of session %s: %s", self.id[:8], type(exc).__name__)
                replay = None
            if replay is not None:
                for stored_id, stored in replay[1]:
                    if not await writer.data_event(stored, stored_id):
                        return False
                    stream.told = stored_id
                return True
        if event_id:
            stream.told = event_id
        return await writer.data_event(data, event_id, last=last)

    async def routed_event(self, stream_id: str, event_id: str | None, message: Any, *, last: bool) -> None:
        """Write an event another process emitted on a stream whose reader is attached here."""
        stream = self.streams.get(stream_id)
        if stream is None:
            return
        async with stream.lock:
            writer = stream.writer
            if writer is None:
                return
            if stream.origin is not None:
                await self._follow(stream, writer, event_id, message, last=last)
            elif not await self._tell(stream, writer, event_data(message), event_id, last=last):
                stream.writer = None

    async def catch_up(self, stream: _Stream) -> None:
        """Write what the store kept for a followed stream past what was written here: an event whose routing
        was lost (pub/sub is at most once) still reaches the client, in order."""
        if self._store is None or stream.last_id is None:
            return
        async with stream.lock:
            writer = stream.writer
            if writer is None:
                return
            try:
                replay = await self._store.replay(self.id, stream.last_id)
            except Exception as exc:  # a networked store in an outage: try again on the next quiet tick
                logger.warning("cannot read the stored events of session %s: %s", self.id[:8], type(exc).__name__)
                return
            for event_id, data in replay[1] if replay is not None else ():
                if not await self._follow(stream, writer, event_id, stored_message(data)) or stream.complete.is_set():
                    return

    async def _follow(
        self, stream: _Stream, writer: SseWriter, event_id: str | None, message: Any, *, last: bool = False
    ) -> bool:
        """Write one event of a stream followed from another process (its lock held): each event once, and the
        stream complete with its last answer. False when the client is gone."""
        if event_id is not None:
            if event_id in stream.replayed:
                return True
            stream.replayed.add(event_id)
            stream.last_id = event_id
        done = stream.answered(message) or last
        if not await writer.event(message, event_id, last=done):
            stream.writer = None
            return False
        if done:
            stream.writer = None
            stream.complete.set()
        return True

    async def orphaned(self, stream: _Stream) -> None:
        """The process serving a resumed stream's requests is gone: answer each with an error, end the stream."""
        async with stream.lock:
            writer = stream.writer
            stream.writer = None
            stream.complete.set()
            unanswered = sorted(stream.pending, key=str)
            stream.pending.clear()
            for position, request_id in enumerate(unanswered):
                answer = error_message(
                    request_id,
                    INTERNAL_ERROR,
                    "Internal error: the server process serving this request stopped before answering; "
                    "it may or may not have taken effect",
                )
                if writer is not None and not await writer.event(answer, None, last=position == len(unanswered) - 1):
                    return

    def collected_answers(self, stream: _Stream) -> list[Any]:
        """The answers a JSON-response POST stream collected."""
        kept, stream.backlog = stream.backlog or (), None
        answers = [message for _, message in kept if type(message) is dict and "method" not in message]
        return answers

    def touch(self) -> None:
        self.last_activity = trio.current_time()

    def busy(self) -> bool:
        return any(stream.writer is not None for stream in self.streams.values())

    def local(self, message: Any) -> tuple[Any, Any]:
        """Split a client message into what this process serves and what goes to the others (with a directory):
        answers to requests another process sent go there; notifications go to both (``initialized``, a
        cancellation or progress for something served elsewhere, roots changes); requests stay here."""
        if self.directory is None:
            return message, None
        here: list[Any] = []
        there: list[Any] = []
        for item in message if type(message) is list else (message,):
            if type(item) is dict and "method" in item:
                here.append(item)
                if "id" not in item:
                    there.append(item)
            elif type(item) is dict and is_request_id(item.get("id")) and item["id"] in self.sent:
                del self.sent[item["id"]]
                here.append(item)
            else:
                there.append(item)
        if type(message) is not list:
            return (here[0] if here else None), (there[0] if there else None)
        return (here or None), (there or None)

    async def deliver(self, message: Any, runner: RequestRunner | None = None) -> None:
        """Hand a client message to the connection, in this task; its requests run in ``tasks``, or by ``runner``
        (``InCaller``: in this task, before this returns)."""
        take = self._take
        if take is None:
            raise ConnectionClosed("HTTP session ended")
        try:
            await take(message, runner)
        except ConnectionClosed:
            raise ConnectionClosed("HTTP session ended") from None

    def _failed(self, exc: BaseException) -> None:
        """Something the connection ran failed outside any request: end this session only."""
        if not isinstance(exc, ConnectionClosed):
            logger.error("HTTP session %s failed; ending it", self.id[:8], exc_info=exc)
        self.end()

    def end(self) -> None:
        """End the session now: cancel what its connection runs and complete its streams."""
        if self.closed.is_set():
            return
        self.closed.set()
        self._take = None  # the connection's session: let it go with the connection
        self.tasks.cancel()
        for stream in self.streams.values():
            stream.complete.set()
        self._on_end(self)


class SessionEndpoint:
    """Serves the session era on the Streamable HTTP endpoint and owns every session (and its reaper)."""

    def __init__(self, connect: ConnectFunction, nursery: trio.Nursery, options: HttpTransportOptions) -> None:
        self.options = options
        self._connect = connect
        self._nursery = nursery
        self.sessions: dict[str, HttpSession] = {}
        self._directory = options.session_directory
        #: Sessions being taken over from the directory, so that concurrent requests take one over once.
        self._adopting: dict[str, trio.Event] = {}

    # -- POST, GET, DELETE ---------------------------------------------------------------------------------

    async def post(self, request: HttpRequest, response: HttpResponse, route: Route) -> None:
        message = route.message
        if route.session_id is None:
            opened = await self.open_session(response, sse_only=False)
            if opened is None:
                return
            session = opened
        else:
            found = await self._lookup(route.session_id, response, _single_id(message))
            if found is None:
                return
            session = found
        if type(message) is list and not has(session.version, Feature.BATCHES):
            await refuse(
                response,
                Rejection(
                    Refusal.BATCH_NOT_ALLOWED,
                    "Invalid Request: JSON-RPC batches exist only in protocol revision 2025-03-26",
                ),
            )
            return
        session.touch()
        here, there = session.local(message)
        if there is not None and session.directory is not None:
            await session.directory.publish(session.id, {"kind": "inbound", "message": there})
        if not route.request_ids:
            if here is not None:
                await session.deliver(here)
            await response.send(202)
            return
        message = here
        stream = await session.open_stream(set(route.request_ids))
        headers: list[tuple[str, str]] = [("mcp-session-id", session.id)]
        # With a directory, a request that changes the session's record is answered once it is kept: a 503 if it
        # could not be (the session is not opened, or not changed for good).
        recording = session.directory is not None and type(message) is dict and message.get("method") in _RECORDING
        if self.options.json_response or recording:
            unrecorded = session.unrecorded
            stream.collect = True
            await session.deliver(message)
            with trio.CancelScope() as watch:  # until answered, the client leaves or a drain begins
                response.cancel_on_disconnect(watch, or_shutdown=True)
                await stream.complete.wait()
            if recording and session.unrecorded > unrecorded:
                if route.opens_session:
                    session.end()
                await refuse(response, _unavailable(_single_id(message)))
                return
            if response.disconnected.is_set() or session.closed.is_set():
                return
            if self.options.json_response:
                answers = session.collected_answers(stream)
                if not answers:  # every request was cancelled: nothing to answer
                    await response.send(202, headers)
                    return
                body = answers[0] if type(message) is dict and len(answers) == 1 else answers
                await response.send(200, [*JSON_HEADERS, *headers], encode(body))
                return
            await response.start(200, [*SSE_HEADERS, *headers])
            writer = SseWriter(response)
            if await session.attach(stream, writer):  # what it collected
                stream.writer = None
            await writer.end()
            return
        # The revision is known only once initialize is answered: no priming event before that.
        priming = None if route.opens_session else await session.priming(stream)
        # The head waits for the first event: a quick answer goes with it in one write (a slow one gets it after
        # ``_HEAD_HOLD``, below).
        await response.start(200, [*SSE_HEADERS, *headers], priming or b"", hold=True)
        writer = SseWriter(response)
        await session.attach(stream, writer)
        if type(message) is not dict:  # a batch: its members run in the session's tasks
            await session.deliver(message)
            await self._stream_until_done(session, stream, writer, response, head_held=True)
            return
        # The request runs in this task, as a stateless one does: most are answered before they first wait, with no
        # task, wake-up or watch of the stream. One that waits has the stream watched meanwhile by another task.
        watched: trio.Event | None = None

        def watch_meanwhile() -> None:
            nonlocal watched
            watched = trio.Event()
            session.tasks.start_soon(self._watch, session, stream, writer, response, watched)

        await session.deliver(message, InCaller(session.tasks, on_wait=watch_meanwhile))
        if watched is None:
            await self._stream_until_done(session, stream, writer, response, head_held=True)
        else:
            await watched.wait()

    async def _watch(
        self, session: HttpSession, stream: _Stream, writer: SseWriter, response: HttpResponse, done: trio.Event
    ) -> None:
        """``_stream_until_done`` for a POST whose request waits in the POST's task; ``done`` set at the end."""
        try:
            await self._stream_until_done(session, stream, writer, response, head_held=True)
        finally:
            done.set()

    async def get(self, request: HttpRequest, response: HttpResponse, route: Route) -> None:
        session = await self._session_for(route, response)
        if session is None:
            return
        session.touch()
        stream = session.standalone
        last_event_id = route.last_event_id
        if last_event_id is not None:
            store = self.options.event_store
            try:
                replay = await store.replay(session.id, last_event_id) if store is not None else None
                resumed = session.streams.get(replay[0]) if replay is not None else None
                if resumed is None and replay is not None:
                    resumed = await self._stream_not_open(session, replay[0], last_event_id)
            except Exception as exc:  # a networked store or directory in an outage: this request only
                logger.warning("cannot resume a stream of session %s: %s", session.id[:8], type(exc).__name__)
                await refuse(response, _unavailable())
                return
            if resumed is None:
                await refuse(
                    response, Rejection(Refusal.UNKNOWN_LAST_EVENT_ID, f"Unknown Last-Event-ID {last_event_id!r}")
                )
                return
            stream = resumed
        elif session.standalone.writer is not None:
            await refuse(
                response, Rejection(Refusal.STREAM_ALREADY_OPEN, "A GET stream is already open for this session")
            )
            return
        await response.start(200, [*SSE_HEADERS, ("mcp-session-id", session.id)])
        writer = SseWriter(response)
        if not await session.attach(stream, writer, last_event_id=last_event_id):
            return
        # Not "nothing pending": an answer leaves ``pending`` before it is written (it may be waiting for the lock
        # attach just held), and this response is then where it goes.
        if stream is not session.standalone and stream.complete.is_set():
            if stream.writer is writer:
                stream.writer = None
            await writer.end()
            return
        await self._stream_until_done(session, stream, writer, response)

    async def delete(self, request: HttpRequest, response: HttpResponse, route: Route) -> None:
        session = await self._session_for(route, response)
        if session is None:
            return
        if session.directory is not None:  # ended for every process: its record and its events go first
            try:
                await session.directory.forget(session.id)
                if self.options.event_store is not None:
                    await self.options.event_store.forget(session.id)
            except Exception as exc:  # kept in the directory, the session goes on: the client may try again
                logger.warning("session %s not ended: %s", session.id[:8], type(exc).__name__)
                await refuse(response, _unavailable())
                return
            await session.directory.publish(session.id, {"kind": "end"})
        session.end()
        await response.send(200)

    async def _session_for(self, route: Route, response: HttpResponse) -> HttpSession | None:
        if route.session_id is None:
            await refuse(response, Rejection(Refusal.SESSION_NOT_FOUND, "Session not found"))
            return None
        return await self._lookup(route.session_id, response, None)

    async def _lookup(
        self, session_id: str, response: HttpResponse, request_id: RequestId | None
    ) -> HttpSession | None:
        """The caller's session with this id, taken over from the directory if another process opened it;
        None after answering 404 (or 503 when the directory cannot be reached)."""
        session = self.find(session_id)
        if session is None and self._directory is not None and session_id not in self.sessions:
            try:
                session = await self._adopt(session_id)
            except Exception as exc:  # the directory's own failure (Redis down, say): this request only
                logger.warning("session directory unavailable for session %s: %s", session_id[:8], type(exc).__name__)
                await refuse(response, _unavailable(request_id))
                return None
        if session is None:
            await refuse(response, Rejection(Refusal.SESSION_NOT_FOUND, "Session not found", request_id))
        return session

    async def _adopt(self, session_id: str) -> HttpSession | None:
        """Serve here a session another process opened, rebuilt from its record (no handshake again)."""
        assert self._directory is not None
        adopting = self._adopting.get(session_id)
        if adopting is not None:
            await adopting.wait()
            return self.find(session_id)
        self._adopting[session_id] = done = trio.Event()
        try:
            record = await self._directory.load(session_id)
            if record is None or record.get("principal") != caller_key(request_principal.get()):
                return None
            if len(self.sessions) >= self.options.max_sessions:
                self.reap_idle()
            if len(self.sessions) >= self.options.max_sessions:
                logger.warning("cannot take over HTTP session %s: max_sessions reached", session_id[:8])
                return None
            return await self._start(session_id, sse_only=False, restored=record["state"])
        finally:
            del self._adopting[session_id]
            done.set()

    async def _stream_not_open(self, session: HttpSession, stream_id: str, last_event_id: str) -> _Stream | None:
        """A stored stream this session does not hold open: one answered already, whose stored events are all
        there is to send, or one another process serves, followed here (stored events now, routed ones as they
        come)."""
        directory = session.directory
        if directory is None or stream_id.startswith(f"{directory.origin}."):
            answered = _Stream(stream_id, set())
            answered.complete.set()
            return answered
        requests = await directory.stream_requests(session.id, stream_id)
        if requests is None:
            return None
        stream = _Stream(stream_id, set(requests), origin=stream_id.partition(".")[0])
        stream.last_id = last_event_id  # where catching up from the store starts
        session.streams[stream_id] = stream
        return stream

    async def _stream_until_done(
        self,
        session: HttpSession,
        stream: _Stream,
        writer: SseWriter,
        response: HttpResponse,
        *,
        head_held: bool = False,
    ) -> None:
        """Hold the response open until its stream is complete, the client leaves, or the server drains (then
        the stream is ended cleanly: a client of this era resumes it elsewhere). Idle streams get ``:``
        keep-alive comments; a head started with ``hold`` goes after ``_HEAD_HOLD`` if no event took it. No task
        is spawned for any of this."""
        open_ = True
        if head_held and not stream.complete.is_set():
            # A quick answer comes within the hold: the watch's own deadline times it, one scope in all.
            with trio.CancelScope(relative_deadline=_HEAD_HOLD) as watch:
                stream.watch = watch
                response.cancel_on_disconnect(watch, or_shutdown=True)
                await stream.complete.wait()
            if stream.watch is watch:
                stream.watch = None
            if not stream.complete.is_set():  # no answer yet: the client gets the head, and the priming event, now
                open_ = await writer.raw(b"")
        if open_ and not stream.complete.is_set():
            await self._keep_open(session, stream, writer, response)
        if stream.writer is writer:
            stream.writer = None
        await writer.end()
        session.touch()

    async def _keep_open(
        self, session: HttpSession, stream: _Stream, writer: SseWriter, response: HttpResponse
    ) -> None:
        """``_stream_until_done`` for a stream that is still open after its head went: ticks until it ends."""
        with trio.CancelScope() as watch:
            stream.watch = watch
            response.cancel_on_disconnect(watch, or_shutdown=True)
            # A stream followed from another process is checked on while it is quiet: it ends if that process died.
            quiet = (
                self.options.keepalive_interval if stream.origin is None else min(self.options.keepalive_interval, 1.0)
            )
            while not stream.complete.is_set():
                with trio.move_on_after(quiet):
                    await stream.complete.wait()
                if stream.complete.is_set():
                    break
                if stream.origin is not None and session.directory is not None:
                    await session.catch_up(stream)
                    if stream.complete.is_set():
                        break
                    if not await session.directory.alive(stream.origin):
                        await session.orphaned(stream)
                        break
                if not await writer.raw(encode_comment()):
                    break
        if stream.watch is watch:
            stream.watch = None

    # -- the sessions --------------------------------------------------------------------------------------

    async def open_session(self, response: HttpResponse, *, sse_only: bool) -> HttpSession | None:
        """A new session served by a connection of its own, or None after answering 503 (too many)."""
        if len(self.sessions) >= self.options.max_sessions:
            self.reap_idle()
        if len(self.sessions) >= self.options.max_sessions:
            await refuse(
                response,
                Rejection(
                    Refusal.TOO_MANY_SESSIONS, "Too many sessions; try again later", headers=(("retry-after", "5"),)
                ),
            )
            return None
        return await self._start(secrets.token_urlsafe(32), sse_only=sse_only)

    async def _start(
        self, session_id: str, *, sse_only: bool, restored: Mapping[str, Any] | None = None
    ) -> HttpSession:
        """A session and its connection, which runs in the session's ``tasks`` (no task waits while it idles)."""
        session = HttpSession(
            session_id,
            self.options,
            self._nursery,
            sse_only=sse_only,
            principal=request_principal.get(),
            on_end=self._forget,
            restored=restored,
        )
        self.sessions[session.id] = session
        try:
            await self._connect(session, principal=session.principal, control=session, tasks=session.tasks)
        except BaseException:
            session.end()
            raise
        return session

    def find(self, session_id: str) -> HttpSession | None:
        """The session with this id, if it belongs to this caller (another principal's session is not found)."""
        session = self.sessions.get(session_id)
        principal = request_principal.get()
        if session is None or session.caller != caller_key(principal):
            return None
        session.principal = principal  # the same caller; its latest token (refreshed, stepped up)
        return session

    def _forget(self, session: HttpSession) -> None:
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]
        store = self.options.event_store
        # With a directory another process may still serve the session: its stored events expire on their own.
        if store is not None and not session.sse_only and session.directory is None:
            self._nursery.start_soon(store.forget, session.id)

    def reap_idle(self) -> None:
        """End sessions that have had no traffic for ``session_idle_timeout`` and have no open stream."""
        limit = trio.current_time() - self.options.session_idle_timeout
        for session in list(self.sessions.values()):
            if session.last_activity < limit and not session.busy():
                logger.info("ending idle HTTP session %s", session.id[:8])
                session.end()

    async def maintain(self) -> NoReturn:
        """Reap idle sessions periodically and, with a directory, hear the other processes (runs for the life
        of the endpoint)."""
        async with trio.open_nursery() as nursery:
            if self._directory is not None:
                nursery.start_soon(self._directory.run, self._routed, self._joined)  # reaping never waits for it
            interval = max(min(self.options.session_idle_timeout / 4, 60.0), 0.05)
            while True:
                swept = trio.current_time()
                await trio.sleep(interval)
                self.reap_idle()
                if self._directory is not None:
                    await self._touch_used(swept)
        raise AssertionError("unreachable")

    async def _touch_used(self, since: float) -> None:
        """Keep the directory records of the sessions used here since ``since`` (an outage only logs)."""
        assert self._directory is not None
        used = [session.id for session in self.sessions.values() if session.last_activity >= since]
        try:
            await self._directory.touch(used)
        except Exception as exc:  # the directory's own failure: the records may expire early, nothing more
            logger.warning("session records not refreshed: %s", type(exc).__name__)

    async def _joined(self) -> None:
        """Routing is (back) on, and what was published before is lost: take each held session's state from its
        record again, and end those that ended elsewhere (their record is gone)."""
        assert self._directory is not None
        for session in list(self.sessions.values()):
            if not session.recorded:  # no record yet (its initialize is under way): nothing to refresh from
                continue
            try:
                record = await self._directory.load(session.id)
            except Exception as exc:  # the directory's own failure: the next rejoin tries again
                logger.warning("session %s not refreshed: %s", session.id[:8], type(exc).__name__)
                return
            if record is None:
                session.end()
            elif session.apply_state is not None:
                session.apply_state(record["state"])

    async def _routed(self, session_id: str, routed: Mapping[str, Any]) -> None:
        """What another process published for a session: a client message, an event, or the session's end."""
        session = self.sessions.get(session_id)
        if session is None:
            return
        kind = routed.get("kind")
        if kind == "inbound":
            here, _ = session.local(routed.get("message"))
            if here is not None:
                with trio.move_on_after(self.options.keepalive_interval):  # a stuck session never stalls routing
                    await session.deliver(here)
        elif kind == "event":
            await session.routed_event(
                str(routed.get("stream")), routed.get("id"), routed.get("message"), last=bool(routed.get("last"))
            )
        elif kind == "state" and session.apply_state is not None and isinstance(routed.get("state"), dict):
            session.apply_state(routed["state"])
        elif kind == "end":
            session.end()


def _single_id(message: Any) -> RequestId | None:
    request_id = message.get("id") if type(message) is dict else None
    return request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None
