"""A server that announces resource changes the ordinary way (``server.notify_resource_updated``), for
``trio-mcp run --redis``, which spreads them to every process."""

from __future__ import annotations

import os

from trio_mcp import Server

server = Server("changes")


@server.resource("note://{name}")
def note(name: str) -> str:
    return f"note {name}"


@server.tool()
async def touch(uri: str) -> int:
    """Say that ``uri`` changed; returns the id of the process that said it."""
    server.notify_resource_updated(uri)
    return os.getpid()
