"""The client in both eras: the server/discover probe and its fallbacks, stateless requests with multi
round-trip input from the callbacks, per-request log levels, and one listen() API for change notifications."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio
import trio.testing
from paths import TESTS
from transport_helpers import initialize_result

import trio_mcp
from trio_mcp import Context, Server
from trio_mcp._core.jsonrpc import classify
from trio_mcp.client import ChangeNotification, open_client
from trio_mcp.testing import open_in_memory
from trio_mcp.transports import memory_stream_pair
from trio_mcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    Root,
    TextContent,
)

SERVER = [sys.executable, str(TESTS / "servers" / "stdio_server.py")]


def make_server() -> Server:
    server = Server("eras", version="3.1.4", instructions="hello from discover")

    @server.tool()
    async def survey(ctx: Context) -> str:
        """Ask the user, then the model, then look at the roots: three rounds on 2026-07-28."""
        who = await ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        said = await ctx.sample(f"Greet {(who.content or {}).get('name')}", max_tokens=10)
        roots = await ctx.list_roots()
        text = said.content.text if isinstance(said.content, TextContent) else "?"
        return f"{text} @ {','.join(root.uri for root in roots)}"

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """Log at two levels."""
        await ctx.debug("fine detail")
        await ctx.warning("heads up")
        return "ok"

    @server.resource("test://doc", mime_type="text/plain")
    def doc() -> str:
        return "v1"

    return server


async def elicitation(params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


async def sampling(params: CreateMessageRequestParams) -> CreateMessageResult:
    assert isinstance(params.messages[0].content, TextContent)
    return CreateMessageResult(
        role="assistant", content=TextContent(text=f"Hi ({params.messages[0].content.text})"), model="test"
    )


async def roots() -> list[Root]:
    return [Root(uri="file:///project")]


CALLBACKS: dict[str, Any] = {"elicitation": elicitation, "sampling": sampling, "roots": roots}


@pytest.mark.parametrize("version", ["auto", "2026-07-28"])
async def test_probe_finds_a_modern_server(version: str) -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_server(), protocol_version=version, **CALLBACKS) as client:
            assert client.era == "modern" and client.protocol_version == "2026-07-28"
            assert client.server_info.name == "eras" and client.server_info.version == "3.1.4"
            assert client.instructions == "hello from discover"
            assert client.server_capabilities.tools is not None
            assert "2026-07-28" in client.discover_result.supported_versions
            result = await client.call_tool("survey")
            assert result.content == [TextContent(text="Hi (Greet Ada) @ file:///project")]
            await client.ping()
            with pytest.raises(trio_mcp.CapabilityError, match="listen"):
                await client.subscribe_resource("test://doc")


async def test_a_pinned_legacy_revision_skips_the_probe() -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_server(), protocol_version="2025-06-18", **CALLBACKS) as client:
            assert client.era == "legacy" and client.protocol_version == "2025-06-18"
            result = await client.call_tool("survey")  # the same handler, now with JSON-RPC requests to us
            assert result.content == [TextContent(text="Hi (Greet Ada) @ file:///project")]


async def test_log_level_travels_with_each_modern_request() -> None:
    logs: list[LoggingMessageNotificationParams] = []
    with trio.fail_after(5):
        async with open_in_memory(make_server(), on_log=logs.append) as client:
            await client.call_tool("chatty")
            # A log callback asks for logs: "info" and above until a level is set.
            assert [(m.level, m.data) for m in logs] == [("warning", "heads up")]
            logs.clear()
            await client.set_logging_level("debug")
            await client.call_tool("chatty")
            assert [(m.level, m.data) for m in logs] == [("debug", "fine detail"), ("warning", "heads up")]


@pytest.mark.parametrize("version", ["auto", "2025-11-25"])
async def test_listen_delivers_changes_in_both_eras(version: str) -> None:
    server = make_server()
    with trio.fail_after(5):
        async with open_in_memory(server, protocol_version=version) as client:
            async with client.listen(tools=True, resource_uris=["test://doc"]) as changes:
                if version == "auto":
                    assert changes.honoured == {"toolsListChanged": True, "resourceSubscriptions": ["test://doc"]}
                await trio.testing.wait_all_tasks_blocked()
                server.add_tool(lambda: "x", name="late", description="added late")
                server.notify_resource_updated("test://doc")
                server.notify_resource_updated("test://other")
                assert await changes.receive() == ChangeNotification("tools")
                assert await changes.receive() == ChangeNotification("resource", "test://doc")
            await trio.testing.wait_all_tasks_blocked()
            connections = list(server.connections)
            assert all(not connection.listeners and not connection.subscriptions for connection in connections)


async def test_probe_falls_back_when_the_server_rejects_discover() -> None:
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client([sys.executable, "-c", LEGACY_ONLY]) as client:
            assert client.era == "legacy" and client.protocol_version == "2025-11-25"
            await client.ping()


async def test_probe_falls_back_after_silence(autojump_clock: trio.testing.MockClock) -> None:
    ours, theirs = memory_stream_pair()

    async def silent_legacy_server() -> None:
        while True:
            try:
                message = await theirs.receive()
            except trio_mcp.ConnectionClosed:
                return
            event = classify(message)
            method = getattr(event, "method", None)
            if method == "initialize":
                await theirs.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": initialize_result(server="old"),
                    }
                )
            elif method == "ping":
                await theirs.send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
            # server/discover: never answered

    async with trio.open_nursery() as nursery:
        nursery.start_soon(silent_legacy_server)
        started = trio.current_time()
        async with open_client(ours, probe_timeout=3.0) as client:
            assert client.era == "legacy"
            assert trio.current_time() - started >= 3.0
            await client.ping()
        nursery.cancel_scope.cancel()


async def test_unsupported_modern_version_with_handshake_fallback() -> None:
    ours, theirs = memory_stream_pair()

    async def dual_era_server_without_our_modern_version() -> None:
        while True:
            try:
                message = await theirs.receive()
            except trio_mcp.ConnectionClosed:
                return
            method = message.get("method")
            if method == "server/discover":
                await theirs.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {
                            "code": -32022,
                            "message": "Unsupported protocol version",
                            "data": {"supported": ["2099-01-01", "2025-11-25"], "requested": "2026-07-28"},
                        },
                    }
                )
            elif method == "initialize":
                await theirs.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": initialize_result(server="d"),
                    }
                )

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(dual_era_server_without_our_modern_version)
            async with open_client(ours) as client:
                assert client.era == "legacy"
            nursery.cancel_scope.cancel()


async def test_stdio_server_speaks_the_modern_era_to_a_probing_client() -> None:
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(SERVER, roots=roots) as client:
            assert client.era == "modern"
            result = await client.call_tool("roots_probe", {"timeout": 5})
            assert result.content == [TextContent(text="file:///project")]


# A legacy-only server (no server/discover before initialize), written with nothing but the standard library.
LEGACY_ONLY = r"""
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    elif message["method"] == "ping":
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
    else:
        reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32600, "message": "not initialized"}}
    print(json.dumps(reply), flush=True)
"""


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_a_log_callback_receives_logs_over_http_in_both_eras(version: str) -> None:
    logs: list[LoggingMessageNotificationParams] = []
    logged = trio.Event()

    def on_log(message: LoggingMessageNotificationParams) -> None:
        logs.append(message)
        logged.set()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(make_server().serve_http, "127.0.0.1", 0)
            async with trio_mcp.open_http_client(
                f"http://127.0.0.1:{port}/mcp", protocol_version=version, on_log=on_log
            ) as client:
                await client.call_tool("chatty")
                with trio.move_on_after(2):
                    await logged.wait()
            nursery.cancel_scope.cancel()
    assert [(m.level, m.data) for m in logs] == [("warning", "heads up")]


URL_ELICITATION = {
    "method": "elicitation/create",
    "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/login", "elicitationId": "el-1"},
}
SAMPLING_WITH_TOOLS = {
    "method": "sampling/createMessage",
    "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "weather?"}}],
        "maxTokens": 5,
        "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}],
    },
}


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
@pytest.mark.parametrize("asked", [URL_ELICITATION, SAMPLING_WITH_TOOLS], ids=["url-elicitation", "sampling-tools"])
async def test_undeclared_modes_of_server_requests_are_refused_in_both_eras(
    version: str, asked: dict[str, Any]
) -> None:
    # The client declared elicitation (form only) and sampling (without tools); a server that asks for more
    # is refused the same way whichever era carries the request, and the callback never runs.
    ours, theirs = memory_stream_pair()
    called: list[str] = []
    refusal: dict[str, Any] = {}

    async def elicit(params: ElicitRequestParams) -> ElicitResult:
        called.append("elicitation")  # pragma: no cover - must not run
        return ElicitResult(action="accept")  # pragma: no cover

    async def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
        called.append("sampling")  # pragma: no cover - must not run
        return CreateMessageResult(role="assistant", content=TextContent(text="x"), model="m")  # pragma: no cover

    async def greedy_server() -> None:
        while True:
            try:
                message = await theirs.receive()
            except trio_mcp.ConnectionClosed:
                return
            method = message.get("method")
            if method == "server/discover":
                await theirs.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}},
                    }
                )
            elif method == "initialize":
                await theirs.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": initialize_result(capabilities={"tools": {}}, server="greedy"),
                    }
                )
            elif method == "tools/call" and version == "2026-07-28":
                await theirs.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": {"resultType": "input_required", "inputRequests": {"ask": asked}},
                    }
                )
            elif method == "tools/call":
                await theirs.send({"jsonrpc": "2.0", "id": "srv-1", **asked})
                refusal.update(await theirs.receive())
                await theirs.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": {"content": [{"type": "text", "text": "refused"}], "isError": True},
                    }
                )

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(greedy_server)
            async with open_client(ours, protocol_version=version, elicitation=elicit, sampling=sample) as client:
                if version == "2026-07-28":
                    with pytest.raises(trio_mcp.RemoteProtocolError, match="cannot give.*did not declare"):
                        await client.call_tool("go")
                else:
                    await client.call_tool("go")
                    assert refusal["error"]["code"] == -32602
                    assert "did not declare" in refusal["error"]["message"]
            nursery.cancel_scope.cancel()
    assert called == []


async def test_calls_the_server_cannot_serve_are_refused_locally() -> None:
    server = Server("no-prompts")  # tools only: no prompts, resources, logging or completions capability

    @server.tool()
    def noop() -> str:
        return "ok"

    with trio.fail_after(5):
        for version in ("2026-07-28", "2025-11-25"):
            async with open_in_memory(server, protocol_version=version) as client:
                with pytest.raises(trio_mcp.CapabilityError, match="did not declare the 'prompts' capability") as info:
                    await client.list_prompts()
                assert info.value.method == "prompts/list"
                assert not isinstance(info.value, trio_mcp.McpError)
                assert (await client.call_tool("noop")).is_error is not True
        async with open_in_memory(make_server(), protocol_version="2026-07-28") as client:
            with pytest.raises(trio_mcp.CapabilityError, match="does not exist on 2026-07-28"):
                await client.subscribe_resource("test://doc")


def make_cached_server(ttl_ms: int) -> Server:
    server = Server("cached", cache_ttl_ms=ttl_ms)

    @server.tool()
    def first() -> str:
        """The tool there from the start."""
        return "1"

    return server


async def test_list_results_are_reused_within_their_ttl(autojump_clock: trio.testing.MockClock) -> None:
    server = make_cached_server(ttl_ms=10_000)
    with trio.fail_after(60):
        async with open_in_memory(server, protocol_version="2026-07-28") as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == ["first"]
            server.add_tool(lambda: "2", name="second", description="added quietly")  # nobody is listening
            assert [tool.name for tool in (await client.list_tools()).tools] == ["first"]  # within the ttl
            await trio.sleep(10.5)
            assert [tool.name for tool in (await client.list_tools()).tools] == ["first", "second"]


async def test_list_changed_drops_the_cached_listing_over_http() -> None:
    server = make_cached_server(ttl_ms=600_000)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve_http, "127.0.0.1", 0)
            async with trio_mcp.open_http_client(
                f"http://127.0.0.1:{port}/mcp", protocol_version="2026-07-28"
            ) as client:
                async with client.listen(tools=True) as changes:
                    assert [tool.name for tool in (await client.list_tools()).tools] == ["first"]
                    server.add_tool(lambda: "2", name="second", description="announced")
                    assert await changes.receive() == ChangeNotification("tools")
                    assert [tool.name for tool in (await client.list_tools()).tools] == ["first", "second"]
                server.add_tool(lambda: "3", name="third", description="added with nobody listening")
                assert [tool.name for tool in (await client.list_tools()).tools] == ["first", "second"]  # cached
            nursery.cancel_scope.cancel()


async def test_the_legacy_era_is_not_cached() -> None:
    server = make_cached_server(ttl_ms=600_000)
    with trio.fail_after(5):
        async with open_in_memory(server, protocol_version="2025-11-25") as client:
            await client.list_tools()
            server.add_tool(lambda: "2", name="second", description="added")
            assert [tool.name for tool in (await client.list_tools()).tools] == ["first", "second"]
