"""The server the shared-limit tests run in several processes (``limits_app:server``): a rate limit kept in the
Redis named by ``TRIO_MCP_TEST_REDIS_URL``, and a response cache that the Redis fan-out keeps right."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from trio_mcp import Context, Server
from trio_mcp.middleware import RateLimit, RedisBuckets, ResponseCache
from trio_mcp.scale import RedisClient, RedisFanout

redis = RedisClient(os.environ["TRIO_MCP_TEST_REDIS_URL"], retries=2)


@asynccontextmanager
async def fan_out(server: Server) -> AsyncIterator[RedisFanout]:
    async with redis, trio.open_nursery() as nursery:
        fanout = RedisFanout(server, redis)
        await nursery.start(fanout.run)
        yield fanout
        nursery.cancel_scope.cancel()


server = Server("limits", lifespan=fan_out)
server.middleware(RateLimit(0.001, burst=3, tools={"limited"}, buckets=RedisBuckets(redis)))
server.middleware(ResponseCache(server))


@server.tool()
async def limited() -> int:
    """Three calls between every process, then one in a thousand seconds; returns this process's id."""
    return os.getpid()


@server.resource("shared://note")
async def note() -> str:
    return (await redis.execute("GET", "note") or b"").decode()


@server.tool()
async def write(text: str, announce: bool, ctx: Context) -> int:
    """Store the note every process reads; ``announce`` tells every process it changed."""
    await redis.execute("SET", "note", text)
    if announce:
        await ctx.lifespan_state.resource_updated("shared://note")
    return os.getpid()
