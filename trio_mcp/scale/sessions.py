"""Session roaming on Redis: the HTTP transport's ``SessionDirectory``, so that any worker or machine serves any
request of a legacy-era session (``HttpTransportOptions(session_directory=RedisSessionDirectory(redis))``).

A session's record is ``<prefix>:{<session>}:record`` and the requests of its streams
``<prefix>:{<session>}:streams`` (the braces keep a session in one Redis Cluster slot); both expire ``ttl``
seconds after the session was last used anywhere. Messages between processes go through one pub/sub channel
that every process follows, each skipping what it published itself; delivery is at most once, as pub/sub is
(a routed event is also in the shared event store, where a resuming client finds it). Each process refreshes
``<prefix>:origin:<origin>`` every ``heartbeat`` seconds; it expires three heartbeats after the process died.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NoReturn

import trio

from .._core.jsonrpc import RequestId
from .._core.session_record import SessionRecord
from ..transports.http.roaming import Routed
from .pubsub import follow
from .redis import RedisClient, RedisUnavailable

__all__ = ["RedisSessionDirectory"]

logger = logging.getLogger("trio_mcp.scale")

#: How long a session's claim on a change lasts: far longer than pub/sub takes to reach every process.
_CLAIM_MS = 60_000


class RedisSessionDirectory:
    """Implements the HTTP transport's ``SessionDirectory`` on a ``RedisClient`` (one per process).

    Saving and loading raise ``RedisUnavailable`` in an outage (the request that needed it fails clearly:
    503 for a request of a session this process does not hold); publishing logs it and drops the message.
    """

    def __init__(
        self, redis: RedisClient, *, prefix: str = "trio_mcp:sessions", ttl: float = 3600.0, heartbeat: float = 1.0
    ) -> None:
        for name, value, least in (("ttl", ttl, 1.0), ("heartbeat", heartbeat, 0.05)):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not (value >= least and math.isfinite(value))
            ):
                raise ValueError(f"{name} must be at least {least:g} seconds, not {value!r}")
        if not prefix or "{" in prefix or "}" in prefix:
            raise ValueError(f"prefix must be non-empty and without braces, not {prefix!r}")
        self.redis = redis
        self.prefix = prefix
        self._ttl_ms = int(ttl * 1000)
        self._heartbeat = float(heartbeat)
        self._origin = secrets.token_hex(6)
        self._channel = f"{prefix}:routes"

    @property
    def origin(self) -> str:
        return self._origin

    def _key(self, session_id: str, part: str) -> str:
        return f"{self.prefix}:{{{session_id}}}:{part}"

    async def save(self, session_id: str, record: SessionRecord) -> None:
        await self.redis.execute("SET", self._key(session_id, "record"), record.dumps(), "PX", self._ttl_ms)

    async def load(self, session_id: str) -> SessionRecord | None:
        raw = await self.redis.execute("GET", self._key(session_id, "record"))
        if raw is None:
            return None
        try:
            return SessionRecord.loads(raw)
        except ValueError as exc:  # a record no process of this server wrote: the session is not found
            logger.warning("the record of session %s is unreadable: %s", session_id[:8], exc)
            return None

    async def touch(self, session_ids: Sequence[str]) -> None:
        commands: list[list[str | int]] = [
            ["PEXPIRE", self._key(session_id, part), self._ttl_ms]
            for session_id in session_ids
            for part in ("record", "streams")
        ]
        if commands:
            await self.redis.pipeline(commands)

    async def forget(self, session_id: str) -> None:
        await self.redis.execute("DEL", self._key(session_id, "record"), self._key(session_id, "streams"))

    async def open_stream(self, session_id: str, stream_id: str, request_ids: Sequence[RequestId]) -> None:
        key = self._key(session_id, "streams")
        await self.redis.pipeline([["HSET", key, stream_id, _dump(list(request_ids))], ["PEXPIRE", key, self._ttl_ms]])

    async def stream_requests(self, session_id: str, stream_id: str) -> list[RequestId] | None:
        raw = await self.redis.execute("HGET", self._key(session_id, "streams"), stream_id)
        found = json.loads(raw) if raw is not None else None
        return found if isinstance(found, list) else None

    async def claim(self, session_id: str, change: str) -> bool:
        key = self._key(session_id, f"told:{change}")
        if await self.redis.execute("SET", key, self._origin, "NX", "PX", _CLAIM_MS) is not None:
            return True
        return bool(await self.redis.execute("GET", key) == self._origin.encode())  # a retried SET that had set it

    async def publish(self, session_id: str, message: Mapping[str, Any]) -> None:
        envelope = _dump({"origin": self._origin, "session": session_id, "message": message})
        try:
            await self.redis.execute("PUBLISH", self._channel, envelope, idempotent=False)
        except RedisUnavailable as exc:
            logger.warning("a message for session %s was not routed: %s", session_id[:8], exc)

    async def alive(self, origin: str) -> bool:
        if origin == self._origin:
            return True
        return bool(await self.redis.execute("EXISTS", f"{self.prefix}:origin:{origin}"))

    async def run(
        self,
        routed: Routed,
        joined: Callable[[], Awaitable[None]],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> NoReturn:
        async def deliver(data: bytes) -> None:
            try:
                envelope = json.loads(data)
                origin, session_id, message = envelope["origin"], envelope["session"], envelope["message"]
            except (ValueError, TypeError, KeyError):
                logger.warning("ignored a malformed message on %s", self._channel)
                return
            if origin != self._origin and isinstance(session_id, str) and isinstance(message, dict):
                await routed(session_id, message)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._beat)
            while True:
                try:
                    await follow(
                        self.redis,
                        self._channel,
                        deliver,
                        what="session routing",
                        on_join=joined,
                        task_status=task_status,
                    )
                except RedisUnavailable as exc:  # the first subscription failed: a server started while Redis is
                    # down serves what it holds, and routes once Redis is back
                    logger.warning("session routing waits for Redis: %s", exc)
                    await trio.sleep(self._heartbeat)
        raise AssertionError("unreachable")

    async def _beat(self) -> NoReturn:
        """Say this process is alive, every heartbeat; an outage only delays it."""
        key = f"{self.prefix}:origin:{self._origin}"
        while True:
            try:
                await self.redis.execute("SET", key, "1", "PX", int(self._heartbeat * 3000))
            except RedisUnavailable as exc:
                logger.warning("session heartbeat not recorded: %s", exc)
            await trio.sleep(self._heartbeat)


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
