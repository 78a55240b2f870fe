"""A server built on the official MCP Python SDK (`mcp`, pinned in requirements-mcp.txt), served over HTTP.

Run it with the interop virtualenv's python (`.interop/mcp-venv/bin/python`), never with trio_mcp's own `.venv`:

    official_http_server.py [--marker FILE]

It binds 127.0.0.1 on a free port (a socket it opens itself and hands to uvicorn), prints ONE line,
``official_http_server: serving http://127.0.0.1:PORT`` (Streamable HTTP at ``/mcp``, the 2024-11-05 HTTP+SSE
transport at ``/sse`` with messages at ``/messages/``), and serves until SIGINT or SIGTERM.
tests/interop/test_interop_http.py points trio_mcp's HTTP client at it.

Tools:
  echo(text) -> str            the text unchanged
  add(a: int, b: int) -> int   the sum, as structured output (`{"result": a + b}`) and as text
  slow(seconds: float) -> str  sleeps, reporting progress every 0.1 s; appends `start`, then `cancelled` or
                               `done`, to the --marker file
  greet() -> str               asks the user's name (elicitation), answers "Hello, <name>!"
  ask_model(topic: str) -> str samples the client's model, returns the text it answered
Elicitation and sampling go through the SDK's resolvers (`Resolve(...)`): a standalone server-to-client request
on 2025-11-25, an InputRequiredResult round on 2026-07-28.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
import warnings
from typing import Annotated

import anyio
import uvicorn
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve, Sample
from mcp_types import CreateMessageResult, SamplingMessage, TextContent
from pydantic import BaseModel

warnings.simplefilter("ignore")  # deprecation notices for 2025-11-25 features are not this peer's business

server = MCPServer("official-http-server", version="1.0.0", instructions="HTTP interop peer for trio_mcp")
MARKER: str | None = None


def mark(event: str) -> None:
    if MARKER is not None:
        with open(MARKER, "a") as f:
            f.write(f"{event} {time.time()}\n")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Sleep for `seconds`, reporting progress every 0.1 s."""
    steps = max(1, round(seconds / 0.1))
    mark("start")
    try:
        for step in range(1, steps + 1):
            await anyio.sleep(seconds / steps)
            await ctx.report_progress(step, total=steps, message=f"step {step}/{steps}")
    except anyio.get_cancelled_exc_class():
        mark("cancelled")
        raise
    mark("done")
    return f"slept {seconds}"


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
def greet(name: Annotated[Name, Resolve(ask_name)]) -> str:
    """Ask the user's name, then greet them."""
    return f"Hello, {name.name}!"


def sample_topic(topic: str) -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=f"One sentence about {topic}"))],
        max_tokens=50,
    )


@server.tool()
def ask_model(topic: str, reply: Annotated[CreateMessageResult, Resolve(sample_topic)]) -> str:
    """Ask the client's model about a topic and return its answer."""
    content = reply.content
    return content.text if isinstance(content, TextContent) else f"<{content.type}>"


async def serve() -> None:
    app = server.streamable_http_app(host="127.0.0.1")  # DNS-rebinding protection for 127.0.0.1 / localhost
    app.router.routes.extend(server.sse_app(host="127.0.0.1").routes)  # /sse and /messages/ beside /mcp
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"official_http_server: serving http://127.0.0.1:{port}", flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    global MARKER
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--marker", help="file the `slow` tool appends start/cancelled/done to")
    MARKER = parser.parse_args().marker
    anyio.run(serve)
    sys.exit(0)


if __name__ == "__main__":
    main()
