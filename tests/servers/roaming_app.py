"""The server the session-roaming tests run in several processes (``roaming_app:server`` with
``--options roaming_app:options``): sessions and events shared through the Redis at ``$TRIO_MCP_TEST_REDIS``."""

from __future__ import annotations

import os

import trio

from trio_mcp import Context, HttpTransportOptions, Server
from trio_mcp.scale import RedisClient, RedisEventStore, RedisSessionDirectory

server = Server("roaming")

_redis = RedisClient(os.environ["TRIO_MCP_TEST_REDIS"], command_timeout=2.0, retries=2)
options = HttpTransportOptions(
    event_store=RedisEventStore(_redis), session_directory=RedisSessionDirectory(_redis), retry_ms=100
)


@server.tool()
async def pid() -> int:
    """The id of the process serving this call."""
    return os.getpid()


@server.tool()
async def count(ctx: Context, steps: int = 200) -> str:
    """Report ``steps`` progress events a little apart (each names this process), then finish."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, message=str(os.getpid()))
        await trio.sleep(0.01)
    return f"counted on {os.getpid()}"


@server.tool()
async def greet(ctx: Context) -> str:
    """Ask the client for a name; the answer comes back through whichever process the balancer picks."""
    answer = await ctx.elicit(
        "your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    )
    return f"{(answer.content or {})['name']} answered, asked by {os.getpid()}"
