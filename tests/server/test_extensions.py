"""Extensions and custom methods, both ways, over real transports: declared capabilities, custom requests with
progress, cancellation and errors like built-in ones, custom notifications, and -32601 for unknown methods."""

from __future__ import annotations

import math
from typing import Any

import pytest
import trio
from transport_helpers import connect

import trio_mcp
from trio_mcp import Context, McpError
from trio_mcp.types import META_DEADLINE

EXTENSION = "com.example/weather"
TRANSPORTS = ["memory", "http-session", "http-stateless", "websocket"]


class Recorder:
    def __init__(self) -> None:
        self.notes: list[Any] = []
        self.noted = trio.Event()
        self.cancelled = trio.Event()
        self.client_extensions: list[Any] = []


def build_server(seen: Recorder) -> trio_mcp.Server:
    server = trio_mcp.Server("weather")
    server.extension(EXTENSION, {"units": ["metric"]})

    @server.request_handler("com.example/forecast")
    async def forecast(params: dict[str, Any] | None, ctx: Context) -> dict[str, Any]:
        city = (params or {}).get("city")
        if not isinstance(city, str):
            raise McpError(-32602, "Invalid params: city must be a string")
        await ctx.report_progress(0.5, 1.0)
        await ctx.notify("notifications/com.example/note", {"text": f"looking up {city}"})
        seen.client_extensions.append(ctx.client_capabilities.extensions)
        return {"city": city, "sky": "sunny"}

    @server.request_handler("com.example/wait")
    async def wait(params: dict[str, Any] | None, ctx: Context) -> None:
        try:
            await trio.sleep(math.inf)
        finally:
            seen.cancelled.set()

    @server.request_handler("com.example/broken")
    async def broken(params: dict[str, Any] | None, ctx: Context) -> None:
        raise RuntimeError("internal detail that must not leak")

    @server.request_handler("com.example/ask")
    async def ask(params: dict[str, Any] | None, ctx: Context) -> Any:
        return await ctx.request("com.example/confirm", {"question": "sure?"})

    @server.tool()
    async def ask_tool(ctx: Context) -> str:
        answer = await ctx.request("com.example/confirm", {"question": "sure?"})
        return str(answer["answer"])

    @server.notification_handler("notifications/com.example/hello")
    async def hello(params: dict[str, Any] | None) -> None:
        seen.notes.append(params)
        seen.noted.set()

    return server


def client_options(notes: list[Any]) -> dict[str, Any]:
    async def confirm(params: dict[str, Any] | None) -> dict[str, Any]:
        assert {key: value for key, value in (params or {}).items() if key != "_meta"} == {"question": "sure?"}
        return {"answer": "yes"}

    async def on_note(params: dict[str, Any] | None) -> None:
        notes.append(params)

    return {
        "extensions": {"com.example/client-side": {}},
        "request_handlers": {"com.example/confirm": confirm},
        "notification_handlers": {"notifications/com.example/note": on_note},
    }


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_custom_methods_both_ways(transport: str) -> None:
    seen = Recorder()
    server = build_server(seen)
    notes: list[Any] = []
    progress: list[Any] = []
    with trio.fail_after(20):
        async with connect(server, transport, **client_options(notes)) as client:
            modern = client.era == "modern"
            declared = client.server_capabilities.extensions
            # Declared on every revision: in server/discover, or in initialize (SEP-2133 negotiates there too);
            # trio_mcp's own deadline extension only on 2026-07-28, where every server declares it.
            deadlines = {META_DEADLINE: {"marginMs": 2.0}} if modern else {}
            assert declared == {EXTENSION: {"units": ["metric"]}, **deadlines}

            result = await client.request("com.example/forecast", {"city": "Paris"}, on_progress=progress.append)
            assert (result["city"], result["sky"]) == ("Paris", "sunny")
            assert [update.progress for update in progress] == [0.5]
            assert notes == [{"text": "looking up Paris"}]
            assert seen.client_extensions == [{"com.example/client-side": {}, **deadlines}]

            with pytest.raises(McpError) as invalid:
                await client.request("com.example/forecast", {"city": 7})
            assert invalid.value.code == -32602

            with pytest.raises(McpError) as broken:
                await client.request("com.example/broken")
            assert broken.value.code == -32603 and "internal detail" not in broken.value.message

            with pytest.raises(McpError) as unknown:
                await client.request("com.example/nothing")
            assert unknown.value.code == -32601

            with trio.move_on_after(0.3):
                await client.request("com.example/wait")
            with trio.fail_after(5):
                await seen.cancelled.wait()  # the client's cancel reached the handler's scope

            if modern:  # the server asks through an InputRequiredResult, which a tool may return
                tool = await client.call_tool("ask_tool", {})
                assert tool.content[0].text == "yes"  # type: ignore[union-attr]
            else:
                assert await client.request("com.example/ask") == {"answer": "yes"}

            await client.notify("notifications/com.example/hello", {"from": "client"})
            with trio.fail_after(5):
                await seen.noted.wait()
            assert seen.notes == [{"from": "client"}]
            await client.ping()


def test_registration_refuses_mcp_methods_and_sync_handlers() -> None:
    server = trio_mcp.Server("bad")
    with pytest.raises(ValueError, match="'tools/call' is an MCP method"):
        server.request_handler("tools/call")(lambda params, ctx: None)
    with pytest.raises(TypeError, match="must be an async function"):
        server.request_handler("x/sync")(lambda params, ctx: None)
    with pytest.raises(TypeError, match="extension identifier"):
        server.extension("", {})
    with pytest.raises(TypeError, match="request_handlers"):
        trio_mcp.Client(None, request_handlers=[("x/y", None)])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'notifications/progress' is an MCP method"):

        async def on_progress(params: Any) -> None: ...

        trio_mcp.Client(None, notification_handlers={"notifications/progress": on_progress})  # type: ignore[arg-type]
