"""Rate limits: a token bucket per principal (and per tool), in this process or shared through Redis.

Each key's bucket holds up to ``burst`` tokens and refills at ``rate`` tokens a second; a request takes one.
A request finding the bucket empty is refused at once with ``RATE_LIMITED`` (-32011), whose ``data.retryAfter``
says how many seconds until a token is there.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import trio

from .._middleware import CallNext, RequestInfo
from ..errors import RATE_LIMITED, McpError
from ._caller import applies, check_per, check_tools, key_of, target

if TYPE_CHECKING:
    from ..scale.redis import RedisClient

__all__ = ["RateLimit", "Buckets", "MemoryBuckets", "RedisBuckets"]


class Buckets(Protocol):
    """Where the buckets live: ``take`` removes a token from ``key``'s bucket and returns 0, or returns the
    seconds until one is there (taking nothing)."""

    async def take(self, key: str, rate: float, burst: float) -> float: ...


class MemoryBuckets:
    """The buckets of this process (on trio's clock); at most ``max_keys`` at once, full ones forgotten first."""

    def __init__(self, max_keys: int = 100_000) -> None:
        if isinstance(max_keys, bool) or not isinstance(max_keys, int) or max_keys < 1:
            raise ValueError(f"max_keys must be a whole number, 1 or more, not {max_keys!r}")
        self.max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, when counted)

    async def take(self, key: str, rate: float, burst: float) -> float:
        now = trio.current_time()
        tokens, then = self._buckets.pop(key, (burst, now))
        tokens = min(burst, tokens + (now - then) * rate)
        wait = 0.0 if tokens >= 1 else (1 - tokens) / rate
        if not wait:
            tokens -= 1
        if len(self._buckets) >= self.max_keys:
            self._forget_full(now, rate, burst)
        self._buckets[key] = (tokens, now)  # reinserted: the dict stays in least recently used order
        return wait

    def _forget_full(self, now: float, rate: float, burst: float) -> None:
        """Drop the buckets that have refilled (the same as no bucket), else the least recently used half."""
        full = [key for key, (tokens, then) in self._buckets.items() if tokens + (now - then) * rate >= burst]
        for key in full or list(self._buckets)[: max(1, len(self._buckets) // 2)]:
            del self._buckets[key]


#: One atomic step on a bucket stored as a hash (tokens, time), on Redis's clock so that every process agrees.
_TAKE = """
local now = redis.call('TIME')
now = tonumber(now[1]) + tonumber(now[2]) / 1000000
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = math.min(burst, (tonumber(state[1]) or burst) + math.max(0, now - (tonumber(state[2]) or now)) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return tostring(wait)
"""


class RedisBuckets:
    """Buckets in Redis, shared by every worker process and machine using the same Redis and ``prefix``: each
    take is one atomic script on Redis's clock, and a bucket expires once it would be full again.

    A request whose bucket Redis cannot reach fails (``RedisUnavailable``, logged with an error id): a limit
    that lapses silently would be no limit.
    """

    def __init__(self, redis: RedisClient, *, prefix: str = "trio_mcp:rate:") -> None:
        self.redis = redis
        self.prefix = prefix

    async def take(self, key: str, rate: float, burst: float) -> float:
        reply = await self.redis.execute("EVAL", _TAKE, 1, self.prefix + key, repr(rate), repr(burst), idempotent=False)
        return float(reply)


class RateLimit:
    """Middleware refusing requests beyond ``rate`` a second (with bursts of up to ``burst``) per key.

    ``per``: "principal" (who the transport authenticated: unauthenticated callers share one bucket), "tool"
    (what the request names: a tool, prompt or resource, else its method), or both. ``tools``: only calls of
    these tools count (default: every request). ``buckets``: ``MemoryBuckets()`` (this process) by default,
    ``RedisBuckets(redis)`` to share the limit across processes.
    """

    def __init__(
        self,
        rate: float,
        burst: int | None = None,
        *,
        per: Sequence[str] = ("principal",),
        tools: Collection[str] | None = None,
        buckets: Buckets | None = None,
    ) -> None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0:
            raise ValueError(f"rate must be a number of requests a second above 0, not {rate!r}")
        burst = max(1, math.ceil(rate)) if burst is None else burst
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
            raise ValueError(f"burst must be a whole number, 1 or more, not {burst!r}")
        self.rate = float(rate)
        self.burst = burst
        self.per = check_per(per)
        self.tools = check_tools(tools)
        self.buckets: Buckets = buckets if buckets is not None else MemoryBuckets()

    async def __call__(self, call: RequestInfo, call_next: CallNext) -> Any:
        if applies(call, self.tools):
            wait = await self.buckets.take(key_of(call, self.per), self.rate, self.burst)
            if wait > 0:
                what = target(call) or call.method
                retry = math.ceil(wait * 1000) / 1000
                raise McpError(
                    RATE_LIMITED,
                    f"Rate limit exceeded for {what}: {self.rate:g} a second; retry after {retry:g} s",
                    {"retryAfter": retry},
                )
        return await call_next()
