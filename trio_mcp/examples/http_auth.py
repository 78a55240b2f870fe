"""An HTTP server that requires a bearer token, and clients with and without one.

``HttpTransportOptions(authenticate=...)`` is called with the token of every request's
``Authorization: Bearer <token>`` header; what it returns is the caller (``ctx.principal`` in handlers), and None
refuses the request with 401. A session stays bound to the caller who opened it. Compare tokens in constant time
(``hmac.compare_digest``); in production check a JWT or ask your authorization server instead of a table.

Run it: ``python -m trio_mcp.examples.http_auth``.
"""

from __future__ import annotations

import hmac

import trio

import trio_mcp
from trio_mcp import Context, HttpTransportOptions, Server
from trio_mcp.types import TextContent

TOKENS = {"alice": "s3cret-token-for-alice", "bob": "another-token-for-bob"}

server = Server("vault", version="1.0.0")


@server.tool()
async def whoami(ctx: Context) -> str:
    """Say who the server thinks is calling."""
    return f"you are {ctx.principal}"


async def authenticate(token: str) -> str | None:
    for user, expected in TOKENS.items():
        if hmac.compare_digest(token.encode(), expected.encode()):
            return user
    return None


async def main() -> None:
    options = HttpTransportOptions(authenticate=authenticate)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: server.serve_http("127.0.0.1", 0, options=options, task_status=task_status)
        )
        url = f"http://127.0.0.1:{port}/mcp"
        for user in ("alice", "bob"):
            headers = {"Authorization": f"Bearer {TOKENS[user]}"}
            async with trio_mcp.open_http_client(url, headers=headers) as client:
                result = await client.call_tool("whoami")
                block = result.content[0]
                print(f"{user}: {block.text if isinstance(block, TextContent) else block}")
        try:
            async with trio_mcp.open_http_client(url, headers={"Authorization": "Bearer wrong"}) as client:
                await client.call_tool("whoami")
        except trio_mcp.TrioMcpError as exc:
            print(f"a wrong token is refused: {type(exc).__name__}: {exc}")
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main)
