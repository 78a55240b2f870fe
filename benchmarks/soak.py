"""A bounded soak: thousands of sessions and requests over stdio and HTTP for a few minutes, then a check that
memory, file descriptors and live trio tasks came back to where they were once the load ended.

    python benchmarks/soak.py --seconds 180

Three loads run at once against server processes started here (this same file, ``--serve stdio|http``):
HTTP sessions (2025-11-25: initialize, calls, DELETE), stateless HTTP requests (2026-07-28), and stdio sessions
(a server process each). One long-lived stdio session and the HTTP server report their own figures through a
``stats`` tool (RSS, open fds, live trio tasks walked from the root task, gc-tracked objects); this process
samples its own. Figures are taken after a warm-up (the baseline) and after the load ends and settles (final).
Exit status 1 when a figure did not come back: tasks and fds exactly (within a small slack), memory within
a bound. Not part of ``make test``: run it with ``make soak``.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import time

import trio

import trio_mcp
from trio_mcp import Server

HERE = os.path.abspath(__file__)

# --- the server side -------------------------------------------------------------------------------------------


def live_tasks() -> int:
    """Every task in this trio run, walked from the root task through each nursery."""
    stack = [trio.lowlevel.current_root_task()]
    count = 0
    while stack:
        task = stack.pop()
        if task is None:
            continue
        count += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return count


def process_figures() -> dict[str, int]:
    """RSS (KiB), open fds, live trio tasks and gc-tracked objects of this process, after a full collection."""
    gc.collect()
    with open("/proc/self/statm") as f:
        rss_pages = int(f.read().split()[1])
    return {
        "rss_kib": rss_pages * os.sysconf("SC_PAGE_SIZE") // 1024,
        "fds": len(os.listdir("/proc/self/fd")),
        "tasks": live_tasks(),
        "objects": len(gc.get_objects()),
    }


def make_server() -> Server:
    server = Server("soak", version="1.0.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    @server.tool()
    async def stats() -> dict[str, int]:
        """This server process's figures."""
        return process_figures()

    return server


async def serve_http() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: make_server().serve_http("127.0.0.1", 0, task_status=task_status)
        )
        print(port, flush=True)


# --- the load --------------------------------------------------------------------------------------------------


class Counters:
    def __init__(self) -> None:
        self.http_sessions = 0
        self.http_session_requests = 0
        self.stateless_requests = 0
        self.stdio_sessions = 0
        self.stdio_requests = 0
        self.errors: list[str] = []


STDIO_SERVER = [sys.executable, HERE, "--serve", "stdio"]


async def stats_of(client: trio_mcp.Client) -> dict[str, int]:
    result = await client.call_tool("stats", timeout=30)
    figures: dict[str, int] = result.structured_content  # type: ignore[assignment]
    return figures


async def http_session_worker(url: str, until: float, limit: int, n: Counters) -> None:
    while trio.current_time() < until and n.http_sessions < limit:
        try:
            async with trio_mcp.open_http_client(url, protocol_version="2025-11-25", request_timeout=30) as client:
                for i in range(5):
                    await client.call_tool("echo", {"text": f"s{i}"})
                    n.http_session_requests += 1
            n.http_sessions += 1
        except trio_mcp.TrioMcpError as exc:
            n.errors.append(f"http session: {exc!r}")


async def stateless_worker(url: str, until: float, limit: int, n: Counters) -> None:
    async with trio_mcp.open_http_client(url, protocol_version="2026-07-28", request_timeout=30) as client:
        while trio.current_time() < until and n.stateless_requests < limit:
            try:
                await client.call_tool("echo", {"text": "stateless"})
                n.stateless_requests += 1
            except trio_mcp.TrioMcpError as exc:
                n.errors.append(f"stateless: {exc!r}")


async def stdio_session_worker(until: float, limit: int, n: Counters) -> None:
    while trio.current_time() < until and n.stdio_sessions < limit:
        try:
            async with trio_mcp.open_stdio_client(STDIO_SERVER, stderr="capture", request_timeout=30) as client:
                for i in range(10):
                    await client.call_tool("echo", {"text": f"p{i}"})
                    n.stdio_requests += 1
            n.stdio_sessions += 1
        except trio_mcp.TrioMcpError as exc:
            n.errors.append(f"stdio session: {exc!r}")


async def stdio_long_worker(client: trio_mcp.Client, until: float, limit: int, n: Counters) -> None:
    sent = 0
    while trio.current_time() < until and sent < limit:
        try:
            await client.call_tool("echo", {"text": "long-lived"})
            n.stdio_requests += 1
            sent += 1
        except trio_mcp.TrioMcpError as exc:
            n.errors.append(f"stdio long-lived: {exc!r}")


async def run_load(
    url: str, long_stdio: trio_mcp.Client, seconds: float, args: argparse.Namespace, n: Counters
) -> None:
    until = trio.current_time() + seconds
    async with trio.open_nursery() as nursery:
        for _ in range(args.http_workers):
            nursery.start_soon(http_session_worker, url, until, args.max_http_sessions, n)
        for _ in range(args.stateless_workers):
            nursery.start_soon(stateless_worker, url, until, args.max_stateless_requests, n)
        for _ in range(args.stdio_workers):
            nursery.start_soon(stdio_session_worker, until, args.max_stdio_sessions, n)
        nursery.start_soon(stdio_long_worker, long_stdio, until, args.max_stdio_requests, n)


def judge(name: str, base: dict[str, int], final: dict[str, int]) -> list[str]:
    """The figures that did not come back: tasks and fds within a small slack, memory and objects within bounds."""
    failures = []
    if final["tasks"] > base["tasks"] + 2:
        failures.append(f"{name}: live tasks {base['tasks']} -> {final['tasks']}")
    if final["fds"] > base["fds"] + 3:
        failures.append(f"{name}: open fds {base['fds']} -> {final['fds']}")
    if final["rss_kib"] > base["rss_kib"] * 1.5 + 16 * 1024:
        failures.append(f"{name}: RSS {base['rss_kib']} KiB -> {final['rss_kib']} KiB")
    if final["objects"] > base["objects"] * 1.2 + 10_000:
        failures.append(f"{name}: gc objects {base['objects']} -> {final['objects']}")
    return failures


def row(name: str, label: str, f: dict[str, int]) -> str:
    return (
        f"| {name:<14} | {label:<8} | {f['rss_kib'] / 1024:7.1f} | {f['fds']:5} | {f['tasks']:6} | {f['objects']:10,} |"
    )


async def soak(args: argparse.Namespace) -> int:
    n = Counters()
    process = await trio.lowlevel.open_process([sys.executable, HERE, "--serve", "http"], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        line = b""
        with trio.fail_after(60):
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive_some(64)
                if not chunk:
                    raise RuntimeError("the HTTP soak server exited before printing its port")
                line += chunk
        url = f"http://127.0.0.1:{int(line)}/mcp"
        async with (
            trio_mcp.open_http_client(url, protocol_version="2026-07-28") as monitor,
            trio_mcp.open_stdio_client(STDIO_SERVER, stderr="capture") as long_stdio,
        ):
            warmup = max(5.0, args.seconds * 0.05)
            print(f"warm-up {warmup:.0f} s ...", flush=True)
            await run_load(url, long_stdio, warmup, args, Counters())
            await trio.sleep(args.settle)
            base = {
                "http server": await stats_of(monitor),
                "stdio server": await stats_of(long_stdio),
                "driver": process_figures(),
            }
            started = time.monotonic()
            print(f"load {args.seconds:.0f} s ...", flush=True)
            peak: dict[str, dict[str, int]] = {}

            async def sample() -> None:
                while True:
                    await trio.sleep(args.seconds / 6)
                    for name, figures in (
                        ("http server", await stats_of(monitor)),
                        ("stdio server", await stats_of(long_stdio)),
                    ):
                        old = peak.get(name, figures)
                        peak[name] = {k: max(v, old[k]) for k, v in figures.items()}
                    print(
                        f"  t+{time.monotonic() - started:5.0f} s: http sessions {n.http_sessions:,}, stateless "
                        f"{n.stateless_requests:,}, stdio sessions {n.stdio_sessions:,}, stdio requests "
                        f"{n.stdio_requests:,}, errors {len(n.errors)}",
                        flush=True,
                    )

            async with trio.open_nursery() as nursery:
                nursery.start_soon(sample)
                await run_load(url, long_stdio, args.seconds, args, n)
                nursery.cancel_scope.cancel()
            elapsed = time.monotonic() - started
            await trio.sleep(args.settle)
            final = {
                "http server": await stats_of(monitor),
                "stdio server": await stats_of(long_stdio),
                "driver": process_figures(),
            }
    finally:
        process.kill()
        await process.wait()

    total = n.http_session_requests + n.stateless_requests + n.stdio_requests
    print()
    print(
        f"load: {elapsed:.0f} s; HTTP sessions {n.http_sessions:,} ({n.http_session_requests:,} calls), stateless "
        f"requests {n.stateless_requests:,}, stdio sessions {n.stdio_sessions:,}, stdio calls {n.stdio_requests:,}; "
        f"{total:,} calls in all ({total / elapsed:,.0f}/s); errors {len(n.errors)}"
    )
    for error in n.errors[:5]:
        print(f"  error: {error}")
    print()
    print("| process        | when     | RSS MiB | fds   | tasks  | gc objects |")
    print("|----------------|----------|---------|-------|--------|------------|")
    failures: list[str] = []
    for name, before in base.items():
        print(row(name, "baseline", before))
        if name in peak:
            print(row(name, "peak", peak[name]))
        print(row(name, "final", final[name]))
        failures += judge(name, before, final[name])
    if n.errors:
        failures.append(f"{len(n.errors)} calls failed")
    print()
    print("FLAT: every figure came back after the load" if not failures else "NOT FLAT:\n  " + "\n  ".join(failures))
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=180.0, help="length of the load (default 180)")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds to wait after a load before sampling")
    parser.add_argument("--http-workers", type=int, default=4)
    parser.add_argument("--stateless-workers", type=int, default=4)
    parser.add_argument("--stdio-workers", type=int, default=2)
    parser.add_argument("--max-http-sessions", type=int, default=20_000)
    parser.add_argument("--max-stateless-requests", type=int, default=200_000)
    parser.add_argument("--max-stdio-sessions", type=int, default=2_000)
    parser.add_argument("--max-stdio-requests", type=int, default=200_000)
    parser.add_argument("--serve", choices=["stdio", "http"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve == "stdio":
        trio.run(make_server().serve_stdio)
    elif args.serve == "http":
        trio.run(serve_http)
    else:
        sys.exit(trio.run(soak, args))


if __name__ == "__main__":
    main()
