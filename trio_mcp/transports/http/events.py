"""Where the SSE events of a session are kept so that a client whose stream broke can resume it.

``EventStore`` is the interface (a Redis-backed store implements the same three calls); ``MemoryEventStore``
is the default, bounded, in this process (its ``append_now`` is ``append`` called without a coroutine). Event ids
come from the store: unique in the session, ordered within a stream, and enough on their own to find the stream
again (``replay`` takes nothing else). An event is kept as the text the SSE stream carries in its ``data`` (the
message's JSON, or nothing for the mark a stream opens with): made once for the wire, kept as it is, replayed as
it was sent.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["EventStore", "MemoryEventStore"]


class EventStore(Protocol):
    """Keeps the events of legacy-era streams for ``Last-Event-ID`` resumption."""

    async def append(self, session_id: str, stream_id: str, data: str) -> str:
        """Store one event's data sent on a stream; return its event id (unique in the session, ordered within
        the stream)."""

    async def replay(self, session_id: str, last_event_id: str) -> tuple[str, list[tuple[str, str]]] | None:
        """The stream that event id belongs to and the id and data of every event after it, in order; None if
        unknown/expired."""

    async def forget(self, session_id: str) -> None:
        """Drop everything stored for a session (it ended)."""


class _SessionEvents:
    """What a ``MemoryEventStore`` keeps of one session: its streams (in the order of their last event), the last
    sequence number it gave, and per stream the last sequence dropped to keep the stream in bounds (an id before
    it cannot be resumed from without missing events)."""

    __slots__ = ("dropped", "latest", "sequence", "streams")

    def __init__(self) -> None:
        self.streams: dict[str, list[tuple[int, str]]] = {}
        #: The events of the stream last in ``streams``, and its id: a stream's next event (a POST's answer after
        #: its priming event, most often) needs no move to the end.
        self.latest: tuple[str, list[tuple[int, str]]] | None = None
        self.sequence = 0
        self.dropped: dict[str, int] | None = None


class MemoryEventStore:
    """The default ``EventStore``: the last ``max_events_per_stream`` events of each of the
    ``max_streams_per_session`` streams of a session that had an event last, in memory. Event ids are
    ``<stream id>_<sequence>``. A stream is a short list of ``(sequence, data)`` pairs: nothing the garbage
    collector has to walk but the list itself."""

    def __init__(self, max_events_per_stream: int = 256, max_streams_per_session: int = 256) -> None:
        if max_events_per_stream < 1 or max_streams_per_session < 1:
            raise ValueError("max_events_per_stream and max_streams_per_session must be at least 1")
        self._max_events = max_events_per_stream
        self._max_streams = max_streams_per_session
        self._sessions: dict[str, _SessionEvents] = {}

    async def append(self, session_id: str, stream_id: str, data: str) -> str:
        return self.append_now(session_id, stream_id, data)

    def append_now(self, session_id: str, stream_id: str, data: str) -> str:
        """``append`` without a coroutine (nothing here waits): what the HTTP session calls for every event."""
        kept = self._sessions.get(session_id)
        if kept is None:
            kept = self._sessions[session_id] = _SessionEvents()
        latest = kept.latest
        if latest is not None and latest[0] == stream_id:
            events = latest[1]
        else:
            streams = kept.streams
            found = streams.pop(stream_id, None)  # put back last: the streams stay in the order of their last event
            if found is None:
                found = []
                if len(streams) >= self._max_streams:
                    forgotten = next(iter(streams))  # the stream quiet the longest
                    del streams[forgotten]
                    if kept.dropped is not None:
                        kept.dropped.pop(forgotten, None)
            events = streams[stream_id] = found
            kept.latest = (stream_id, events)
        kept.sequence = sequence = kept.sequence + 1
        events.append((sequence, data))
        if len(events) > self._max_events:
            if kept.dropped is None:
                kept.dropped = {}
            kept.dropped[stream_id] = events.pop(0)[0]
        return f"{stream_id}_{sequence}"

    async def replay(self, session_id: str, last_event_id: str) -> tuple[str, list[tuple[str, str]]] | None:
        stream_id, _, sequence = last_event_id.rpartition("_")
        kept = self._sessions.get(session_id)
        events = kept.streams.get(stream_id) if kept is not None else None
        if kept is None or events is None or not sequence.isdigit():
            return None
        after = int(sequence)
        if kept.dropped is not None and after < kept.dropped.get(stream_id, 0):
            return None  # events after it were dropped: a replay would miss them
        return stream_id, [(f"{stream_id}_{number}", data) for number, data in events if number > after]

    async def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
