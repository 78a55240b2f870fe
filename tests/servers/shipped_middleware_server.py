"""A server guarded by the middleware trio_mcp ships (``make_server()``), served in-process or over stdio."""

from __future__ import annotations

import trio

import trio_mcp
from trio_mcp import Context
from trio_mcp.errors import ToolError
from trio_mcp.middleware import AccessLog, ErrorShaping, RateLimit, ResponseCache, SizeLimit

FORBIDDEN = -32001
#: The rate of ``limited``: two calls, then one a thousand seconds.
RATE = 0.001


class Reads:
    """How many times each resource handler ran (the cache's misses), in-process."""

    count = 0


def make_server() -> trio_mcp.Server:
    server = trio_mcp.Server("shipped-middleware")
    server.middleware(AccessLog())
    server.middleware(
        ErrorShaping(
            {
                PermissionError: FORBIDDEN,
                LookupError: lambda exc: ToolError(f"nothing called {exc.args[0]}"),
            }
        )
    )
    server.middleware(RateLimit(RATE, burst=2, tools={"limited"}))
    server.middleware(ResponseCache(server, ttl=30))
    server.middleware(SizeLimit(4096))
    reads = Reads()

    @server.tool()
    async def limited() -> str:
        """Allowed twice."""
        return "allowed"

    @server.tool()
    async def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.tool()
    async def forbidden() -> str:
        """Raise PermissionError."""
        raise PermissionError("not for you")

    @server.tool()
    async def lookup(name: str) -> str:
        """Raise KeyError."""
        raise KeyError(name)

    @server.tool()
    async def broken() -> str:
        """Fail with an exception nobody mapped."""
        raise RuntimeError("the database password is hunter2")

    @server.tool()
    async def big(size: int) -> str:
        """Answer ``size`` characters."""
        return "x" * size

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        """Announce that ``uri`` changed."""
        ctx.server.notify_resource_updated(uri)
        return "touched"

    @server.resource("counter://reads")
    async def counter() -> str:
        reads.count += 1
        await trio.sleep(0)
        return f"read {reads.count}"

    @server.resource("secret://{name}")
    async def secret(name: str) -> str:
        raise PermissionError(f"{name} is not for you")

    server.reads = reads  # type: ignore[attr-defined]
    return server


if __name__ == "__main__":
    trio.run(make_server().serve_stdio)
