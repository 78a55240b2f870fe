"""A handler that holds the event loop (a blocking call in an async tool) is named in a warning; one that yields
often is not, however long it runs in all; ``blocking_warning=None`` turns the warning off."""

from __future__ import annotations

import logging
import time

import pytest
import trio

from trio_mcp import Server
from trio_mcp.testing import open_in_memory

from waiting import HeldCalls  # isort: skip


def make_server(**options: float | None) -> Server:
    server = Server("stalling", **options)  # type: ignore[arg-type]

    @server.tool()
    async def stall() -> str:
        await trio.sleep(0)
        time.sleep(0.3)  # the blocking call
        return "stalled"

    @server.tool()
    async def busy() -> str:
        for _ in range(30):  # 0.3 s in all, never more than 10 ms without yielding
            time.sleep(0.01)
            await trio.sleep(0)
        return "busy"

    @server.tool(run_in_thread=False)
    def on_the_loop() -> str:
        time.sleep(0.3)
        return "held"

    @server.resource("slow://{key}")
    async def slow_read(key: str) -> str:
        time.sleep(0.3)
        return key

    return server


def warnings_in(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "trio_mcp.server"]


async def test_a_step_that_holds_the_event_loop_is_named_in_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with trio.fail_after(10):
        async with open_in_memory(make_server(blocking_warning=0.2)) as client:
            for name in ("stall", "busy", "on_the_loop"):
                assert not (await client.call_tool(name)).is_error
            await client.read_resource("slow://k")
    held = warnings_in(caplog)
    assert [message.split(" held the event loop for ")[0] for message in held] == [
        "tool 'stall'",
        "tool 'on_the_loop'",
        "resource 'slow://{key}'",
    ]
    assert all("blocking call in an async handler" in message for message in held)
    assert "Server(blocking_warning=None) turns this warning off" in held[0]


async def test_the_warning_can_be_turned_off(caplog: pytest.LogCaptureFixture) -> None:
    with trio.fail_after(10):
        async with open_in_memory(make_server(blocking_warning=None)) as client:
            assert (await client.call_tool("stall")).content[0].text == "stalled"  # type: ignore[union-attr]
    assert warnings_in(caplog) == []


async def test_a_watched_handler_is_cancelled_through_the_watch() -> None:
    server = Server("waiting", blocking_warning=0.2)
    held = HeldCalls(server)

    @server.tool()
    async def echo(text: str) -> str:
        return text

    with trio.fail_after(10):
        async with open_in_memory(server) as client:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "wait")
                await held.started.wait_for(1)
                nursery.cancel_scope.cancel()  # the client sends notifications/cancelled
            await held.cancelled.wait_for(1)
            assert (await client.call_tool("echo", {"text": "still here"})).content[0].text == "still here"  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", [0, -1, "1", True])
def test_a_bad_blocking_warning_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(ValueError, match="blocking_warning"):
        Server("bad", blocking_warning=bad)  # type: ignore[arg-type]
