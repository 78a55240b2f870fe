"""A trio_mcp server for the command-line tests: typed arguments, progress, a tool error, a resource, a prompt,
and a tool that records whether the client cancelled it."""

from __future__ import annotations

from typing import Literal

import trio

from trio_mcp import Context, Server, ToolError

server = Server(
    "cli-test-server", version="1.2.3", instructions="Tools for testing the command line.", peer_cancel_mode="signal"
)


@server.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
async def add(a: int, b: float, scale: Literal["one", "ten"] = "one", negate: bool = False) -> float:
    """Add two numbers, optionally scaled and negated."""
    total = (a + b) * (10 if scale == "ten" else 1)
    return -total if negate else total


@server.tool()
async def tags(names: list[str], weights: dict[str, int] | None = None) -> dict[str, int]:
    """Count each tag (array and object arguments)."""
    return {name: (weights or {}).get(name, 1) for name in names}


@server.tool()
async def steps(count: int, ctx: Context) -> str:
    """Report progress once per step."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, total=count, message=f"step {step}")
        await trio.sleep(0.01)
    return f"{count} steps"


@server.tool()
async def announce(text: str, ctx: Context) -> str:
    """Send the text as a warning log message, then return it."""
    await ctx.warning(text, logger="announcer")
    return text


@server.tool()
async def fail(reason: str) -> str:
    """Always fails, as a tool error (a ToolError: its message is for the model)."""
    raise ToolError(reason)


@server.tool()
async def wait_for_cancel(marker: str, ctx: Context) -> str:
    """Write `started` to the marker file, then wait for the client's notifications/cancelled and record it."""
    with open(marker, "a") as f:
        f.write("started\n")
    with trio.move_on_after(60):
        await ctx.cancel_requested.wait()
        with open(marker, "a") as f:
            f.write("cancel requested by the client\n")
    return "done"


@server.resource("memo://greeting", mime_type="text/plain")
def greeting() -> str:
    """A short greeting."""
    return "hello from a resource"


@server.prompt()
def review(language: str, style: str = "brief") -> str:
    """Ask for a code review."""
    return f"Review this {language} code, {style}."


if __name__ == "__main__":
    trio.run(server.serve_stdio)
