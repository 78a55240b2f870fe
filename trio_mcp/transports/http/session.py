"""One session of the Streamable HTTP legacy era: its streams, what it records, and where its messages go.

Every event goes through its stream's lock: it is recorded in the ``EventStore`` and then written, so a resuming
client (GET with ``Last-Event-ID``) gets every event exactly once and in order, however often its connection
drops, even during a replay. When sessions roam (a session directory other processes share), messages whose
reader is another process travel through the directory. What may happen to a stream, and which stream carries
what, is decided without I/O in ``_core/session_streams.py``; here is the I/O. ``sessions.py`` opens, finds
and ends sessions.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import trio

from ..._core.inbound import Refusal, Rejection
from ..._core.jsonrpc import RequestId, decode, error_message
from ..._core.session_record import SessionRecord, SessionState
from ..._core.session_streams import SessionStreams, Step, StreamMachine
from ..._core.sse import encode_event
from ..._identity import caller_key
from ..._runner import RequestRunner
from ..._task_set import TaskSet
from ..._wire.features import Feature, has
from ..._wire.versions import DEFAULT_NEGOTIATED_VERSION
from ...errors import INTERNAL_ERROR, ConnectionClosed
from .._base import notified_change
from .._quick_lock import QuickLock
from ._common import (
    SSE_HEADERS,
    SseWriter,
    event_data,
)
from .events import EventStore, MemoryEventStore
from .options import HttpTransportOptions
from .roaming import SessionDirectory

__all__ = ["HttpSession", "SessionStream", "stored_message", "unavailable"]

logger = logging.getLogger("trio_mcp.http")

#: Notifications of a change the server's processes all hear; when sessions roam, one process claims each.
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

#: The mark a stream's start (its priming event) and a handler's stream close leave in the event store: an
#: event without data.
_MARK = ""


#: How soon a client refused during a session directory's outage may try again (our client does, by itself).
_RETRY_AFTER = "1"


def unavailable(request_id: RequestId | None = None) -> Rejection:
    """The answer to a request that needs the session directory or the event store while it cannot be reached."""
    return Rejection(
        Refusal.DIRECTORY_UNAVAILABLE,
        "Sessions are unavailable; try again later",
        request_id,
        headers=(("retry-after", _RETRY_AFTER),),
    )


def _append_now(store: EventStore | None) -> Callable[[str, str, str], str] | None:
    """The built-in store's ``append_now`` (no coroutine per event), unless a subclass changed ``append``."""
    if isinstance(store, MemoryEventStore) and type(store).append is MemoryEventStore.append:
        return store.append_now
    return None


def stored_message(data: str) -> Any:
    """The message an event store kept as ``event_data`` (its stream-start mark as ``{}``)."""
    return decode(data) if data else {}


class SessionStream(StreamMachine):
    """One logical SSE stream of a session (the GET stream, or the answers to one POST): its phase
    (``StreamMachine``) and its I/O. Its reader changes by ``read_by`` and ``left``, its end by ``completed``."""

    __slots__ = ("_complete", "backlog", "lock", "watch", "writer")

    def __init__(self, stream_id: str, pending: set[RequestId], *, origin: str | None = None) -> None:
        super().__init__(stream_id, pending, origin=origin)
        #: The response currently carrying this stream (phases ``READ`` and ``ENDING``).
        self.writer: SseWriter | None = None
        #: Events kept here: those of the GET stream while no client reads it, every event of a stream
        #: without an event store, and the answers of a JSON-response POST (bounded).
        #: Made with the first event kept (most streams keep none).
        self.backlog: collections.deque[tuple[str | None, Any]] | None = None
        #: Set with ``completed``, for a response waiting for it (``wait_complete`` makes it: most streams are
        #: complete before anything waits).
        self._complete: trio.Event | None = None
        #: The scope holding the HTTP response open; cancelled to end it early (SEP-1699 polling).
        self.watch: trio.CancelScope | None = None
        #: Held while an event is recorded and written, and while a resuming client catches up.
        self.lock = QuickLock()

    def read_by(self, writer: SseWriter, *, resume: bool = False) -> None:
        """``writer``'s response carries the stream from now on (``resume``: a GET with ``Last-Event-ID``)."""
        self.step(Step.RESUME if resume else Step.READ)
        self.writer = writer

    def left(self, writer: SseWriter | None) -> None:
        """``writer``'s response ended or broke: if it carries the stream still, nobody reads the stream now."""
        if writer is not None and self.writer is writer:
            self.step(Step.LEAVE)
            self.writer = None

    def completed(self) -> None:
        self.step(Step.COMPLETE)  # as ``StreamMachine.completed``, one call fewer on every stream's end
        if self._complete is not None:
            self._complete.set()

    async def wait_complete(self) -> None:
        """Return once nothing more comes on the stream (``over``); at once, without a checkpoint, if it is."""
        if self.over:
            return
        if self._complete is None:
            self._complete = trio.Event()
        await self._complete.wait()


class HttpSession:
    """A legacy-era session: its id, its streams, and the ``MessageStream`` its connection runs over."""

    def __init__(
        self,
        session_id: str,
        options: HttpTransportOptions,
        nursery: trio.Nursery,
        directory: SessionDirectory,
        *,
        sse_only: bool,
        principal: Any,
        on_end: Callable[[HttpSession], None],
        restored: SessionState | None = None,
    ) -> None:
        self.id = session_id
        #: The head of each of its SSE responses, encoded once (sharing the common SSE fields).
        self.sse_head = SSE_HEADERS.plus((("mcp-session-id", session_id),))
        self.principal = principal
        #: Who the session belongs to (``caller_key``): the same for every token of that caller, in every process.
        self.caller = caller_key(principal)
        self.sse_only = sse_only
        self._store = None if sse_only else options.event_store
        #: How events are recorded without an await, when the store allows it (``_record`` otherwise).
        self._append_now = _append_now(self._store)
        self.directory = directory
        #: Whether other processes may serve this session too (a shared directory); its ids then name this one.
        self.roams = bool(directory.origin)
        self._restored = restored
        #: Whether the directory holds a record of this session (taken over from one, or ``remember`` ran).
        self.recorded = restored is not None
        #: How often the directory could not keep the session's record (the request that changed it is then
        #: refused with 503).
        self.unrecorded = 0
        #: Takes the session's state when another process serving it changed it (set by the connection).
        self.apply_state: Callable[[SessionState], None] | None = None
        #: Handles a client message in the task that read it (the connection's, given by ``on_inbound``).
        self._take: Callable[[Any, RequestRunner | None], Awaitable[None]] | None = None
        self._json_response = options.json_response
        self._retry_ms = options.retry_ms
        self._on_end = on_end
        self.version = restored.protocol_version if restored is not None else DEFAULT_NEGOTIATED_VERSION
        #: The run's clock, read straight by ``touch`` on every request (``trio.current_time`` reads it too).
        self._clock = trio.lowlevel.current_clock()
        self.last_activity = self._clock.current_time()
        #: What the connection runs (its requests, notifications, tasks), in the endpoint's nursery: an idle
        #: session holds no task. Cancelled when the session ends.
        self.tasks = TaskSet(nursery, on_failure=self._failed)
        #: Whether the session ended (``end``).
        self.closed = False
        #: Set when it ends, for whatever waits for that (``wait_closed`` makes it: most sessions end unwatched).
        self._ended: trio.Event | None = None
        #: Which stream carries what (``_core.session_streams``); its dicts are shared here by name.
        self.book = SessionStreams(directory.origin, SessionStream)
        self.standalone = self.book.standalone
        self.streams = self.book.streams
        self.owner = self.book.owner

    @property
    def version(self) -> str:
        """The revision the session speaks (the default one until ``initialize`` is answered)."""
        return self._version

    @version.setter
    def version(self, version: str) -> None:
        self._version = version
        #: Whether its streams open with a priming event: known once per revision, not asked on every POST.
        self._primes = self._store is not None and has(version, Feature.PRIMING_EVENTS)

    # MessageStream, as the connection sees it --------------------------------------------------------------

    async def receive(self) -> Any:
        """Nothing arrives here: each client message goes to the connection in the task that read it
        (``deliver``). Waits for the session's end."""
        await self.wait_closed()
        raise ConnectionClosed("HTTP session ended")

    async def send(self, message: Any, *, related_request_id: RequestId | None = None, final: bool = False) -> None:
        if self.closed:
            raise ConnectionClosed("HTTP session ended")
        if self.roams:
            self.book.sending(message)
        # The stream of the request the message relates to, while that is open (an HTTP+SSE session has none).
        owner = None if self.sse_only or related_request_id is None else self.owner.get(related_request_id)
        if owner is None:
            await self._emit(self.standalone, message)
        elif not final:  # a JSON-response POST's stream takes its answers alone
            await self._emit(self.standalone if self._json_response else owner, message)
        else:
            # The answer releases its requests before it is written: whatever is sent for them afterwards (a log
            # record queued during the call, say) goes to the GET stream, never after the end of this one.
            last = self.book.release(message, owner)
            await self._emit(owner, message, last=last)
            if last:
                self.book.complete(owner)

    async def aclose(self) -> None:
        self.end()

    # StreamControl, as the connection sees it ---------------------------------------------------------------

    def negotiated(self, version: str) -> None:
        self.version = version

    @property
    def restored(self) -> SessionState | None:
        return self._restored

    @property
    def session_id(self) -> str | None:
        return self.id if self.roams else None

    @property
    def request_id_prefix(self) -> str:
        return f"{self.directory.origin}-" if self.roams else ""

    def on_state(self, apply: Callable[[SessionState], None]) -> None:
        self.apply_state = apply

    def on_inbound(self, take: Callable[[Any, RequestRunner | None], Awaitable[None]]) -> None:
        self._take = take

    async def remember(self, state: SessionState) -> None:
        try:
            await self.directory.save(self.id, SessionRecord(caller=self.caller, state=state))
        except Exception:
            self.unrecorded += 1
            raise
        self.recorded = True
        await self.directory.publish(self.id, {"kind": "state", "state": state.to_json()})

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
            stream.left(writer)
        if stream.watch is not None:
            stream.watch.cancel()
        return True

    def request_ended(self, request_id: RequestId) -> None:
        """The request ended without an answer (cancelled): its stream waits for it no longer, and ends, as an
        answered one does, once it waits for nothing else."""
        owner = self.book.end_request(request_id)
        if owner is not None:
            self.book.complete(owner)  # its response ends; a client resuming it gets what the store kept

    # streams -----------------------------------------------------------------------------------------------

    async def open_stream(self, request_ids: Collection[RequestId]) -> SessionStream:
        """A stream for the answers to ``request_ids``; its id names this process when sessions roam, and the
        directory learns its requests (to answer them if this process dies while another one resumes it)."""
        stream = self.book.open(request_ids)
        if self.roams:
            try:
                await self.directory.open_stream(self.id, stream.id, sorted(request_ids, key=str))
            except Exception as exc:  # the directory's own failure: only a resumption after this process dies is lost
                logger.warning("stream %s of session %s not recorded: %s", stream.id, self.id[:8], type(exc).__name__)
        return stream

    async def priming(self, stream: SessionStream) -> bytes | None:
        """On 2025-11-25 a resumable stream opens with an event id and empty data, plus a ``retry`` hint."""
        if not self._primes:
            return None
        if self._append_now is not None:
            event_id: str | None = self._append_now(self.id, stream.id, _MARK)
            stream.last_id = event_id  # the stream's last_id from now on
        else:
            event_id = await self._record(stream, _MARK)
        return None if event_id is None else encode_event("", id=event_id, retry=self._retry_ms)

    async def _record(self, stream: SessionStream, data: str) -> str | None:
        """Keep an event (its ``event_data``) in the store; its id, or None when the store failed (a networked
        store in an outage): the event is still sent, only it cannot be resumed from. (An event the built-in store
        keeps goes through ``_append_now`` instead: it cannot fail that way, and needs no coroutine.)"""
        assert self._store is not None
        try:
            event_id = await self._store.append(self.id, stream.id, data)
        except Exception as exc:
            logger.warning("an event of session %s was not stored: %s", self.id[:8], type(exc).__name__)
            return None
        stream.last_id = event_id
        return event_id

    async def _emit(self, stream: SessionStream, message: Any, *, last: bool = False) -> None:
        if (
            self.roams
            and stream is self.standalone
            and type(message) is dict
            and message.get("method") in _CHANGES
            and not await self._first_to_tell(stream)
        ):
            return
        # The write that follows is the checkpoint: taking a free lock needs no schedule point of its own.
        await stream.lock.acquire(turn=False)
        try:
            # Events get ids only where they can be resumed from: with an event store.
            # Made into text once: the store keeps the text (nothing for the collector to walk), the writer sends it.
            data = event_data(message)
            event_id: str | None
            if self._append_now is not None:
                event_id = stream.last_id = self._append_now(self.id, stream.id, data)
            else:
                event_id = await self._record(stream, data) if self._store is not None else None
            writer = stream.writer
            if writer is not None and await self._tell(stream, writer, data, event_id, last=last):
                return
            stream.left(writer)
            if self.roams and not stream.collect:
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
        finally:
            stream.lock.release()

    async def _first_to_tell(self, stream: SessionStream) -> bool:
        """Whether this process tells the client of the change being sent. Every process serving the session
        hears each change (``RedisFanout``): the first to claim it records it in the event store and writes it, or
        routes it to the GET stream's reader; so it is told once, and kept for a client resuming its GET stream
        anywhere, even with the stream's holder gone. A change heard here alone is told if the reader is here."""
        change = notified_change.get()
        if change is None:
            return stream.writer is not None
        try:
            return await self.directory.claim(self.id, change)
        except Exception as exc:  # the directory's own failure: the event could not be stored either
            logger.warning("a change for session %s not claimed: %s", self.id[:8], type(exc).__name__)
            return stream.writer is not None

    async def attach(self, stream: SessionStream, writer: SseWriter, *, last_event_id: str | None = None) -> bool:
        """Point ``stream`` at a client's response, first sending what it missed; False if it left meanwhile.

        Events emitted while the backlog is replayed wait on the stream's lock, so none is skipped or doubled.
        """
        if last_event_id is None and not stream.backlog and not stream.lock.locked:
            # Nothing to send first and nothing being written (a POST's new stream): no lock to take, no checkpoint.
            stream.told = None
            stream.read_by(writer)
            return True
        await stream.lock.acquire(turn=False)  # what it writes takes the schedule points
        try:
            told = last_event_id
            if last_event_id is not None and self._store is not None:
                stream.backlog = None  # a resuming client gets the stored events instead
                replay = await self._store.replay(self.id, last_event_id)
                for event_id, data in replay[1] if replay is not None else ():
                    if stream.origin is not None:
                        if not await self._follow(stream, writer, event_id, stored_message(data)):
                            return False
                        if stream.over:
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
            stream.read_by(writer, resume=last_event_id is not None)
            return True
        finally:
            stream.lock.release()

    def _tell(
        self, stream: SessionStream, writer: SseWriter, data: str, event_id: str | None, *, last: bool = False
    ) -> Awaitable[bool]:
        """Write one event to the reader of ``stream`` (its lock held); False when the client is gone. What to
        await (the write itself, most often: no coroutine of this method around it).

        The GET stream of a session several processes serve goes in the order the event store keeps
        (``_tell_in_store_order``)."""
        if stream is self.standalone and self.roams and stream.told is not None and event_id:
            return self._tell_in_store_order(stream, writer, data, event_id, last=last)
        if event_id:
            stream.told = event_id
        return writer.data_event(data, event_id, last=last)

    async def _tell_in_store_order(
        self, stream: SessionStream, writer: SseWriter, data: str, event_id: str, *, last: bool
    ) -> bool:
        """``_tell`` on the GET stream of a roaming session: whatever the store holds past the last event this
        reader got, this one included. Each process writes what it recorded and gets what the others recorded
        routed, in whatever order pub/sub brings it; so the reader gets each event once, in the order a
        resumption elsewhere would replay it."""
        assert self._store is not None and stream.told is not None  # event ids come from the store
        try:
            replay = await self._store.replay(self.id, stream.told)
        except Exception as exc:  # a networked store in an outage
            logger.warning("cannot read the stored events of session %s: %s", self.id[:8], type(exc).__name__)
            replay = None
        if replay is None:  # nothing to go by in the store: this event goes as it is
            stream.told = event_id
            return await writer.data_event(data, event_id, last=last)
        for stored_id, stored in replay[1]:
            if not await writer.data_event(stored, stored_id):
                return False
            stream.told = stored_id
        return True

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
                stream.left(writer)

    async def catch_up(self, stream: SessionStream) -> bool:
        """Write what the store kept for a followed stream past what was written here: an event whose routing
        was lost (pub/sub is at most once) still reaches the client, in order. Whether the stream is over then."""
        if self._store is None or stream.last_id is None:
            return stream.over
        async with stream.lock:
            writer = stream.writer
            if writer is None:
                return stream.over
            try:
                replay = await self._store.replay(self.id, stream.last_id)
            except Exception as exc:  # a networked store in an outage: try again on the next quiet tick
                logger.warning("cannot read the stored events of session %s: %s", self.id[:8], type(exc).__name__)
                return stream.over
            for event_id, data in replay[1] if replay is not None else ():
                if not await self._follow(stream, writer, event_id, stored_message(data)) or stream.over:
                    break
        return stream.over

    async def _follow(
        self, stream: SessionStream, writer: SseWriter, event_id: str | None, message: Any, *, last: bool = False
    ) -> bool:
        """Write one event of a stream followed from another process (its lock held): each event once, and the
        stream complete with its last answer. False when the client is gone."""
        if event_id is not None:
            if stream.replayed is None:
                stream.replayed = set()
            elif event_id in stream.replayed:
                return True
            stream.replayed.add(event_id)
            stream.last_id = event_id
        done = stream.answered(message) or last
        if not await writer.event(message, event_id, last=done):
            stream.left(stream.writer)
            return False
        if done:
            stream.left(stream.writer)
            stream.completed()
        return True

    async def orphaned(self, stream: SessionStream) -> None:
        """The process serving a resumed stream's requests is gone: answer each with an error, end the stream."""
        async with stream.lock:
            writer = stream.writer
            stream.left(writer)
            stream.completed()
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

    def collected_answers(self, stream: SessionStream) -> list[Any]:
        """The answers a JSON-response POST stream collected."""
        kept, stream.backlog = stream.backlog or (), None
        answers = [message for _, message in kept if type(message) is dict and "method" not in message]
        return answers

    async def wait_closed(self) -> None:
        """Return once the session has ended (a checkpoint either way)."""
        if self._ended is None:
            self._ended = trio.Event()
            if self.closed:
                self._ended.set()
        await self._ended.wait()

    def touch(self) -> None:
        self.last_activity = self._clock.current_time()

    def busy(self) -> bool:
        return any(stream.writer is not None for stream in self.streams.values())

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
        if self.closed:
            return
        self.closed = True
        if self._ended is not None:
            self._ended.set()
        self._take = None  # the connection's session: let it go with the connection
        self.tasks.cancel()
        for stream in self.streams.values():
            stream.completed()
        self._on_end(self)
