"""A server whose handlers fail in every way a handler can, for the tests of failures. Import it, or run it:
``python fault_server.py`` serves stdio (handler failures logged with their tracebacks on stderr, as an operator
sees them); ``--http`` serves HTTP on 127.0.0.1 and prints the port.

One tool takes the failure as a parameter (``explode``, by kind); the others fail in ways an exception cannot
name (a stray ``Cancelled``, a deadline of its own, a result the encoder refuses). Every internal failure carries
``SECRET`` in its message, so a test can check what reaches the peer and what stays in the log."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import trio
import trio.lowlevel

from trio_mcp import Context, McpError, McpLogHandler, Server, ToolError
from trio_mcp.types import TextContent

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup, ExceptionGroup

#: What a failing handler's message holds that a peer must never see (a path and a password).
SECRET = "cannot open /srv/private/db.sqlite with password=hunter2"

server = Server("fault-server", version="1.0.0")
running_naps = 0

app_logger = logging.getLogger("fault_server.app")
app_logger.setLevel(logging.DEBUG)
app_logger.addHandler(McpLogHandler())
app_logger.propagate = False


class CustomError(Exception):
    """An application exception."""


class CustomBaseError(BaseException):
    """A BaseException that is not an Exception (what some libraries use for 'abort')."""


#: Every kind ``explode`` raises, by the name a test passes.
KINDS: dict[str, Any] = {
    "Exception": lambda: CustomError(SECRET),
    "ExceptionGroup": lambda: ExceptionGroup("several", [ValueError("one"), KeyError("two")]),
    "BaseException": lambda: CustomBaseError("abort"),
    "BaseExceptionGroup": lambda: BaseExceptionGroup("several", [ValueError("one"), CustomBaseError("two")]),
    "SystemExit": lambda: SystemExit(3),
    "GeneratorExit": GeneratorExit,
    "KeyboardInterrupt": KeyboardInterrupt,
    "RecursionError": lambda: RecursionError("maximum recursion depth exceeded"),
    "MemoryError": MemoryError,
}


@server.tool()
async def explode(kind: str) -> str:
    """Raise an exception of the given kind (a key of ``KINDS``)."""
    await trio.lowlevel.checkpoint()
    raise KINDS[kind]()


@server.tool()
async def deliberate() -> str:
    """Fail on purpose, with a message meant for the model."""
    raise ToolError("the quota is exhausted; try again tomorrow")


@server.tool()
async def escape_cancelled() -> str:
    """Catch a trio.Cancelled inside a scope of its own and let it escape outside that scope."""
    caught: BaseException | None = None
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            await trio.sleep_forever()
        except trio.Cancelled as exc:
            caught = exc
    assert caught is not None
    raise caught


@server.tool()
async def own_deadline(ctx: Context) -> str:
    """Bound its own run time the trio way: a deadline on the request's scope."""
    ctx.cancel_scope.deadline = trio.current_time() + 0.1
    await trio.sleep_forever()


@server.tool()
async def own_cancel(ctx: Context) -> str:
    """Cancel its own request scope."""
    ctx.cancel_scope.cancel()
    await trio.sleep_forever()


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
async def echo(text: str) -> str:
    return text


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


@server.tool()
def pid() -> int:
    """This process's id."""
    return os.getpid()


@server.tool()
async def log_then_return(n: int) -> str:
    for i in range(n):
        app_logger.warning("step %d", i)
    return "logged"


@server.tool()
def log_from_thread(n: int) -> str:
    for i in range(n):
        app_logger.warning("thread step %d", i)
    return "logged"


@server.tool()
async def ask_model(ctx: Context) -> str:
    """Ask the client's model; report what came back (or how it failed) as text."""
    try:
        answer = await ctx.sample("hi", max_tokens=5)
    except McpError as exc:
        return f"sampling failed: {exc.code} {exc.message}"
    return f"sampling answered: {answer.content}"


@server.completion()
async def complete(ref: object, argument: object, context: object) -> list[str]:
    raise CustomBaseError("completion handler broke")


@server.resource("fault://secret")
def secret() -> str:
    """A resource whose handler fails with internal details in its message."""
    raise RuntimeError(SECRET)


@server.resource("fault://custom")
async def custom_resource() -> str:
    raise CustomBaseError("abort")


@server.prompt()
async def greet(name: str) -> str:
    return f"Hello {name}"


@server.prompt()
def secret_prompt() -> str:
    """A prompt whose handler fails with internal details in its message."""
    raise RuntimeError(SECRET)


@server.prompt()
async def slow_prompt(ctx: Context) -> str:
    ctx.cancel_scope.deadline = trio.current_time() + 0.1
    await trio.sleep_forever()


async def serve_http() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(lambda task_status: server.serve_http("127.0.0.1", 0, task_status=task_status))
        print(port, flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)  # the operator sees failures with their tracebacks on stderr
    trio.run(serve_http if "--http" in sys.argv else server.serve_stdio)
