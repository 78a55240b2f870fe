"""Where the SSE events of a session are kept so that a client whose stream broke can resume it.

``EventStore`` is the interface (a Redis-backed store implements the same three calls); ``MemoryEventStore``
is the default, bounded, in this process. Event ids come from the store: unique in the session, ordered within
a stream, and enough on their own to find the stream again (``replay`` takes nothing else).
"""

from __future__ import annotations

import collections
from typing import Any, Protocol

__all__ = ["EventStore", "MemoryEventStore"]


class EventStore(Protocol):
    """Keeps the events of session-era streams for ``Last-Event-ID`` resumption."""

    async def append(self, session_id: str, stream_id: str, message: dict[str, Any]) -> str:
        """Store one message sent on a stream; return its event id (unique in the session, ordered within the stream)."""

    async def replay(self, session_id: str, last_event_id: str) -> tuple[str, list[tuple[str, dict[str, Any]]]] | None:
        """The stream that event id belongs to and every event after it, in order; None if unknown/expired."""

    async def forget(self, session_id: str) -> None:
        """Drop everything stored for a session (it ended)."""


class MemoryEventStore:
    """The default ``EventStore``: the last ``max_events_per_stream`` events of each of a session's last
    ``max_streams_per_session`` streams, in memory. Event ids are ``<stream id>_<sequence>``."""

    def __init__(self, max_events_per_stream: int = 256, max_streams_per_session: int = 256) -> None:
        if max_events_per_stream < 1 or max_streams_per_session < 1:
            raise ValueError("max_events_per_stream and max_streams_per_session must be at least 1")
        self._max_events = max_events_per_stream
        self._max_streams = max_streams_per_session
        self._events: dict[str, dict[str, collections.deque[tuple[int, dict[str, Any]]]]] = {}
        self._sequence: dict[str, int] = {}

    async def append(self, session_id: str, stream_id: str, message: dict[str, Any]) -> str:
        streams = self._events.setdefault(session_id, {})
        if stream_id not in streams and len(streams) >= self._max_streams:
            streams.pop(next(iter(streams)))  # forget the oldest stream
        sequence = self._sequence.get(session_id, 0) + 1
        self._sequence[session_id] = sequence
        streams.setdefault(stream_id, collections.deque(maxlen=self._max_events)).append((sequence, message))
        return f"{stream_id}_{sequence}"

    async def replay(self, session_id: str, last_event_id: str) -> tuple[str, list[tuple[str, dict[str, Any]]]] | None:
        stream_id, _, sequence = last_event_id.rpartition("_")
        events = self._events.get(session_id, {}).get(stream_id)
        if events is None or not sequence.isdigit():
            return None
        after = int(sequence)
        return stream_id, [(f"{stream_id}_{number}", message) for number, message in events if number > after]

    async def forget(self, session_id: str) -> None:
        self._events.pop(session_id, None)
        self._sequence.pop(session_id, None)
