"""Capacity: thousands of open HTTP sessions and of requests in flight on one trio_mcp process, and its memory
once they have ended, round after round.

    python benchmarks/capacity.py [--sessions 10000] [--in-flight 10000] [--rounds 2]

The server is this script (``--serve``) in a child process: trio_mcp over HTTP on 127.0.0.1 with its caps raised
to fit (``max_sessions``, ``max_connections``) and three tools: ``hold`` (waits until released), ``release`` and
``stats`` (its RSS from /proc after a collection, its live trio tasks, the calls it holds). Each round:

1. open ``--sessions`` sessions (2025-11-25: ``initialize`` + ``notifications/initialized``) over 16 keep-alive
   connections and leave them open;
2. open ``--in-flight`` more connections, each with one modern (2026-07-28) ``hold`` call, and wait until the
   server holds every one of them;
3. release them and read every answer, then ``DELETE`` every session.

It prints the server's figures after each step as JSON, with the memory per open session and per call in flight
(from the first round), and exits 1 unless every call was answered, every session deleted, the tasks went back
to where they were, and the memory at the last round's end is within 4 MiB of the first round's end (a leak of a
few hundred bytes per session or call would exceed it; what the first round leaves to Python's allocator is
reused by the next). Every wait is bounded (``--timeout``).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import loadgen  # noqa: E402

_HOLD_HEADERS = (
    (b"MCP-Protocol-Version", loadgen.MODERN_VERSION.encode()),
    (b"Mcp-Method", b"tools/call"),
    (b"Mcp-Name", b"hold"),
)


def serve(port: int, capacity: int) -> None:
    """The server under test (runs in the child process)."""
    import gc

    import trio

    from trio_mcp import Server
    from trio_mcp.transports.streamable_http import HttpLimits, HttpTransportOptions

    server = Server("capacity")
    state: dict[str, Any] = {"released": None, "holding": 0}

    @server.tool()
    async def hold() -> str:
        """Wait until ``release`` is called."""
        released = state["released"]
        state["holding"] += 1
        try:
            await released.wait()
        finally:
            state["holding"] -= 1
        return "released"

    @server.tool()
    async def release() -> str:
        """End every ``hold`` call; later ones wait for the next release."""
        state["released"].set()
        state["released"] = trio.Event()
        return "released"

    @server.tool()
    async def stats() -> dict[str, int]:
        """This process's RSS after a full collection, its live trio tasks and the calls it holds."""
        gc.collect()
        return {
            "rss_kib": loadgen.proc_rss_kib(os.getpid()),
            "tasks": trio.lowlevel.current_statistics().tasks_living,
            "holding": state["holding"],
        }

    options = HttpTransportOptions(
        max_sessions=capacity + 100, limits=HttpLimits(max_connections=capacity + 200, keep_alive_timeout=600)
    )

    async def main() -> None:
        state["released"] = trio.Event()
        await server.serve_http("127.0.0.1", port, options=options)

    trio.run(main)


def call(port: int, name: str, request_id: int = 1) -> Any:
    """One stateless call of ``name`` (no arguments) on a connection of its own; its result's structured content
    or text."""
    conn = loadgen.HttpConnection(port)
    try:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": {}, "_meta": loadgen.MODERN_META},
            },
            separators=(",", ":"),
        ).encode()
        headers = (*_HOLD_HEADERS[:2], (b"Mcp-Name", name.encode()))
        result = conn.roundtrip(body, headers, timeout=120).answer(request_id)["result"]
    finally:
        conn.close()
    return result.get("structuredContent") or result["content"][0]["text"]


def hold_many(port: int, count: int, timeout: float) -> tuple[dict[str, int], int]:
    """Put ``count`` ``hold`` calls in flight, each on its own connection; once the server holds them all, take
    its stats, release them and read every answer. Returns the stats and how many calls were answered."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "hold", "arguments": {}, "_meta": loadgen.MODERN_META},
        },
        separators=(",", ":"),
    ).encode()
    conns: list[loadgen.HttpConnection] = []
    selector = selectors.DefaultSelector()
    try:
        for _ in range(count):
            conn = loadgen.HttpConnection(port)
            conn.post(body, _HOLD_HEADERS)
            conns.append(conn)
        deadline = time.monotonic() + timeout
        while True:
            held = call(port, "stats")
            if held["holding"] >= count:
                break
            if time.monotonic() > deadline:
                raise loadgen.LoadError(f"only {held['holding']} of {count} calls in flight after {timeout:g} s")
            time.sleep(0.25)
        call(port, "release")
        for conn in conns:
            conn.sock.settimeout(None)
            selector.register(conn.sock, selectors.EVENT_READ, conn)
        answered = 0
        pending = len(conns)
        while pending:
            events = selector.select(max(0.0, deadline - time.monotonic()))
            if not events:
                raise loadgen.LoadError(f"{pending} held calls unanswered after the release")
            for key, _ in events:
                conn = key.data
                data = conn.sock.recv(1 << 16)
                response = conn.feed(data) if data else conn.eof()
                if response is None and data:
                    continue
                selector.unregister(conn.sock)
                pending -= 1
                if response is not None and response.answer(1).get("result", {}).get("content"):
                    answered += 1
        return held, answered
    finally:
        selector.close()
        for conn in conns:
            conn.close()


def delete_sessions(port: int, session_ids: list[str]) -> int:
    """``DELETE`` each session over one keep-alive connection; how many were deleted."""
    conn = loadgen.HttpConnection(port)
    deleted = 0
    try:
        for session_id in session_ids:
            head = (
                b"DELETE /mcp HTTP/1.1\r\nHost: "
                + conn.host
                + b"\r\nMcp-Session-Id: "
                + session_id.encode()
                + b"\r\nMCP-Protocol-Version: "
                + loadgen.SESSION_VERSION.encode()
                + b"\r\nContent-Length: 0\r\n\r\n"
            )
            conn.sock.sendall(head)
            if conn.receive(timeout=30).status == 200:
                deleted += 1
    finally:
        conn.close()
    return deleted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--in-flight", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0, help="bound on each step (seconds)")
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    capacity = max(args.sessions, args.in_flight)
    if args.serve is not None:
        serve(args.serve, capacity)
        return 0
    port = loadgen.free_port()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"capacity-server-{os.getpid()}.log"
    server = loadgen.Server(
        [sys.executable, str(Path(__file__).resolve()), "--serve", str(port), "--sessions", str(capacity)],
        stdio=False,
        log=log,
    )
    rounds: list[dict[str, Any]] = []
    ok = True
    try:
        loadgen.connect_when_ready(port, 60).close()
        baseline = call(port, "stats")
        for number in range(1, args.rounds + 1):
            started = time.monotonic()
            session_ids = loadgen.open_many_sessions(port, args.sessions, connections=16, timeout=args.timeout)
            with_sessions = call(port, "stats")
            in_flight, answered = hold_many(port, args.in_flight, args.timeout)
            deleted = delete_sessions(port, session_ids)
            ended = call(port, "stats")
            rounds.append(
                {
                    "round": number,
                    "seconds": round(time.monotonic() - started, 1),
                    "sessions_opened": len(session_ids),
                    "with_sessions": with_sessions,
                    "with_calls_in_flight": in_flight,
                    "calls_answered": answered,
                    "sessions_deleted": deleted,
                    "ended": ended,
                }
            )
            ok = ok and answered == args.in_flight and deleted == len(session_ids) == args.sessions
    except loadgen.LoadError as exc:
        print(f"capacity: {exc}\n{server.stderr_tail()}", file=sys.stderr)
        return 1
    finally:
        server.stop()
    first = rounds[0]
    growth = rounds[-1]["ended"]["rss_kib"] - first["ended"]["rss_kib"]
    flat = growth <= 4096 and rounds[-1]["ended"]["tasks"] <= baseline["tasks"] + 2
    summary = {
        # From the first round only: later rounds reuse the memory the first one left to the allocator.
        "kib_per_session": round((first["with_sessions"]["rss_kib"] - baseline["rss_kib"]) / args.sessions, 2),
        "kib_per_call_in_flight": round(
            (first["with_calls_in_flight"]["rss_kib"] - first["with_sessions"]["rss_kib"]) / args.in_flight, 2
        ),
        "end_growth_kib": growth,
        "flat": flat,
    }
    print(json.dumps({"baseline": baseline, "rounds": rounds, **summary}, indent=2))
    return 0 if ok and flat else 1


if __name__ == "__main__":
    sys.exit(main())
