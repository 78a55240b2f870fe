"""A trio_mcp server used by the stdio tests; each tool exercises one behaviour over real pipes."""

from __future__ import annotations

import os
import signal
import sys
import time

import trio

from trio_mcp import Context, Server

server = Server("stdio-test-server", version="9.9.9", instructions="for tests")


@server.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
async def sleep(seconds: float, marker: str) -> str:
    """Sleep, appending `start`, then `cancelled` or `done`, to the marker file."""
    with open(marker, "a") as f:
        f.write(f"start {time.time()}\n")
    try:
        await trio.sleep(seconds)
    except trio.Cancelled:
        with open(marker, "a") as f:
            f.write(f"cancelled {time.time()}\n")
        raise
    with open(marker, "a") as f:
        f.write(f"done {time.time()}\n")
    return "slept"


@server.tool()
async def count(steps: int, ctx: Context) -> int:
    """Report progress once per step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, total=steps, message=f"step {step}")
        await trio.sleep(0.01)
    return steps


@server.tool()
async def roots_probe(timeout: float, ctx: Context) -> str:
    """Ask the client for its roots, giving up (and cancelling the request) after `timeout` seconds."""
    with trio.move_on_after(timeout):
        roots = await ctx.list_roots()
        return ",".join(root.uri for root in roots)
    return "gave up"


@server.tool()
def noisy() -> str:
    """Print to stdout, which must not reach the protocol stream."""
    print("this line must not corrupt the protocol stream")
    os.system("echo child process output too")
    return "quiet wire"


@server.tool()
def fail() -> str:
    """Raise, to become an isError result."""
    raise RuntimeError("the tool broke")


@server.tool()
def crash(status: int) -> str:
    """Write to stderr and exit at once, mid-call."""
    sys.stderr.write("fatal: simulated crash\n")
    sys.stderr.flush()
    os._exit(status)


@server.tool()
def kill_self() -> str:
    """SIGKILL this process."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


if __name__ == "__main__":
    if "--banner" in sys.argv:
        # Some servers print a banner before speaking MCP; clients must skip it.
        print("Welcome to the test server! (not JSON)", flush=True)
    trio.run(server.serve_stdio)
    if "--stubborn" in sys.argv:
        # Outlive stdin EOF and ignore SIGTERM, to prove the client escalates to SIGKILL.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)
