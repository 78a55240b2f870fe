"""Where the facade keeps its state: client registrations, pending authorizations, codes, grants and tokens.

Every record expires (``ttl`` seconds); ``take`` reads and deletes at once, so an authorization code or a
refresh token is redeemed once even when several workers race for it. ``MemoryFacadeStore`` serves one
process; ``trio_mcp.scale.RedisFacadeStore`` shares the state between the workers of a deployment (the Redis
it already uses for sessions will do).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Protocol

from ...errors import TrioMcpError

__all__ = ["FacadeStore", "MemoryFacadeStore", "StoreUnavailable"]

Record = dict[str, Any]


class StoreUnavailable(TrioMcpError):
    """The state cannot be read or written now (Redis cannot be reached, or the memory store is full): the
    facade answers 503 and the MCP endpoint 503, and both recover by themselves."""


class FacadeStore(Protocol):
    """Expiring JSON records by key; a store that cannot serve a call raises ``StoreUnavailable``."""

    async def put(self, key: str, record: Record, ttl: float) -> None: ...

    async def get(self, key: str) -> Record | None: ...

    async def take(self, key: str) -> Record | None:
        """The record, deleted in the same step (None when absent, expired or already taken)."""
        ...

    async def delete(self, key: str) -> None: ...


class MemoryFacadeStore:
    """The state of one process (the default), at most ``max_records`` records (registrations cost one each,
    so a flood of them cannot exhaust memory). Expired records are dropped as they are met, and swept every
    ``sweep_every`` writes and whenever the store is full."""

    def __init__(
        self, *, max_records: int = 100_000, clock: Callable[[], float] = time.monotonic, sweep_every: int = 256
    ) -> None:
        if isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1:
            raise ValueError(f"max_records must be a whole number, 1 or more, not {max_records!r}")
        self.max_records = max_records
        self._clock = clock
        self._records: dict[str, tuple[float, str]] = {}
        self._writes = 0
        self._sweep_every = sweep_every

    async def put(self, key: str, record: Record, ttl: float) -> None:
        self._writes += 1
        if self._writes % self._sweep_every == 0 or len(self._records) >= self.max_records:
            now = self._clock()
            self._records = {k: v for k, v in self._records.items() if v[0] > now}
        if key not in self._records and len(self._records) >= self.max_records:
            raise StoreUnavailable(f"the authorization state is full ({self.max_records} records)")
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
