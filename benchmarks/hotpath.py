"""Micro-benchmark of trio_mcp's hot path for one ``tools/call`` echo, in-process (no I/O), for profiling.

    .venv/bin/python benchmarks/hotpath.py                 # per-stage and end-to-end µs per call
    .venv/bin/python benchmarks/hotpath.py --profile       # plus cProfile of the end-to-end loop
    .venv/bin/python benchmarks/hotpath.py --profile --profile-out /tmp/hot.prof   # for snakeviz & co.
    .venv/bin/python benchmarks/hotpath.py --observe otel  # with trio_mcp.otel (or: middleware)

End to end, request bytes go into a ``MemoryMessageStream`` served by the benchmark's echo server
(benchmarks/echo_server.py) through ``Server.serve_connection`` -- the same ``Session`` engine and
``ServerConnection`` as stdio and HTTP use -- and response bytes come out: parse, classify, dispatch (a task
and a cancel scope per request), argument validation and conversion, the tool, result conversion and
serialisation. It runs with 1 request in flight (latency-bound) and with 64 (throughput-bound).

The stages are also timed one by one, calling the same internal functions directly:
  parse      trio_mcp._core.jsonrpc.decode(bytes)
  classify   trio_mcp._core.jsonrpc.classify(message)
  convert    the tool's argument validation and binding (``tool.schema.bind``)
  result     the tool's return value to a wire ``CallToolResult`` (``_tools.tool_result_wire``)
  serialise  trio_mcp._core.jsonrpc.encode(result_message(...))
so "dispatch and scheduling" is what the end-to-end figure has beyond their sum.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import math
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from echo_server import observe, server  # noqa: E402  (the benchmark's trio_mcp echo server)

from trio_mcp._core.jsonrpc import classify, decode, encode, result_message  # noqa: E402
from trio_mcp.transports._base import MemoryMessageStream  # noqa: E402

TEXT = "hello, benchmark"
VERSION = "2025-11-25"


def request_bytes(request_id: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":'
        + str(request_id).encode()
        + b',"method":"tools/call","params":{"name":"echo","arguments":{"text":"'
        + TEXT.encode()
        + b'"}}}'
    )


INITIALIZE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"'
    + VERSION.encode()
    + b'","capabilities":{},"clientInfo":{"name":"hotpath","version":"1"}}}'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def time_stage(fn: Callable[[], Any], n: int) -> float:
    """µs per call of ``fn``, best of 3 batches of ``n``."""
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / n * 1e6


def _result_stage(tool: Any) -> Callable[[], Any] | None:
    """The tool-result conversion, with whichever internal helper this checkout has (it is being tuned)."""
    from trio_mcp.server import _tools

    wire_fn = getattr(_tools, "tool_result_wire", None)
    if wire_fn is not None:
        return lambda: wire_fn(tool, TEXT)
    value_fn = getattr(_tools, "tool_result_from_value", None)
    if value_fn is not None:
        from trio_mcp._wire.convert import to_wire

        return lambda: to_wire(value_fn(tool, TEXT))
    return None


def stages(n: int) -> dict[str, float | None]:
    """µs per call of each stage on its own (None: this checkout has no such internal function)."""
    raw = request_bytes(7)
    message = decode(raw)
    event = classify(message)
    tool = server.tools["echo"]
    arguments = event.params["arguments"]
    bind = getattr(getattr(tool, "schema", None), "bind", None)
    result = _result_stage(tool)
    wire = result() if result is not None else {"content": [{"type": "text", "text": TEXT}]}
    return {
        "parse": time_stage(lambda: decode(raw), n),
        "classify": time_stage(lambda: classify(message), n),
        "convert": time_stage(lambda: bind(arguments), n) if bind is not None else None,
        "result": time_stage(result, n) if result is not None else None,
        "serialise": time_stage(lambda: encode(result_message(7, wire)), n),
    }


async def end_to_end(calls: int, in_flight: int) -> tuple[float, float]:
    """(wall µs, CPU µs) per call through the real engine, with ``in_flight`` requests outstanding."""
    to_server, server_inbox = trio.open_memory_channel[bytes](math.inf)
    server_outbox, from_server = trio.open_memory_channel[bytes](math.inf)
    stream = MemoryMessageStream(server_outbox, server_inbox)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_connection, stream)
        await to_server.send(INITIALIZE)
        await from_server.receive()
        await to_server.send(INITIALIZED)
        requests = [request_bytes(i) for i in range(1, calls + 1)]
        expected = TEXT.encode()
        start = time.perf_counter()
        cpu_start = time.process_time()
        sent = received = 0
        while sent < min(in_flight, calls):
            to_server.send_nowait(requests[sent])
            sent += 1
        while received < calls:
            answer = await from_server.receive()
            received += 1
            if expected not in answer:
                raise RuntimeError(f"unexpected answer {answer[:200]!r}")
            if sent < calls:
                to_server.send_nowait(requests[sent])
                sent += 1
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        nursery.cancel_scope.cancel()
    return elapsed / calls * 1e6, cpu / calls * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20000, help="calls per end-to-end measurement")
    parser.add_argument("--quick", action="store_true", help="few calls (a smoke test)")
    parser.add_argument("--profile", action="store_true", help="cProfile the end-to-end loop (1 in flight)")
    parser.add_argument("--profile-out", type=Path, help="also save the profile (pstats format) here")
    parser.add_argument("--top", type=int, default=25, help="functions listed from the profile")
    parser.add_argument(
        "--observe",
        choices=("none", "middleware", "otel"),
        default="none",
        help="add a pass-through middleware, or trio_mcp.otel exporting to nowhere (as echo_server.py --observe)",
    )
    args = parser.parse_args(argv)
    observe(args.observe)
    calls = 300 if args.quick else args.calls
    stage_times = stages(200 if args.quick else 20000)
    trio.run(end_to_end, min(calls, 200), 1)  # warm-up: imports, caches
    e2e_1, cpu_1 = trio.run(end_to_end, calls, 1)
    e2e_64, cpu_64 = trio.run(end_to_end, calls, 64)
    total_stages = sum(value for value in stage_times.values() if value is not None)
    print(f"trio_mcp hot path, tools/call echo, {calls:,} calls in-process (µs per call)")
    for name, value in stage_times.items():
        print(f"  {name:<24}" + ("     n/a   (no such internal function here)" if value is None else f"{value:8.1f}"))
    print(f"  {'sum of stages':<24}{total_stages:8.1f}")
    for label, wall, cpu in (("1 in flight", e2e_1, cpu_1), ("64 in flight", e2e_64, cpu_64)):
        print(f"  {'end to end, ' + label:<24}{wall:8.1f}   ({1e6 / wall:,.0f} calls/s; CPU {cpu:.1f} µs per call)")
    dispatch = cpu_1 - total_stages
    print(f"  {'dispatch and scheduling':<24}{dispatch:8.1f}   (end-to-end CPU, 1 in flight, less the stages)")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        trio.run(end_to_end, calls, 1)
        profiler.disable()
        if args.profile_out:
            profiler.dump_stats(str(args.profile_out))
        for key in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(key).print_stats(args.top)
            text = out.getvalue()
            print(f"\n---- profile, sorted by {key} (top {args.top}) ----")
            print(text[text.find("   ncalls") :].rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
