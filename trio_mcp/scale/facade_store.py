"""The authorization facade's state in Redis, shared by the workers of a deployment (``FacadeStore``)."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any

from ..auth.facade import StoreUnavailable
from .redis import RedisClient, RedisError

__all__ = ["RedisFacadeStore"]

Record = dict[str, Any]


class RedisFacadeStore:
    """The state in Redis (6.2 or later, for ``GETDEL``), under ``prefix``, each key with its expiry."""

    def __init__(self, redis: RedisClient, *, prefix: str = "trio-mcp:oauth:") -> None:
        self._redis = redis
        self._prefix = prefix

    async def put(self, key: str, record: Record, ttl: float) -> None:
        milliseconds = max(1, int(ttl * 1000))
        await _redis(self._redis.execute("SET", self._prefix + key, json.dumps(record), "PX", milliseconds))

    async def get(self, key: str) -> Record | None:
        return _loaded(await _redis(self._redis.execute("GET", self._prefix + key)))

    async def take(self, key: str) -> Record | None:
        # Not idempotent: a GETDEL retried after a lost reply would find nothing and refuse a valid code.
        return _loaded(await _redis(self._redis.execute("GETDEL", self._prefix + key, idempotent=False)))

    async def delete(self, key: str) -> None:
        await _redis(self._redis.execute("DEL", self._prefix + key))


async def _redis(command: Awaitable[Any]) -> Any:
    """A Redis command's reply; its failure as ``StoreUnavailable``, naming the cause."""
    try:
        return await command
    except RedisError as exc:
        raise StoreUnavailable(f"the authorization state in Redis cannot be used: {exc}") from exc


def _loaded(raw: Any) -> Record | None:
    if raw is None:
        return None
    record = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
    return record if isinstance(record, dict) else None
