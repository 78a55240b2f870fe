"""A server built on the official MCP Python SDK (`mcp`, pinned in requirements-mcp.txt), spoken to over stdio.

Run it with the interop virtualenv's python (`.interop/mcp-venv/bin/python`), never with trio_mcp's own
`.venv`: tests/interop/test_interop_stdio.py points trio_mcp's client at it to check that the two implementations
agree on the wire.

Tools:
  echo(text) -> str           the text unchanged
  add(a: int, b: int) -> int  the sum, as structured output (`{"result": a + b}`) and as text
  slow(seconds: float) -> str sleeps, reporting progress every 0.1 s; cancellable
  list_roots() -> str         asks the client for its roots (`roots/list`) and returns their URIs, comma-separated
"""

from __future__ import annotations

import warnings

import anyio
from mcp.server.mcpserver import Context, MCPServer

# `roots` is deprecated from protocol revision 2026-07-28 on; this server still exercises it for 2025-11-25 peers.
warnings.simplefilter("ignore")

server = MCPServer("official-stdio-server", version="1.0.0", instructions="interop peer for trio_mcp")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Sleep for `seconds`, reporting progress every 0.1 s."""
    steps = max(1, round(seconds / 0.1))
    for step in range(1, steps + 1):
        await anyio.sleep(seconds / steps)
        await ctx.report_progress(step, total=steps, message=f"step {step}/{steps}")
    return f"slept {seconds}"


@server.tool()
async def list_roots(ctx: Context) -> str:
    """Return the URIs of the client's roots, comma-separated."""
    result = await ctx.session.list_roots()
    return ",".join(str(root.uri) for root in result.roots)


if __name__ == "__main__":
    server.run("stdio")
