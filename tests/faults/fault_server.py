"""A server whose tools misbehave on purpose, for the fault suite. ``python fault_server.py`` serves stdio;
``--http`` serves HTTP on 127.0.0.1 and prints the port."""

from __future__ import annotations

import os
import sys
from typing import Any

import trio
import trio.lowlevel

from trio_mcp import Context, Server
from trio_mcp.types import TextContent

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup, ExceptionGroup

server = Server("fault-server", version="1.0.0")
running_naps = 0


class CustomError(Exception):
    """An application exception."""


class CustomBaseError(BaseException):
    """A BaseException that is not an Exception (what some libraries use for 'abort')."""


def _raise(kind: str) -> Any:
    if kind == "Exception":
        raise CustomError("application failure")
    if kind == "ExceptionGroup":
        raise ExceptionGroup("several", [ValueError("one"), KeyError("two")])
    if kind == "BaseException":
        raise CustomBaseError("abort")
    if kind == "BaseExceptionGroup":
        raise BaseExceptionGroup("several", [ValueError("one"), CustomBaseError("two")])
    if kind == "SystemExit":
        raise SystemExit(3)
    if kind == "GeneratorExit":
        raise GeneratorExit()
    if kind == "KeyboardInterrupt":
        raise KeyboardInterrupt()
    if kind == "RecursionError":
        raise RecursionError("maximum recursion depth exceeded")
    if kind == "MemoryError":
        raise MemoryError()
    raise AssertionError(f"unknown kind {kind}")


@server.tool()
async def explode(kind: str) -> str:
    """Raise an exception of the given kind."""
    await trio.lowlevel.checkpoint()
    _raise(kind)
    return "unreachable"


@server.tool()
async def escape_cancelled() -> str:
    """Catch a trio.Cancelled inside a scope of its own and let it escape outside that scope."""
    caught: BaseException | None = None
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            await trio.sleep(1)
        except trio.Cancelled as exc:
            caught = exc
    assert caught is not None
    raise caught


@server.tool()
async def own_deadline(ctx: Context) -> str:
    """Bound its own run time the trio way: a deadline on the request's scope."""
    ctx.cancel_scope.deadline = trio.current_time() + 0.1
    await trio.sleep(30)
    return "unreachable"


@server.tool()
async def own_cancel(ctx: Context) -> str:
    """Cancel its own request scope."""
    ctx.cancel_scope.cancel()
    await trio.sleep(30)
    return "unreachable"


@server.tool()
async def unencodable_meta() -> TextContent:
    """Return a result the JSON encoder cannot write (a set in _meta)."""
    return TextContent(text="x", meta={"values": {1, 2}})


@server.tool()
async def cyclic_meta() -> TextContent:
    """Return a result that contains itself (a list in _meta holding that list)."""
    loop: list[object] = []
    loop.append(loop)
    return TextContent(text="x", meta={"loop": loop})


@server.tool()
async def nap(seconds: float) -> str:
    """Sleep; counted in ``naps`` while running, so a test can see handlers end."""
    global running_naps
    running_naps += 1
    try:
        await trio.sleep(seconds)
    finally:
        running_naps -= 1
    return "rested"


@server.tool()
def naps() -> int:
    """How many ``nap`` handlers are running now."""
    return running_naps


@server.resource("fault://secret")
def secret() -> str:
    """A resource whose handler fails with internal details in its message."""
    raise RuntimeError("cannot open /srv/private/db.sqlite with token tok-123")


@server.prompt()
def secret_prompt() -> str:
    """A prompt whose handler fails with internal details in its message."""
    raise RuntimeError("cannot open /srv/private/db.sqlite with token tok-123")


@server.tool()
def pid() -> int:
    """This process's id."""
    return os.getpid()


async def serve_http() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(lambda task_status: server.serve_http("127.0.0.1", 0, task_status=task_status))
        print(port, flush=True)


if __name__ == "__main__":
    if "--http" in sys.argv:
        trio.run(serve_http)
    else:
        trio.run(server.serve_stdio)
