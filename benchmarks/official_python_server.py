"""The benchmark's echo server, written with the official MCP Python SDK (``mcp``, pinned in
tests/interop/requirements-mcp.txt; run it with ``.interop/mcp-venv/bin/python``, never with trio_mcp's .venv).

    python benchmarks/official_python_server.py --transport stdio
    python benchmarks/official_python_server.py --transport http [--host 127.0.0.1] [--port 8000]

Tools (the same as benchmarks/echo_server.py):
  echo(text: str) -> str                the text unchanged (plain text content, as the other peers send)
  sleep(seconds: float, marker: str)    appends "start <unix time>" to the file ``marker``, sleeps, then
                                        "cancelled <t>" (if its handler is cancelled) or "done <t>"

HTTP is the SDK's Streamable HTTP app (sessions, and 2026-07-28 stateless requests routed by their
``MCP-Protocol-Version`` header) under uvicorn, with the access log off and logging at WARNING, so the peer is
measured without per-request log lines.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import anyio
from mcp.server.mcpserver import MCPServer

warnings.simplefilter("ignore")

server = MCPServer("bench-echo-official", version="1.0.0", log_level="WARNING")


def append_marker(path: str, word: str) -> None:
    with open(path, "a", encoding="ascii") as f:
        f.write(f"{word} {time.time():.6f}\n")


@server.tool(structured_output=False)
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(structured_output=False)
async def sleep(seconds: float, marker: str) -> str:
    """Sleep for `seconds`, recording start, cancellation or completion in the file `marker`."""
    append_marker(marker, "start")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        append_marker(marker, "cancelled")
        raise
    append_marker(marker, "done")
    return f"slept {seconds}"


def serve_http(host: str, port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(host=host, max_sessions=5000)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, lifespan="on", backlog=1024
    )
    anyio.run(uvicorn.Server(config).serve)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    logging.getLogger("mcp").setLevel(logging.WARNING)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        serve_http(args.host, args.port)


if __name__ == "__main__":
    main()
