"""A trio_mcp HTTP server for tests that need a real process: prints its port, serves until interrupted."""

from __future__ import annotations

import signal

import trio

from trio_mcp import HttpTransportOptions, Server
from trio_mcp.transports.http import Drain, HttpLimits

server = Server("http-process")


@server.tool()
async def wait(seconds: float) -> str:
    """Sleep, so that a call is in flight when the process is told to stop."""
    await trio.sleep(seconds)
    return "woke"


async def main() -> None:
    """Serve until SIGINT or SIGTERM, then drain and stop: the way to run an HTTP server in production."""
    drain = Drain()
    options = HttpTransportOptions(limits=HttpLimits(graceful_shutdown_timeout=2.0), drain=drain)
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: server.serve_http("127.0.0.1", 0, options=options, task_status=task_status)
            )
            print(port, flush=True)
            async for _ in signals:
                await drain()  # no new requests, streams ended, calls in flight get 2 s
                nursery.cancel_scope.cancel()  # then whatever is left ends now
                break


if __name__ == "__main__":
    trio.run(main)
