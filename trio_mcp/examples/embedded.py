"""A trio application that embeds an MCP server beside its own background work.

The app keeps a sensor reading up to date in one task and serves MCP over HTTP in another, in the same nursery:
one process, one event loop, shared state without locks. A client (here in the same process, usually elsewhere)
reads what the background task produced. Cancelling the nursery stops everything at once.

Run it: ``python -m trio_mcp.examples.embedded`` (``--port 8000 --forever`` to keep it serving).
"""

from __future__ import annotations

import argparse

import trio

import trio_mcp
from trio_mcp import Server


class Thermometer:
    """The application's own state, updated by its own task."""

    def __init__(self) -> None:
        self.celsius = 20.0
        self.readings = 0
        self.changed = trio.Event()

    async def run(self) -> None:
        while True:
            await trio.sleep(0.05)
            self.readings += 1
            self.celsius = round(20.0 + (self.readings % 10) / 10, 1)
            self.changed.set()
            self.changed = trio.Event()


def build_server(thermometer: Thermometer) -> Server:
    server = Server("thermometer", version="1.0.0")

    @server.tool()
    async def temperature() -> dict[str, float]:
        """The latest reading, in degrees Celsius."""
        return {"celsius": thermometer.celsius, "readings": thermometer.readings}

    @server.tool()
    async def next_reading() -> float:
        """Wait for the background task's next reading and return it."""
        await thermometer.changed.wait()
        return thermometer.celsius

    return server


async def main(port: int, forever: bool) -> None:
    thermometer = Thermometer()
    server = build_server(thermometer)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(thermometer.run)  # the app's own work
        bound = await nursery.start(server.serve_http, "127.0.0.1", port)  # MCP beside it
        url = f"http://127.0.0.1:{bound}/mcp"
        print(f"serving on {url}")
        if forever:
            return  # the nursery keeps both tasks running until Ctrl-C
        async with trio_mcp.open_http_client(url) as client:
            for _ in range(3):
                result = await client.call_tool("next_reading")
                print(f"next reading: {result.structured_content}")
            result = await client.call_tool("temperature")
            print(f"temperature tool: {result.structured_content}")
        nursery.cancel_scope.cancel()  # stops the server and the background task together
    print("stopped: server and background task ended together")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--forever", action="store_true")
    options = parser.parse_args()
    trio.run(main, options.port, options.forever)
