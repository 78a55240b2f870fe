"""What one echo call costs the server in Python bytecodes and function calls: counts, not times.

    .venv/bin/python benchmarks/counts.py                 # 64 requests a read, and 2 (what loadgen's clients send)
    .venv/bin/python benchmarks/counts.py --per-read 64 --top 30   # and the functions that execute the most
    .venv/bin/python benchmarks/counts.py --kind http,stateless    # over HTTP: sessions, then stateless

On a shared machine timings of the same code move by 10 % or more from run to run; the number of bytecodes and
calls the interpreter executes does not. Both servers run in this process over the same input: trio_mcp's echo
server (``echo_server.py``) through ``serve_connection`` on a ``StdioMessageStream``, and the bare echo's stdio
loop, each reading requests from memory in reads of ``--per-read`` lines and writing to the null device. Only the
calls are counted (from the first read after the handshake to the end of input). The work done in C (the JSON
scanner and encoder, the system calls) is not counted: a count says how much Python a call runs, to compare two
versions of the code, not what it costs (``loadgen.py`` measures that).

Over HTTP (``--kind http`` for sessions, ``http-json`` for sessions answering with a JSON body (``json_response``),
``stateless`` for 2026-07-28 requests) each server listens on 127.0.0.1 in this process and a client in another thread (``loadgen.HttpConnection``, one keep-alive connection) makes the
calls one at a time; only the server's thread is counted, from the first call after a warm-up to the last.

``--kind cancel-stdio,cancel-http,cancel-stateless`` counts the paths ``loadgen.py`` times as cancellation latency:
a ``notifications/cancelled`` written to trio_mcp's stdin pipe, POSTed to an HTTP session, or a stateless call's
connection closed, while the ``sleep`` tool waits on an idle server, counted from there to the handler's
``Cancelled`` with trio's scheduler passes (each an I/O wait; a pass more is a whole round of the other tasks
before the handler runs).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import trio
import trio.testing

sys.path.insert(0, str(Path(__file__).resolve().parent))

INITIALIZE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},'
    b'"clientInfo":{"name":"counts","version":"1"}}}\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
)


def echo_line(request_id: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, benchmark"}}}\n'
        % request_id
    )


class Counter:
    """Counts every bytecode and call of the frames started while it is on (``sys.settrace`` with opcode events),
    and trio's scheduler passes (its I/O manager's ``get_events``, once a pass)."""

    def __init__(self) -> None:
        self.bytecodes = 0
        self.calls = 0
        self.passes = 0
        self.by_code: collections.Counter[CodeType] = collections.Counter()

    def trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call":
            self.calls += 1
            if frame.f_code.co_name == "get_events":
                self.passes += 1
            frame.f_trace_opcodes = True
        elif event == "opcode":
            self.bytecodes += 1
            self.by_code[frame.f_code] += 1
        return self.trace


class Requests(trio.abc.ReceiveStream):
    """The handshake, then ``reads`` reads of ``per_read`` echo requests each, then end of input; counting from the
    first read of requests to the end."""

    def __init__(self, reads: int, per_read: int, counter: Counter) -> None:
        self.chunks = [INITIALIZE] + [
            b"".join(echo_line(1 + read * per_read + i) for i in range(per_read)) for read in range(reads)
        ]
        self.next = 0
        self.counter = counter

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        await trio.lowlevel.checkpoint()
        if self.next == 1:
            sys.settrace(self.counter.trace)
        if self.next == len(self.chunks):
            sys.settrace(None)
            return b""
        self.next += 1
        return self.chunks[self.next - 1]

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


def null_output() -> trio.lowlevel.FdStream:
    return trio.lowlevel.FdStream(os.open(os.devnull, os.O_WRONLY))


async def serve_trio_mcp(requests: Requests) -> None:
    from echo_server import server

    from trio_mcp.errors import ConnectionClosed
    from trio_mcp.transports.stdio import StdioMessageStream

    try:
        await server.serve_connection(StdioMessageStream(requests, null_output()))
    except ConnectionClosed:
        pass


async def serve_bare(requests: Requests) -> None:
    """The bare echo's stdio loop (``bare_trio_echo.serve_stdio``) on these streams."""
    from bare_trio_echo import answer

    stdout = null_output()
    pending = b""
    while chunk := await requests.receive_some(1 << 16):
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        out = []
        for line in lines:
            if line.strip():
                reply = answer(json.loads(line))
                if reply is not None:
                    out.append(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        if out:
            await stdout.send_all(b"".join(out))


def count(server: str, reads: int, per_read: int) -> Counter:
    counter = Counter()
    trio.run(serve_trio_mcp if server == "trio_mcp" else serve_bare, Requests(reads, per_read, counter))
    return counter


def count_http(server: str, kind: str, calls: int) -> Counter:
    """``calls`` echo calls over one keep-alive connection (``kind``: "http" for a session, "http-json" for one
    answering with JSON bodies, "stateless")."""
    import loadgen

    from trio_mcp.transports.streamable_http import HttpTransportOptions

    counter = Counter()
    stateless = kind == "stateless"
    headers = loadgen.MODERN_ECHO_HEADERS if stateless else ()

    def client(port: int, token: trio.lowlevel.TrioToken) -> None:
        connection = loadgen.HttpConnection(port)
        if not stateless:
            connection.open_session()
        for number in range(-20, calls):  # 20 to warm up, then counted
            if number == 0:
                trio.from_thread.run_sync(sys.settrace, counter.trace, trio_token=token)
            reply = connection.roundtrip(loadgen.echo_request(100 + number, modern=stateless), headers)
            if reply.status != 200:
                raise RuntimeError(f"an echo call got HTTP {reply.status}")
        trio.from_thread.run_sync(sys.settrace, None, trio_token=token)
        connection.close()

    async def serve_and_call() -> None:
        async with trio.open_nursery() as nursery:
            if server == "trio_mcp":
                from echo_server import server as mcp_server

                options = HttpTransportOptions(json_response=kind == "http-json")
                port = await nursery.start(functools.partial(mcp_server.serve_http, "127.0.0.1", 0, options=options))
            else:
                from bare_trio_echo import handle_http

                listeners = await nursery.start(functools.partial(trio.serve_tcp, handle_http, 0, host="127.0.0.1"))
                port = listeners[0].socket.getsockname()[1]
            await trio.to_thread.run_sync(client, port, trio.lowlevel.current_trio_token())
            nursery.cancel_scope.cancel()

    trio.run(serve_and_call)
    return counter


@contextlib.contextmanager
def marks_seen(seen: Callable[[str], None]) -> Iterator[None]:
    """While in it, the ``sleep`` tool's marks (``start``, ``cancelled``) go to ``seen`` instead of a file, and
    tracing stops at ``cancelled``."""
    import echo_server

    def append_marker(path: str, word: str) -> None:
        if word == "cancelled":
            sys.settrace(None)
        seen(word)

    mark, echo_server.append_marker = echo_server.append_marker, append_marker
    try:
        yield
    finally:
        echo_server.append_marker = mark


SLEEP = {"name": "sleep", "arguments": {"seconds": 60, "marker": "counted"}}


def count_cancel_stdio(samples: int) -> Counter:
    """``samples`` sleep calls over a pipe, each cancelled by notifications/cancelled once the server is idle."""
    from echo_server import server

    from trio_mcp.errors import ConnectionClosed
    from trio_mcp.transports.stdio import StdioMessageStream

    counter = Counter()
    cancelled = [trio.Event()]

    def seen(word: str) -> None:
        if word == "cancelled":
            cancelled[0].set()

    async def serve_until_closed(stream: StdioMessageStream) -> None:
        try:
            await server.serve_connection(stream)
        except ConnectionClosed:
            pass

    async def serve_and_cancel() -> None:
        read, write = os.pipe()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_until_closed, StdioMessageStream(trio.lowlevel.FdStream(read), null_output()))
            os.write(write, INITIALIZE + echo_line(1))
            for request_id in range(2, 2 + samples):
                os.write(
                    write, json_line({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": SLEEP})
                )
                await trio.testing.wait_all_tasks_blocked(0.01)  # the handler waits, the server is idle
                cancelled[0] = trio.Event()
                cancel = {"requestId": request_id, "reason": "counted"}
                sys.settrace(counter.trace)
                os.write(write, json_line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}))
                await cancelled[0].wait()
            os.close(write)

    with marks_seen(seen):
        trio.run(serve_and_cancel)
    return counter


def count_cancel_http(kind: str, samples: int) -> Counter:
    """``samples`` sleep calls over HTTP, each cancelled once the server is idle: by a notifications/cancelled POST
    on a second connection of its session (``cancel-http``), or by closing a stateless call's connection
    (``cancel-stateless``). Only the server's thread is counted."""
    import loadgen
    from echo_server import server

    counter = Counter()
    marks = {"start": threading.Event(), "cancelled": threading.Event()}
    headers = ((b"MCP-Protocol-Version", loadgen.MODERN_VERSION.encode()), (b"Mcp-Method", b"tools/call"))
    headers += ((b"Mcp-Name", b"sleep"),)

    def client(port: int, token: trio.lowlevel.TrioToken) -> None:
        for request_id in range(1, 1 + samples):
            for mark in marks.values():
                mark.clear()
            connection, other = loadgen.HttpConnection(port), None
            if kind == "cancel-http":
                connection.open_session()
                connection.post(loadgen.request_line(request_id, "tools/call", SLEEP))
                other = loadgen.HttpConnection(port)
                other.session_id = connection.session_id
            else:
                call = {**SLEEP, "_meta": loadgen.MODERN_META}
                connection.post(loadgen.request_line(request_id, "tools/call", call), headers)
            if not marks["start"].wait(10):
                raise RuntimeError("the sleep tool never started")
            trio.from_thread.run(trio.testing.wait_all_tasks_blocked, 0.01, trio_token=token)
            trio.from_thread.run_sync(sys.settrace, counter.trace, trio_token=token)
            if other is not None:
                cancel = {"requestId": request_id, "reason": "counted"}
                other.post(loadgen.notification_line("notifications/cancelled", cancel))
            else:
                connection.close()
            if not marks["cancelled"].wait(10):
                raise RuntimeError(f"the sleep call was not cancelled ({kind})")
            if other is not None:
                other.receive()
                other.close()
            connection.abort()

    async def serve_and_cancel() -> None:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(functools.partial(server.serve_http, "127.0.0.1", 0))
            await trio.to_thread.run_sync(client, port, trio.lowlevel.current_trio_token())
            nursery.cancel_scope.cancel()

    with marks_seen(lambda word: marks[word].set()):
        trio.run(serve_and_cancel)
    return counter


def json_line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def report(server: str, label: str, counter: Counter, calls: int, top: int) -> None:
    print(f"{server:<10}{label:>9}{counter.bytecodes / calls:>11.1f}{counter.calls / calls:>8.1f}")
    if server == "trio_mcp":
        report_top(counter, calls, top)


def report_top(counter: Counter, calls: int, top: int) -> None:
    for code, ran in counter.by_code.most_common(top):
        where = code.co_filename.split("site-packages/")[-1].split("/trio_mcp/")[-1]
        print(f"    {ran / calls:8.1f}  {where}:{code.co_firstlineno} {code.co_qualname}")


#: The cancellations ``--kind`` counts, as loadgen.py times them.
CANCELS = {
    "cancel-stdio": "a stdio notifications/cancelled to the handler's Cancelled",
    "cancel-http": "an HTTP session's notifications/cancelled POST to the handler's Cancelled",
    "cancel-stateless": "closing a stateless call's connection to the handler's Cancelled",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-read", type=int, action="append", help="requests a read (default: 64 and 2)")
    parser.add_argument(
        "--calls",
        type=int,
        default=3200,
        help="echo calls counted per figure (default 3200; at most 200 cancellations)",
    )
    parser.add_argument("--top", type=int, default=0, help="also list trio_mcp's N functions that run the most")
    parser.add_argument(
        "--kind",
        default="stdio",
        help="stdio, http (sessions), http-json (sessions with JSON bodies), stateless, cancel-stdio, cancel-http or "
        "cancel-stateless; several with commas",
    )
    args = parser.parse_args()
    sizes = args.per_read or [64, 2]
    kinds = args.kind.split(",")
    if args.calls < 1 or any(size < 1 for size in sizes):
        parser.error("--calls and --per-read must be at least 1")
    if not set(kinds) <= {"stdio", "http", "http-json", "stateless", *CANCELS}:
        parser.error(f"--kind takes stdio, http, http-json, stateless, {', '.join(CANCELS)}")
    for kind in kinds:
        if kind in CANCELS:
            samples = min(args.calls, 200)
            counter = count_cancel_stdio(samples) if kind == "cancel-stdio" else count_cancel_http(kind, samples)
            per = [counter.bytecodes / samples, counter.calls / samples, counter.passes / samples]
            print(f"{'server':<10}{'kind':>17}{'bytecodes':>11}{'calls':>8}{'passes':>8}   ({CANCELS[kind]})")
            print(f"{'trio_mcp':<10}{kind:>17}{per[0]:>11.1f}{per[1]:>8.1f}{per[2]:>8.1f}")
            report_top(counter, samples, args.top)
            continue
        if kind != "stdio":
            print(f"{'server':<10}{'kind':>9}{'bytecodes':>11}{'calls':>8}   (an HTTP echo call, counted in-process)")
            for server in ("bare_trio", "trio_mcp"):
                report(server, kind, count_http(server, kind, args.calls), args.calls, args.top)
            continue
        print(f"{'server':<10}{'per read':>9}{'bytecodes':>11}{'calls':>8}   (a stdio echo call, counted in-process)")
        for size in sizes:
            reads = max(1, args.calls // size)
            for server in ("bare_trio", "trio_mcp"):
                report(server, str(size), count(server, reads, size), reads * size, args.top)


if __name__ == "__main__":
    main()
