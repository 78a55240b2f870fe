"""A WebSocket server and client (the ``mcp`` subprotocol; NOT part of the MCP specification).

Some hosts speak MCP over WebSocket. trio_mcp serves it through the same engine as every other transport; the
upgrade checks ``Origin``, since browsers apply no CORS to WebSockets. Use it only where you control both ends.

Run it: ``python -m trio_mcp.examples.websocket_pair``.
"""

from __future__ import annotations

import trio

import trio_mcp
from trio_mcp import Context, Server
from trio_mcp.types import TextContent

server = Server("ws-demo", version="1.0.0")


@server.tool()
async def countdown(start: int, ctx: Context) -> str:
    """Count down, reporting progress on the way."""
    for step in range(start, 0, -1):
        await ctx.report_progress(start - step + 1, total=start, message=str(step))
        await trio.sleep(0.01)
    return "liftoff"


async def main() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve_websocket, "127.0.0.1", 0)
        async with trio_mcp.open_websocket_client(f"ws://127.0.0.1:{port}/") as client:
            print(f"connected over WebSocket, protocol {client.protocol_version}")
            result = await client.call_tool("countdown", {"start": 3}, on_progress=lambda p: print(f"  {p.message}..."))
            block = result.content[0]
            print(block.text if isinstance(block, TextContent) else block)
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main)
