"""Starts the bookshop server as a subprocess, talks to it over stdio, and prints what they exchange.

Run it with ``python -m trio_mcp.examples.demo``; ``--round-trips N`` also times N sequential echo calls.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import trio

import trio_mcp
import trio_mcp.types
from trio_mcp.types import ProgressNotificationParams


async def main(round_trips: int) -> None:
    command = [sys.executable, "-m", "trio_mcp.examples.bookshop"]
    print(f"$ {' '.join(command)}")
    async with trio_mcp.open_stdio_client(command) as client:
        print(
            f"connected to {client.server_info.name} {client.server_info.version}, protocol {client.protocol_version}"
        )
        print(f"instructions: {client.instructions}")
        tools = await client.list_tools()
        for tool in tools.tools:
            print(f"tool {tool.name}: {tool.description}\n  input schema {json.dumps(tool.input_schema)}")

        def on_progress(update: ProgressNotificationParams) -> None:
            print(f"  progress {update.progress:g}/{update.total:g}")

        result = await client.call_tool("search_books", {"query": "dune"}, on_progress=on_progress)
        print(f"search_books -> {result.structured_content}")
        result = await client.call_tool("word_count", {"text": "the spice must flow"})
        print(f"word_count -> {result.structured_content}")
        result = await client.call_tool("search_books", {"query": 42})
        message = result.content[0]
        assert isinstance(message, trio_mcp.types.TextContent)
        print(f"search_books with a bad argument -> is_error={result.is_error}: {message.text!r}")
        with trio.move_on_after(0.005):
            await client.call_tool("search_books", {"query": "dune"})
        print("a call cancelled after 5 ms returned control at once (notifications/cancelled was sent)")
        if round_trips:
            started = time.perf_counter()
            for n in range(round_trips):
                await client.call_tool("echo", {"text": str(n)})
            elapsed = time.perf_counter() - started
            print(
                f"{round_trips} sequential echo calls: {round_trips / elapsed:,.0f} round trips/s "
                f"({elapsed / round_trips * 1e6:,.0f} µs each)"
            )
    print("server shut down cleanly")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--round-trips", type=int, default=2000)
    trio.run(main, parser.parse_args().round_trips)
