"""Deadline propagation down a chain: client -> proxy -> proxy -> server over Streamable HTTP on 127.0.0.1.

    python benchmarks/deadlines.py [--runs 10] [--deadline 1.0] [--protocol 2026-07-28] [--quick]

The client calls a tool that takes ten seconds inside ``trio.move_on_after(deadline)``. Each hop (the two proxies
of ``trio_mcp.proxy`` and the server, every one serving HTTP in this process) notes when its handler ended; the
figures are those times less the client's deadline, in milliseconds (negative: before it), median and worst over
the runs, and how many of the server's handlers were asked to cancel by a ``notifications/cancelled`` (none:
each hop is stopped by the budget it was given, less 2 ms a hop, and answers before its caller's deadline).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

import trio

import trio_mcp
from trio_mcp import CallNext, Context, RequestInfo
from trio_mcp.proxy import open_proxy

HOPS = ("proxy 1", "proxy 2", "server")


def noting_ends(server: trio_mcp.Server, hop: str, ends: dict[str, float]) -> None:
    """Note when ``server``'s handler of a ``tools/call`` ends, however it ends."""

    @server.middleware
    async def note(call: RequestInfo, call_next: CallNext) -> Any:
        try:
            return await call_next()
        finally:
            if call.method == "tools/call":
                ends[hop] = trio.current_time()


async def serve(nursery: trio.Nursery, server: trio_mcp.Server) -> str:
    port = await nursery.start(lambda task_status: server.serve_http("127.0.0.1", 0, task_status=task_status))
    return f"http://127.0.0.1:{port}/mcp"


async def measure(runs: int, deadline: float, protocol: str) -> dict[str, Any]:
    ends: dict[str, float] = {}
    asked_to_cancel: list[Context] = []
    server = trio_mcp.Server("end")

    @server.tool()
    async def slow(ctx: Context) -> str:
        """Take ten seconds."""
        asked_to_cancel.append(ctx)
        await trio.sleep(10)
        return "finished"

    noting_ends(server, "server", ends)
    offsets: dict[str, list[float]] = {hop: [] for hop in (*HOPS, "client")}
    async with trio.open_nursery() as nursery:
        url = await serve(nursery, server)
        async with open_proxy(url=url, protocol_version=protocol) as first:
            noting_ends(first, "proxy 1", ends)
            first_url = await serve(nursery, first)
            async with open_proxy(url=first_url, protocol_version=protocol) as second:
                noting_ends(second, "proxy 2", ends)
                second_url = await serve(nursery, second)
                async with trio_mcp.open_http_client(second_url, protocol_version=protocol) as client:
                    for _ in range(runs):
                        ends.clear()
                        start = trio.current_time()
                        with trio.move_on_after(deadline):
                            await client.call_tool("slow", {})
                        ends["client"] = trio.current_time()
                        with trio.fail_after(5):
                            while len(ends) < len(HOPS) + 1:
                                await trio.sleep(0.001)
                        for hop, end in ends.items():
                            offsets[hop].append((end - start - deadline) * 1000)
                    await trio.sleep(0.2)  # for any notifications/cancelled still on its way
        nursery.cancel_scope.cancel()
    cancelled = sum(ctx.cancel_requested.is_set() for ctx in asked_to_cancel)
    return {
        "runs": runs,
        "deadline_s": deadline,
        "protocol": protocol,
        "handler_end_minus_deadline_ms": {
            hop: {"median": round(statistics.median(values), 2), "worst": round(max(values, key=abs), 2)}
            for hop, values in offsets.items()
        },
        "server_handlers_asked_to_cancel": cancelled,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--deadline", type=float, default=1.0)
    parser.add_argument("--protocol", default="2026-07-28", help="the revision every hop speaks")
    parser.add_argument("--quick", action="store_true", help="two runs of 0.2 s (a smoke test)")
    args = parser.parse_args(argv)
    runs, deadline = (2, 0.2) if args.quick else (args.runs, args.deadline)
    print(json.dumps(trio.run(measure, runs, deadline, args.protocol), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
