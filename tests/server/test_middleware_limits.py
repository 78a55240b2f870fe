"""Rate and concurrency limits per principal and per tool (callers told apart by their bearer tokens over HTTP),
refills and TTLs on trio's clock, truncation of oversized tool results, and the options refused at the call."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp import McpError
from trio_mcp.errors import RATE_LIMITED, SERVER_BUSY
from trio_mcp.middleware import ConcurrencyLimit, ErrorShaping, RateLimit, ResponseCache, SizeLimit
from trio_mcp.testing import open_in_memory
from trio_mcp.transports.streamable_http import HttpTransportOptions

from waiting import Arrivals  # isort: skip

TOKENS = {"alice-token": "alice", "bob-token": "bob"}


async def authenticate(token: str) -> str | None:
    return TOKENS.get(token)


@asynccontextmanager
async def callers(server: trio_mcp.Server, *names: str) -> AsyncIterator[list[trio_mcp.Client]]:
    """One HTTP client per name (``alice``, ``bob``), each with its own bearer token, of ``server``."""
    async with trio.open_nursery() as nursery:
        options = HttpTransportOptions(authenticate=authenticate)
        port = await nursery.start(
            lambda task_status: server.serve_http("127.0.0.1", 0, options=options, task_status=task_status)
        )
        url = f"http://127.0.0.1:{port}/mcp"
        async with (
            trio_mcp.open_http_client(url, headers={"authorization": f"Bearer {names[0]}-token"}) as first,
            trio_mcp.open_http_client(url, headers={"authorization": f"Bearer {names[1]}-token"}) as second,
        ):
            yield [first, second]
        nursery.cancel_scope.cancel()


class Gates(dict[str, trio.Event]):
    """The gates calls of ``work`` wait at, by name, and how many calls have reached one."""

    def __init__(self) -> None:
        super().__init__()
        self.reached = Arrivals()


def tool_server(*middleware: Any) -> tuple[trio_mcp.Server, Gates]:
    server = trio_mcp.Server("limited")
    for item in middleware:
        server.middleware(item)
    gates = Gates()

    @server.tool()
    async def work(gate: str = "") -> str:
        """Wait for the test to open ``gate`` (none: answer at once)."""
        if gate:
            opened = gates.setdefault(gate, trio.Event())
            gates.reached.arrive()
            await opened.wait()
        return "done"

    @server.tool()
    async def other() -> str:
        """Another tool."""
        return "other"

    return server, gates


async def refused(call: Callable[[], Any], code: int) -> McpError:
    with pytest.raises(McpError) as error:
        await call()
    assert error.value.code == code, error.value
    return error.value


async def test_rate_limits_are_per_principal_and_per_tool() -> None:
    server, _ = tool_server(RateLimit(0.001, burst=1, per=("principal", "tool")))
    with trio.fail_after(20):
        async with callers(server, "alice", "bob") as (alice, bob):
            await alice.call_tool("work", {})
            error = await refused(lambda: alice.call_tool("work", {}), RATE_LIMITED)
            assert error.message.startswith("Rate limit exceeded for work")
            await alice.call_tool("other", {})  # another tool: another bucket
            await bob.call_tool("work", {})  # another principal: another bucket


async def test_a_bucket_refills_at_its_rate(autojump_clock: trio.abc.Clock) -> None:
    server, _ = tool_server(RateLimit(2, burst=2, tools={"work"}))
    async with open_in_memory(server) as client:
        await client.call_tool("work", {})
        await client.call_tool("work", {})
        error = await refused(lambda: client.call_tool("work", {}), RATE_LIMITED)
        assert error.data == {"retryAfter": 0.5}
        await trio.sleep(0.5)
        await client.call_tool("work", {})
        await refused(lambda: client.call_tool("work", {}), RATE_LIMITED)
        await client.list_tools()  # not a limited tool


async def test_concurrency_limit_queues_then_refuses_per_principal() -> None:
    server, gates = tool_server(ConcurrencyLimit(1, queue=1, queue_timeout=30))
    answers: list[str] = []
    with trio.fail_after(20):
        async with callers(server, "alice", "bob") as (alice, bob), trio.open_nursery() as nursery:

            async def call(gate: str) -> None:
                result = await alice.call_tool("work", {"gate": gate})
                answers.append(result.content[0].text)  # type: ignore[union-attr]

            nursery.start_soon(call, "first")
            await gates.reached.wait_for(1)
            nursery.start_soon(call, "second")  # waits its turn
            await trio.testing.wait_all_tasks_blocked()  # the second has reached the queue: nothing else can run
            error = await refused(lambda: alice.call_tool("work", {}), SERVER_BUSY)
            assert error.message == "Too many concurrent requests for work: 1 being served"
            assert (await bob.call_tool("work", {})).content  # bob has slots of his own
            assert "second" not in gates  # still queued behind the first
            gates["first"].set()
            await gates.reached.wait_for(2)
            gates["second"].set()
        assert answers == ["done", "done"]


async def test_a_queued_request_gives_up_after_the_queue_timeout(autojump_clock: trio.abc.Clock) -> None:
    server, gates = tool_server(ConcurrencyLimit(1, queue=4, queue_timeout=5, tools={"work"}))
    async with open_in_memory(server) as client, trio.open_nursery() as nursery:
        nursery.start_soon(client.call_tool, "work", {"gate": "held"})
        await trio.sleep(1)
        start = trio.current_time()
        error = await refused(lambda: client.call_tool("work", {}), SERVER_BUSY)
        assert trio.current_time() - start == pytest.approx(5)
        assert "after 5 s" in error.message
        await client.call_tool("other", {})
        gates["held"].set()


async def test_cached_listings_expire_and_follow_list_changes(autojump_clock: trio.abc.Clock) -> None:
    server, _ = tool_server()
    server.middleware(ResponseCache(server, ttl=10))
    version = {"n": 1}

    @server.resource("config://version")
    async def current() -> str:
        return str(version["n"])

    async with open_in_memory(server) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["work", "other"]
        version["n"] = 2
        assert (await client.read_resource("config://version")).contents[0].text == "2"  # type: ignore[union-attr]
        version["n"] = 3
        assert (await client.read_resource("config://version")).contents[0].text == "2"  # type: ignore[union-attr]
        await trio.sleep(10)  # the TTL passed
        assert (await client.read_resource("config://version")).contents[0].text == "3"  # type: ignore[union-attr]

        @server.tool()
        async def added() -> str:
            """Added later: the list changed."""
            return ""

        assert [tool.name for tool in (await client.list_tools()).tools] == ["work", "other", "added"]


async def test_an_oversized_text_result_is_truncated_with_a_notice() -> None:
    server, _ = tool_server(SizeLimit(2048, truncate=True))

    @server.tool()
    async def essay() -> str:
        """Too long."""
        return "é" * 5000

    async with open_in_memory(server) as client:
        result = await client.request("tools/call", {"name": "essay", "arguments": {}})
        text = result["content"][0]["text"]
        assert text.startswith("éé") and re.search(
            r"\n\[truncated: the response was 10\d\d\d bytes, the limit is 2048\]$", text
        )
        assert 1900 < len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode()) <= 2048


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: RateLimit(0), "rate must be"),
        (lambda: RateLimit(1, burst=0), "burst must be"),
        (lambda: RateLimit(1, per=("session",)), "per must name"),
        (lambda: RateLimit(1, tools="work"), "tools must be"),
        (lambda: ConcurrencyLimit(0), "limit must be"),
        (lambda: ConcurrencyLimit(1, queue=-1), "queue must be"),
        (lambda: ConcurrencyLimit(1, queue_timeout=0), "queue_timeout must be"),
        (lambda: ResponseCache(trio_mcp.Server("s"), ttl=0), "ttl must be"),
        (lambda: ResponseCache(trio_mcp.Server("s"), methods={"tools/call"}), "methods must be among"),
        (lambda: SizeLimit(10), "max_bytes must be"),
        (lambda: ErrorShaping({McpError: 1}), "McpError is trio_mcp's own"),
        (lambda: ErrorShaping({ValueError: "bad"}), "the shape of ValueError"),
    ],
)
def test_invalid_options_are_refused_naming_the_option(make: Callable[[], Any], error: str) -> None:
    with pytest.raises((ValueError, TypeError), match=error):
        make()


async def test_a_request_cancelled_while_queued_leaves_the_line(autojump_clock: trio.abc.Clock) -> None:
    server, gates = tool_server(ConcurrencyLimit(1, queue=1, queue_timeout=60, tools={"work"}))
    async with open_in_memory(server) as client, trio.open_nursery() as nursery:
        nursery.start_soon(client.call_tool, "work", {"gate": "held"})
        await trio.sleep(1)
        with trio.move_on_after(1):  # queued, then given up
            await client.call_tool("work", {})
        done = trio.Event()

        async def third() -> None:
            await client.call_tool("work", {"gate": "third"})
            done.set()

        nursery.start_soon(third)  # queued in the place the second left, not refused
        await trio.sleep(1)
        gates["held"].set()
        await trio.sleep(1)
        gates["third"].set()
        await done.wait()


async def test_each_request_and_response_size_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="trio_mcp.middleware.size")
    server, _ = tool_server(SizeLimit(4096))
    async with open_in_memory(server) as client:
        await client.call_tool("work", {"gate": ""})
    (line,) = [
        r.getMessage() for r in caplog.records if r.name == "trio_mcp.middleware.size" and "work" in r.getMessage()
    ]
    assert re.fullmatch(r"tools/call work: request \d+ bytes, response \d+ bytes", line), line
