"""A server whose handlers fail in every way a handler can; run it over stdio (no argument) or import it."""

from __future__ import annotations

import logging

import trio

from trio_mcp import Context, McpLogHandler, Server, ToolError

server = Server("faulty", version="1.0.0")

app_logger = logging.getLogger("faulty.app")
app_logger.setLevel(logging.DEBUG)
app_logger.addHandler(McpLogHandler())
app_logger.propagate = False


class Custom(BaseException):
    """A BaseException that is not an Exception."""


@server.tool()
async def echo(text: str) -> str:
    return text


@server.tool()
async def slow(seconds: float) -> str:
    await trio.sleep(seconds)
    return "slow done"


@server.tool()
async def raise_custom() -> str:
    raise Custom("custom base exception")


@server.tool()
async def raise_system_exit() -> str:
    raise SystemExit(3)


@server.tool()
async def raise_generator_exit() -> str:
    raise GeneratorExit


@server.tool()
async def stray_cancelled() -> str:
    """Catch a Cancelled inside a scope of its own and let it escape outside that scope."""
    caught: BaseException | None = None
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            await trio.sleep(10)
        except trio.Cancelled as exc:
            caught = exc
    assert caught is not None
    raise caught


@server.tool()
async def own_deadline(ctx: Context) -> str:
    ctx.cancel_scope.deadline = trio.current_time() + 0.1
    await trio.sleep(30)
    return "never"


@server.tool()
async def own_cancel(ctx: Context) -> str:
    ctx.cancel_scope.cancel()
    await trio.sleep(30)
    return "never"


@server.tool()
async def leak_secret() -> str:
    raise RuntimeError("db password=hunter2")


@server.tool()
async def deliberate() -> str:
    raise ToolError("the quota is exhausted; try again tomorrow")


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
    from trio_mcp import McpError

    try:
        answer = await ctx.sample("hi", max_tokens=5)
    except McpError as exc:
        return f"sampling failed: {exc.code} {exc.message}"
    return f"sampling answered: {answer.content}"


@server.completion()
async def complete(ref: object, argument: object, context: object) -> list[str]:
    raise Custom("completion handler broke")


@server.resource("faulty://secret")
async def secret_resource() -> str:
    raise RuntimeError("db password=hunter2")


@server.resource("faulty://custom")
async def custom_resource() -> str:
    raise Custom("custom base exception")


@server.prompt()
async def greet(name: str) -> str:
    return f"Hello {name}"


@server.prompt()
async def broken_prompt() -> str:
    raise RuntimeError("db password=hunter2")


@server.prompt()
async def slow_prompt(ctx: Context) -> str:
    ctx.cancel_scope.deadline = trio.current_time() + 0.1
    await trio.sleep(30)
    return "never"


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)  # the operator sees failures with their tracebacks on stderr
    trio.run(server.serve_stdio)
