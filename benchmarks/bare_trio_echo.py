"""A reference point, not MCP: the cheapest JSON-RPC echo trio can serve, for the same load generator.

    python benchmarks/bare_trio_echo.py --transport stdio
    python benchmarks/bare_trio_echo.py --transport http [--host 127.0.0.1] [--port 8000]

It parses each message with ``json.loads``, answers ``initialize`` with a fixed result and ``tools/call`` with
the ``text`` argument as text content, and serialises with ``json.dumps`` -- no validation, no sessions, no
cancellation, no schema. Over HTTP (h11, keep-alive, JSON bodies) ``initialize`` hands out a fixed
``Mcp-Session-Id`` and notifications get 202. The distance between this and benchmarks/echo_server.py is what
trio_mcp itself costs on top of trio, the json module and h11.

``--profile PATH`` runs it under cProfile as ``echo_server.py --profile`` does (benchmarks/profiling.py).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable
from typing import Any

import h11
import trio

INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "bare-trio-echo", "version": "1.0.0"},
}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    if "id" not in message:
        return None
    method = message.get("method")
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": message["id"], "result": INITIALIZE}
    if method == "tools/call":
        text = message["params"]["arguments"]["text"]
        return {"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": text}]}}
    return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}


async def serve_stdio() -> None:
    stdin, stdout = trio.lowlevel.FdStream(0), trio.lowlevel.FdStream(1)
    pending = b""
    while True:
        chunk = await stdin.receive_some(1 << 16)
        if not chunk:
            return
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


async def handle_http(stream: trio.SocketStream) -> None:
    conn = h11.Connection(h11.SERVER)
    body = bytearray()
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(1 << 16))
                continue
            if isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return
            if isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                message = json.loads(bytes(body))
                body.clear()
                reply = answer(message)
                if reply is None:
                    headers = [("content-length", "0")]
                    data = conn.send(h11.Response(status_code=202, headers=headers)) + conn.send(h11.EndOfMessage())
                else:
                    payload = json.dumps(reply, separators=(",", ":")).encode()
                    headers = [("content-type", "application/json"), ("content-length", str(len(payload)))]
                    if message.get("method") == "initialize":
                        headers.append(("mcp-session-id", "bare"))
                    data = (
                        conn.send(h11.Response(status_code=200, headers=headers))
                        + conn.send(h11.Data(payload))
                        + conn.send(h11.EndOfMessage())
                    )
                await stream.send_all(data)
                conn.start_next_cycle()
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
        return


async def serve_http(host: str, port: int, stop_on_sigterm: bool = False) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: trio.serve_tcp(handle_http, port, host=host))
        if stop_on_sigterm:  # only when profiling: end cleanly so the profile is written
            from profiling import end_on_signal

            await end_on_signal(nursery.cancel_scope)


def run(fn: Callable[..., Awaitable[Any]], *args: Any, profile: str | None) -> None:
    if profile is None:
        trio.run(fn, *args)
        return
    from profiling import run as run_profiled  # here, not at the top: this echo's cold start is a reference figure

    run_profiled(fn, *args, profile=profile)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--profile", metavar="PATH", help="run under cProfile; write the stats to PATH at exit")
    args = parser.parse_args()
    try:
        if args.transport == "stdio":
            run(serve_stdio, profile=args.profile)
        else:
            run(serve_http, args.host, args.port, args.profile is not None, profile=args.profile)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
