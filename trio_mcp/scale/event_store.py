"""The HTTP transport's event store in Redis, so a client can resume a stream on whichever worker or machine
its ``Last-Event-ID`` reaches.

Each stream of a session is one Redis Stream, ``<prefix>:{<session>}:stream:<stream id>``, capped at about
``max_events_per_stream`` entries (``XADD MAXLEN ~``) and expiring ``ttl`` seconds after its last event; a set
beside it names the session's streams so ``forget`` can drop them all. The braces keep a session's keys in one
Redis Cluster slot. Event ids are ``<stream id>/<Redis entry id>``: Redis assigns entry ids in increasing order
whichever worker appends, so they order within a stream across every process, and the stream is found from
the id alone. An append is acknowledged only after Redis has stored it, and is never resent after a failure
that may have stored it (see ``RedisClient.pipeline``): an acknowledged event is kept, and none is doubled.
"""

from __future__ import annotations

import math
import re
from typing import Final

from .redis import RedisClient

__all__ = ["RedisEventStore"]

_ENTRY_ID: Final = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")


class RedisEventStore:
    """Implements the HTTP transport's async ``EventStore`` protocol on a ``RedisClient``.

    Raises ``RedisUnavailable`` when Redis cannot be reached in time (the transport then cannot offer
    resumption for that event), ``RedisCommandError`` if Redis refuses a command.
    """

    def __init__(
        self,
        redis: RedisClient,
        *,
        prefix: str = "trio_mcp:events",
        max_events_per_stream: int = 1000,
        ttl: float = 3600.0,
    ) -> None:
        if (
            isinstance(max_events_per_stream, bool)
            or not isinstance(max_events_per_stream, int)
            or max_events_per_stream < 1
        ):
            raise ValueError(f"max_events_per_stream must be a whole number, 1 or more, not {max_events_per_stream!r}")
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not (ttl >= 1 and math.isfinite(ttl)):
            raise ValueError(f"ttl must be at least 1 second, not {ttl!r}")
        if not prefix or "{" in prefix or "}" in prefix:
            raise ValueError(f"prefix must be non-empty and without braces, not {prefix!r}")
        self.redis = redis
        self.prefix = prefix
        self.max_events_per_stream = max_events_per_stream
        self._ttl_ms = int(ttl * 1000)

    def _stream_key(self, session_id: str, stream_id: str) -> str:
        return f"{self.prefix}:{{{session_id}}}:stream:{stream_id}"

    def _index_key(self, session_id: str) -> str:
        return f"{self.prefix}:{{{session_id}}}:streams"

    async def append(self, session_id: str, stream_id: str, data: str) -> str:
        """Store one event's data sent on a stream; return its event id (unique in the session, ordered within
        the stream)."""
        if not stream_id or "/" in stream_id:
            raise ValueError(f"a stream id must be non-empty and without '/', not {stream_id!r}")
        key, index = self._stream_key(session_id, stream_id), self._index_key(session_id)
        replies = await self.redis.pipeline(
            [
                ["XADD", key, "MAXLEN", "~", self.max_events_per_stream, "*", "m", data],
                ["PEXPIRE", key, self._ttl_ms],
                ["SADD", index, stream_id],
                ["PEXPIRE", index, self._ttl_ms],
            ],
            idempotent=False,
        )
        return f"{stream_id}/{replies[0].decode('ascii')}"

    async def replay(self, session_id: str, last_event_id: str) -> tuple[str, list[tuple[str, str]]] | None:
        """The stream that event id belongs to and the id and data of every event after it, in order; None if
        unknown/expired."""
        stream_id, slash, entry_id = last_event_id.rpartition("/")
        if not stream_id or not slash or not _ENTRY_ID.fullmatch(entry_id):
            return None  # not an id this store made
        key = self._stream_key(session_id, stream_id)
        known, after = await self.redis.pipeline(
            [["XRANGE", key, entry_id, entry_id], ["XRANGE", key, "(" + entry_id, "+"]]
        )
        if not known:
            return None  # never stored, expired, or trimmed away: events may be missing, so do not pretend
        events = [(f"{stream_id}/{rid.decode('ascii')}", _field(fields, b"m").decode("utf-8")) for rid, fields in after]
        return stream_id, events

    async def forget(self, session_id: str) -> None:
        """Drop everything stored for a session (it ended)."""
        index = self._index_key(session_id)
        streams = await self.redis.execute("SMEMBERS", index)
        keys = [self._stream_key(session_id, name.decode("utf-8")) for name in streams]
        await self.redis.execute("DEL", index, *keys)


def _field(fields: list[bytes], name: bytes) -> bytes:
    for position in range(0, len(fields) - 1, 2):
        if fields[position] == name:
            return fields[position + 1]
    raise ValueError("a stream entry without its message")  # only if something else wrote to our keys
