"""A proxy: the stdio bookshop server served as a stateless 2026-07-28 HTTP endpoint.

``open_proxy`` starts the upstream server and mirrors its tools, prompts and resources in a ``Server``, which can
then be served on any transport. Progress flows back from upstream, and cancelling a call through the proxy
cancels it upstream. The same works with any MCP server (``open_proxy(["node", "server.js"])``, ``url=...``),
and from the command line: ``trio-mcp proxy -t http -- python -m trio_mcp.examples.bookshop``.

Run it: ``python -m trio_mcp.examples.proxy``.
"""

from __future__ import annotations

import sys

import trio

import trio_mcp
from trio_mcp.proxy import open_proxy
from trio_mcp.types import ProgressNotificationParams


async def main() -> None:
    upstream = [sys.executable, "-m", "trio_mcp.examples.bookshop"]
    async with open_proxy(upstream) as server, trio.open_nursery() as nursery:
        port = await nursery.start(server.serve_http, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{port}/mcp"
        print(f"proxying {server.info.name} on {url}")
        async with trio_mcp.open_http_client(url) as client:
            print(f"the client speaks {client.protocol_version} to the proxy")

            def on_progress(update: ProgressNotificationParams) -> None:
                print(f"  progress {update.progress:g}/{update.total:g}")

            result = await client.call_tool("search_books", {"query": "dune"}, on_progress=on_progress)
            print(f"search_books -> {result.structured_content}")
        nursery.cancel_scope.cancel()
    print("proxy and upstream server shut down")


if __name__ == "__main__":
    trio.run(main)
