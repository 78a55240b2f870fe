"""Where the SSE events of a session are kept so that a client whose stream broke can resume it.

``EventStore`` is the interface (a Redis-backed store implements the same three calls); ``MemoryEventStore``
is the default, bounded, in this process. Event ids come from the store: unique in the session, ordered within
a stream, and enough on their own to find the stream again (``replay`` takes nothing else). An event is kept as
the text the SSE stream carries in its ``data`` (the message's JSON, or nothing for the mark a stream opens with):
made once for the wire, kept as it is, replayed as it was sent.
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
        self._events: dict[str, dict[str, list[tuple[int, str]]]] = {}
        self._sequence: dict[str, int] = {}
        #: Per session and stream, the last sequence dropped to keep the stream in bounds: an id before it
        #: cannot be resumed from without missing events.
        self._dropped: dict[str, dict[str, int]] = {}

    async def append(self, session_id: str, stream_id: str, data: str) -> str:
        streams = self._events.get(session_id)
        if streams is None:
            streams = self._events[session_id] = {}
        events = streams.pop(stream_id, None)  # put back last: the streams stay in the order of their last event
        if events is None:
            events = []
            if len(streams) >= self._max_streams:
                forgotten = next(iter(streams))  # the stream quiet the longest
                del streams[forgotten]
                self._dropped.get(session_id, {}).pop(forgotten, None)
        streams[stream_id] = events
        sequence = self._sequence.get(session_id, 0) + 1
        self._sequence[session_id] = sequence
        events.append((sequence, data))
        if len(events) > self._max_events:
            self._dropped.setdefault(session_id, {})[stream_id] = events.pop(0)[0]
        return f"{stream_id}_{sequence}"

    async def replay(self, session_id: str, last_event_id: str) -> tuple[str, list[tuple[str, str]]] | None:
        stream_id, _, sequence = last_event_id.rpartition("_")
        events = self._events.get(session_id, {}).get(stream_id)
        if events is None or not sequence.isdigit():
            return None
        after = int(sequence)
        if after < self._dropped.get(session_id, {}).get(stream_id, 0):
            return None  # events after it were dropped: a replay would miss them
        return stream_id, [(f"{stream_id}_{number}", data) for number, data in events if number > after]

    async def forget(self, session_id: str) -> None:
        self._events.pop(session_id, None)
        self._sequence.pop(session_id, None)
        self._dropped.pop(session_id, None)
