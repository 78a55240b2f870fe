"""The server the worker-process tests run (``worker_app:server``): tools that tell which process served them."""

from __future__ import annotations

import os
import time

import trio

from trio_mcp import Context, HttpTransportOptions, Server

server = Server("workers")

#: ``--options worker_app:on_rpc`` serves the endpoint at /rpc instead of /mcp.
on_rpc = HttpTransportOptions(path="/rpc")


@server.tool(run_in_thread=False)
def pid(busy: float = 0.0) -> int:
    """This worker's process id, after keeping its event loop busy for ``busy`` seconds (so that concurrent
    connections go to the other workers)."""
    time.sleep(busy)
    return os.getpid()


@server.tool()
async def slow(seconds: float, ctx: Context) -> int:
    """Sleep, so a call is in flight when the worker is told to drain (a progress update says it began); returns
    the process id."""
    await ctx.report_progress(0, 1)
    await trio.sleep(seconds)
    return os.getpid()


@server.tool()
async def greet(ctx: Context) -> str:
    """Ask for a name (in the modern era: an InputRequiredResult and a retry) and say which workers served."""
    first = os.getpid()
    answer = await ctx.elicit(
        f"asked by {first}: your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        key="name",
    )
    return f"{(answer.content or {})['name']} answered on {os.getpid()}"
