"""Deadlines that travel (the io.github.trio-mcp/deadline extension): the caller's deadline reaches the handler
on every transport and both eras, a spent budget is refused unserved, a handler is stopped when it runs out, and
the budget passes on to sampling, to mounted servers and through proxies."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp import Context, McpError
from trio_mcp.errors import DEADLINE_EXCEEDED, INVALID_PARAMS
from trio_mcp.proxy import open_proxy
from trio_mcp.testing import open_in_memory
from trio_mcp.types import META_DEADLINE, CreateMessageRequestParams, CreateMessageResult, TextContent

from paths import TESTS  # isort: skip

sys.path.insert(0, str(TESTS / "servers"))
import deadline_server  # noqa: E402
from transport_helpers import connect  # noqa: E402

SERVER_SCRIPT = TESTS / "servers" / "deadline_server.py"
TRANSPORTS = ["memory", "stdio", "http-session", "http-stateless", "websocket"]
KEY = META_DEADLINE


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def call(name: str, budget_ms: Any) -> dict[str, Any]:
    """``tools/call`` params carrying a budget as a peer would write it."""
    return {"name": name, "arguments": {}, "_meta": {KEY: {"remainingMs": budget_ms}}}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_callers_deadline_reaches_the_handler_on_every_transport(transport: str) -> None:
    async with connect(deadline_server.make_server(), transport, stdio_script=SERVER_SCRIPT) as client:
        assert text_of(await client.call_tool("budget", {})) == "none"  # no deadline (timeout= is not one)
        with pytest.raises(McpError) as malformed:
            await client.request("tools/call", call("count", "soon"))
        assert malformed.value.code == INVALID_PARAMS and KEY in malformed.value.message
        with trio.fail_after(30):
            with trio.move_on_after(20):
                left = float(text_of(await client.call_tool("budget", {})))
            assert 15 < left < 20

            # A spent budget is answered at once, the handler not run.
            with pytest.raises(McpError) as spent:
                await client.request("tools/call", call("count", 0))
            assert spent.value.code == DEADLINE_EXCEEDED
            assert (
                spent.value.message
                == "Deadline exceeded: the caller's deadline for tools/call passed before it arrived"
            )
            assert (await client.call_tool("count", {})).structured_content == {"result": 1}

            # A handler still running when the budget runs out is stopped, and the request answered so.
            start = trio.current_time()
            with pytest.raises(McpError) as late:
                await client.request("tools/call", call("slow", 50))
            assert late.value.code == DEADLINE_EXCEEDED and "while it was served" in late.value.message
            assert trio.current_time() - start < 9  # well before the ten seconds the tool takes
            assert (await client.call_tool("count", {})).structured_content == {"result": 2}


async def test_the_caller_is_cancelled_at_its_own_deadline_and_sends_no_cancel(
    autojump_clock: trio.abc.Clock,
) -> None:
    server = deadline_server.make_server()
    seen: dict[str, Any] = {}

    @server.tool()
    async def watched(ctx: Context) -> str:
        """Record when the handler ends, and whether the client asked to cancel."""
        seen["ctx"] = ctx
        try:
            await trio.sleep(10)
        finally:
            seen["ended"] = trio.current_time()
        return ""

    async with open_in_memory(server) as client:
        start = trio.current_time()
        with trio.move_on_after(1) as scope:
            await client.call_tool("watched", {})
        assert scope.cancelled_caught and trio.current_time() - start == pytest.approx(1)
        assert seen["ended"] - start == pytest.approx(1 - 0.002)  # the margin kept for the answer to travel
        await trio.sleep(1)
        assert not seen["ctx"].cancel_requested.is_set()  # answered in time: nothing to cancel

        with pytest.raises(trio.TooSlowError):  # fail_after raises as it always did
            with trio.fail_after(0.5):
                await client.call_tool("watched", {})


async def test_the_budget_passes_on_to_sampling_and_mounted_servers(autojump_clock: trio.abc.Clock) -> None:
    left_in_sampling: list[float] = []

    async def sampling(params: CreateMessageRequestParams) -> CreateMessageResult:
        left_in_sampling.append(trio.current_effective_deadline() - trio.current_time())
        return CreateMessageResult(role="assistant", content=TextContent(text="ok"), model="m")

    server = trio_mcp.Server("parent")
    child = trio_mcp.Server("child")

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Ask the client's model."""
        await ctx.sample("hi", max_tokens=5)
        return ""

    @child.tool()
    async def budget(ctx: Context) -> float:
        """The mounted handler's budget."""
        return ctx.time_remaining or -1.0

    server.mount("child", child)
    async with open_in_memory(server, sampling=sampling, protocol_version="2025-11-25") as client:
        with trio.move_on_after(5):
            await client.call_tool("ask", {})
            mounted = (await client.call_tool("child_budget", {})).structured_content
        assert left_in_sampling == [pytest.approx(5 - 2 * 0.002)]  # two hops, a margin each
        assert mounted == {"result": pytest.approx(5 - 0.002)}


async def test_the_budget_crosses_a_chain_of_proxies(nursery: trio.Nursery) -> None:
    server = deadline_server.make_server()
    ended: list[float] = []
    stopped = trio.Event()
    budgets: list[float | None] = []

    @server.tool()
    async def watched(ctx: Context) -> str:
        """Take ten seconds, noting the budget and when stopped."""
        budgets.append(ctx.time_remaining)
        try:
            await trio.sleep(10)
        finally:
            ended.append(trio.current_time())
            stopped.set()
        return ""

    port = await nursery.start(lambda task_status: server.serve_http("127.0.0.1", 0, task_status=task_status))
    url = f"http://127.0.0.1:{port}/mcp"
    with trio.fail_after(30):
        async with open_proxy(url=url) as first:
            first_port = await nursery.start(
                lambda task_status: first.serve_http("127.0.0.1", 0, task_status=task_status)
            )
            async with (
                open_proxy(url=f"http://127.0.0.1:{first_port}/mcp") as second,
                open_in_memory(second) as client,
            ):
                start = trio.current_time()
                with trio.move_on_after(1) as scope:
                    await client.call_tool("watched", {})
                assert scope.cancelled_caught
                await stopped.wait()  # three hops down, the handler was given less than a second, less three margins
                (budget,) = budgets
                assert budget is not None and 0.8 < budget < 1 - 3 * 0.002
                assert ended[0] - start < 2


async def test_the_extension_is_declared_on_2026_07_28() -> None:
    async with open_in_memory(deadline_server.make_server(), protocol_version="2026-07-28") as client:
        assert client.server_capabilities.extensions == {KEY: {"marginMs": 2.0}}
