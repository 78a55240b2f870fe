"""A server whose tools show the deadline extension at work (``make_server()``), in-process or over stdio."""

from __future__ import annotations

import trio

import trio_mcp
from trio_mcp import Context


def make_server() -> trio_mcp.Server:
    server = trio_mcp.Server("deadlines")
    runs = {"count": 0}

    @server.tool()
    async def budget(ctx: Context) -> str:
        """The seconds this call has left, as the handler sees them ("none": no deadline)."""
        left = ctx.time_remaining
        return "none" if left is None else repr(left)

    @server.tool()
    async def count() -> int:
        """How many times this handler ran before (this call included)."""
        runs["count"] += 1
        return runs["count"]

    @server.tool()
    async def slow(seconds: float = 10.0) -> str:
        """Take ``seconds``."""
        await trio.sleep(seconds)
        return "finished"

    return server


if __name__ == "__main__":
    trio.run(make_server().serve_stdio)
