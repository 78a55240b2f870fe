"""Where the facade keeps its state: client registrations, pending authorizations, codes, grants and tokens.

Every record expires (``ttl`` seconds); ``take`` reads and deletes at once, so an authorization code or a
refresh token is redeemed once even when several workers race for it. ``MemoryFacadeStore`` serves one
process; ``RedisFacadeStore`` shares the state between the workers of a deployment (the Redis it already
uses for sessions will do).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...scale.redis import RedisClient

__all__ = ["FacadeStore", "MemoryFacadeStore", "RedisFacadeStore"]

Record = dict[str, Any]


class FacadeStore(Protocol):
    """Expiring JSON records by key."""

    async def put(self, key: str, record: Record, ttl: float) -> None: ...

    async def get(self, key: str) -> Record | None: ...

    async def take(self, key: str) -> Record | None:
        """The record, deleted in the same step (None when absent, expired or already taken)."""
        ...

    async def delete(self, key: str) -> None: ...


class MemoryFacadeStore:
    """The state of one process (the default). Expired records are dropped as they are met, and swept every
    ``sweep_every`` writes."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, sweep_every: int = 256) -> None:
        self._clock = clock
        self._records: dict[str, tuple[float, str]] = {}
        self._writes = 0
        self._sweep_every = sweep_every

    async def put(self, key: str, record: Record, ttl: float) -> None:
        self._writes += 1
        if self._writes % self._sweep_every == 0:
            now = self._clock()
            self._records = {k: v for k, v in self._records.items() if v[0] > now}
        self._records[key] = (self._clock() + ttl, json.dumps(record))

    async def get(self, key: str) -> Record | None:
        entry = self._records.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._records[key]
            return None
        loaded: Record = json.loads(entry[1])
        return loaded

    async def take(self, key: str) -> Record | None:
        record = await self.get(key)
        self._records.pop(key, None)
        return record

    async def delete(self, key: str) -> None:
        self._records.pop(key, None)


class RedisFacadeStore:
    """The state in Redis (6.2 or later, for ``GETDEL``), under ``prefix``, each key with its expiry."""

    def __init__(self, redis: RedisClient, *, prefix: str = "trio-mcp:oauth:") -> None:
        self._redis = redis
        self._prefix = prefix

    async def put(self, key: str, record: Record, ttl: float) -> None:
        milliseconds = max(1, int(ttl * 1000))
        await self._redis.execute("SET", self._prefix + key, json.dumps(record), "PX", milliseconds)

    async def get(self, key: str) -> Record | None:
        return _loaded(await self._redis.execute("GET", self._prefix + key))

    async def take(self, key: str) -> Record | None:
        # Not idempotent: a GETDEL retried after a lost reply would find nothing and refuse a valid code.
        return _loaded(await self._redis.execute("GETDEL", self._prefix + key, idempotent=False))

    async def delete(self, key: str) -> None:
        await self._redis.execute("DEL", self._prefix + key)


def _loaded(raw: Any) -> Record | None:
    if raw is None:
        return None
    record = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
    return record if isinstance(record, dict) else None
