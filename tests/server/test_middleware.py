"""Middleware around every inbound request and notification, on every transport: order, short-circuits,
errors, deadlines inside the request's cancel scope, and what it sees (method, params, principal)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
import trio
from paths import TESTS

import trio_mcp
from trio_mcp import CallNext, McpError, RequestInfo
from trio_mcp.testing import open_in_memory
from trio_mcp.transports._base import memory_stream_pair
from trio_mcp.types import META_DEADLINE

sys.path.insert(0, str(TESTS / "servers"))
import middleware_server  # noqa: E402
from transport_helpers import connect  # noqa: E402

SERVER_SCRIPT = TESTS / "servers" / "middleware_server.py"
TRANSPORTS = ["memory", "stdio", "http-session", "http-stateless", "websocket"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_middleware_wraps_every_request_in_registration_order(transport: str) -> None:
    with trio.fail_after(20):
        async with connect(middleware_server.server, transport, stdio_script=SERVER_SCRIPT) as client:
            result = await client.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
            assert result["content"][0]["text"] == "hi"
            # The first registered is the outermost: it sees the result last.
            assert result["_meta"]["trail"] == ["authorize", "audit"]

            with pytest.raises(McpError) as refused:
                await client.call_tool("secret", {})
            assert refused.value.code == middleware_server.FORBIDDEN
            assert refused.value.message == "Forbidden: secret is not for you"

            first = await client.call_tool("cached", {})
            again = await client.call_tool("cached", {})
            assert first.content == again.content  # the second came from the middleware's cache

            with pytest.raises(McpError) as timed_out:
                await client.call_tool("slow", {})
            assert timed_out.value.code == -32002

            # The session goes on after all that.
            assert (await client.call_tool("echo", {"text": "still here"})).content[0].text == "still here"  # type: ignore[union-attr]


async def test_middleware_sees_notifications_and_the_principal() -> None:
    seen: list[RequestInfo] = []
    server = trio_mcp.Server("principal")

    @server.middleware
    async def record(call: RequestInfo, call_next: CallNext) -> Any:
        seen.append(call)
        return await call_next()

    @server.tool()
    def hello() -> str:
        return "hello"

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            client_end, server_end = memory_stream_pair()
            await nursery.start(
                lambda task_status: server.serve_connection(server_end, principal="alice", task_status=task_status)
            )
            client = trio_mcp.Client(client_end, protocol_version="2025-11-25")
            await client.start(nursery)
            await client.call_tool("hello", {})
            await client.aclose()
            nursery.cancel_scope.cancel()
    methods = [(call.method, call.is_notification) for call in seen]
    assert methods == [("initialize", False), ("notifications/initialized", True), ("tools/call", False)]
    assert {call.principal for call in seen} == {"alice"}
    assert seen[2].params is not None and seen[2].protocol_version == "2025-11-25"
    assert {key: value for key, value in seen[2].params.items() if key != "_meta"} == {"name": "hello", "arguments": {}}
    assert META_DEADLINE in seen[2].meta  # sent inside fail_after: the caller's deadline travels


async def test_a_middleware_deadline_bounds_the_handler_exactly(autojump_clock: trio.abc.Clock) -> None:
    """The middleware runs in the request's task and scope: its clock covers the handler, and a cancel
    from the peer reaches it as the handler's cancellation."""
    durations: list[float] = []
    outcomes: list[str] = []
    server = trio_mcp.Server("timed")

    @server.middleware
    async def timed(call: RequestInfo, call_next: CallNext) -> Any:
        start = trio.current_time()
        try:
            return await call_next()
        except trio.Cancelled:
            outcomes.append(f"{call.method} cancelled")
            raise
        finally:
            if call.method == "tools/call":
                durations.append(trio.current_time() - start)

    @server.tool()
    async def nap(seconds: float) -> str:
        await trio.sleep(seconds)
        return "rested"

    async with open_in_memory(server, protocol_version="2025-11-25") as client:
        await client.call_tool("nap", {"seconds": 7})
        assert durations == [7]
        with trio.move_on_after(3):
            await client.call_tool("nap", {"seconds": 100})
        await client.ping()  # the cancel notification is processed before the ping is answered
        assert outcomes == ["tools/call cancelled"]


def test_middleware_must_be_an_async_function() -> None:
    server = trio_mcp.Server("bad")

    def sync_middleware(call: RequestInfo, call_next: Callable[[], Any]) -> Any:
        return None

    with pytest.raises(TypeError, match="middleware must be an async function"):
        server.middleware(sync_middleware)  # type: ignore[arg-type]


async def test_calling_call_next_twice_is_a_failure_of_that_request_alone() -> None:
    server = trio_mcp.Server("twice")

    @server.middleware
    async def twice(call: RequestInfo, call_next: CallNext) -> Any:
        if call.method == "tools/call":
            await call_next()
        return await call_next()

    @server.tool()
    def one() -> str:
        return "one"

    with trio.fail_after(10):
        async with open_in_memory(server) as client:
            with pytest.raises(McpError) as failed:
                await client.call_tool("one", {})
            assert failed.value.code == -32603
            await client.ping()


async def test_client_middleware_wraps_what_the_server_sends_and_outbound_middleware_what_it_sends() -> None:
    server = trio_mcp.Server("asks")

    @server.tool()
    async def ask(ctx: trio_mcp.Context) -> str:
        await ctx.info("asking")
        try:
            return str(len(await ctx.list_roots()))
        except McpError as exc:
            return f"refused {exc.code}"

    tags: list[Any] = []

    @server.middleware
    async def tagged(call: RequestInfo, call_next: CallNext) -> Any:
        tags.append(call.meta.get("com.example/tag"))
        return await call_next()

    received: list[tuple[str, bool]] = []
    sent: list[tuple[str, Any]] = []

    async def inbound(call: RequestInfo, call_next: CallNext) -> Any:
        received.append((call.method, call.is_notification))
        if call.method == "roots/list" and len(received) > 2:
            raise McpError(-32001, "Forbidden: no more roots")
        return await call_next()

    async def outbound(call: RequestInfo, call_next: CallNext) -> Any:
        call.params = {**(call.params or {}), "_meta": {**call.meta, "com.example/tag": "x"}}
        result = await call_next()
        sent.append((call.method, call.request_id))
        return result

    async def roots() -> list[Any]:
        return []

    with trio.fail_after(10):
        async with open_in_memory(
            server,
            protocol_version="2025-11-25",
            roots=roots,
            on_log=lambda params: None,
            middleware=[inbound],
            outbound_middleware=[outbound],
        ) as client:
            await client.set_logging_level("info")
            assert (await client.call_tool("ask", {})).content[0].text == "0"  # type: ignore[union-attr]
            assert (await client.call_tool("ask", {})).content[0].text == "refused -32001"  # type: ignore[union-attr]
    assert received == [
        ("notifications/message", True),
        ("roots/list", False),
        ("notifications/message", True),
        ("roots/list", False),
    ]
    assert [method for method, _ in sent] == ["initialize", "logging/setLevel", "tools/call", "tools/call"]
    assert all(isinstance(request_id, int) for _, request_id in sent)
    assert tags[-2:] == ["x", "x"]  # what the outbound middleware put in _meta reached the server
