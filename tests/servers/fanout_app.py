"""The server the fan-out tests run (``fanout_app:server``): resource updates and list changes go to every
process's clients through the Redis named by ``TRIO_MCP_TEST_REDIS_URL``."""

from __future__ import annotations

import os
from contextlib import asynccontextmanager
from typing import AsyncIterator

import trio

from trio_mcp import Context, Server
from trio_mcp.scale import RedisClient, RedisFanout


@asynccontextmanager
async def fan_out(server: Server) -> AsyncIterator[RedisFanout]:
    async with RedisClient(os.environ["TRIO_MCP_TEST_REDIS_URL"], retries=2) as redis:
        async with trio.open_nursery() as nursery:
            fanout = RedisFanout(server, redis)
            await nursery.start(fanout.run)
            yield fanout
            nursery.cancel_scope.cancel()


server = Server("fanout", lifespan=fan_out)


@server.resource("note://{name}")
def note(name: str) -> str:
    return f"note {name}"


@server.tool()
async def touch(uri: str, ctx: Context) -> int:
    """Tell every process's subscribers that ``uri`` changed; returns this process's id."""
    await ctx.lifespan_state.resource_updated(uri)
    return os.getpid()


@server.tool()
async def retool(ctx: Context) -> int:
    """Tell every process's clients that the tool list changed; returns this process's id."""
    await ctx.lifespan_state.list_changed("tools")
    return os.getpid()
