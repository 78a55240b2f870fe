"""MCP Apps (``io.modelcontextprotocol/ui``) over real transports and both eras: a tool bound to a ``ui://`` app in
one line, the app served as ``text/html;profile=mcp-app`` with its ``_meta.ui``, shown only to clients that declared
the extension, and a host relaying its frame's requests through the client, cancellation included."""

from __future__ import annotations

import math
from typing import Any

import pytest
import trio
from transport_helpers import connect

import trio_mcp
from trio_mcp import RemoteProtocolError
from trio_mcp.apps import APP_MIME_TYPE, AppCsp, AppLink, AppPermissions, apps_capability, supports_apps
from trio_mcp.client import AppBridge
from trio_mcp.testing import open_in_memory

HTML = "<!doctype html><html><body><p id=time></p><script>/* the app */</script></body></html>"


class Seen:
    def __init__(self) -> None:
        self.cancelled = trio.Event()
        self.started = trio.Event()


def clock_server(seen: Seen) -> trio_mcp.Server:
    server = trio_mcp.Server("clock")

    @server.tool()
    async def get_time(ctx: trio_mcp.Context) -> str:
        """The time, as text: what a client without apps shows."""
        return "12:00" + (" (the app shows the rest)" if supports_apps(ctx.client_capabilities) else "")

    @server.tool()
    async def refresh() -> str:
        return "refreshed"

    @server.tool()
    async def wait() -> str:
        seen.started.set()
        try:
            await trio.sleep(math.inf)
        finally:
            seen.cancelled.set()
        return "never"

    server.add_app(
        "ui://clock/app.html",
        HTML,
        tools=["get_time"],
        csp=AppCsp(connect_domains=("https://api.example.com",)),
        permissions=AppPermissions(clipboard_write=True),
        prefers_border=True,
    )
    server.add_app("ui://clock/refresh.html", HTML, tools=["refresh", "wait"], visibility=["app"])
    return server


@pytest.mark.parametrize("transport", ["memory", "http-session", "http-stateless"])
async def test_a_host_finds_reads_and_renders_a_tools_app(transport: str) -> None:
    with trio.fail_after(20):
        async with connect(clock_server(Seen()), transport, extensions=apps_capability()) as client:
            assert (client.server_capabilities.extensions or {})["io.modelcontextprotocol/ui"] == {}
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert client.tool_app(tools["get_time"]) == AppLink(resource_uri="ui://clock/app.html")
            assert client.tool_app(tools["refresh"]) == AppLink(
                resource_uri="ui://clock/refresh.html", visibility=("app",)
            )
            listed = {item.uri: item for item in (await client.list_resources()).resources}
            assert listed["ui://clock/app.html"].mime_type == APP_MIME_TYPE

            app = await client.read_app("ui://clock/app.html")
            assert app.html == HTML
            assert app.csp == AppCsp(connect_domains=("https://api.example.com",))
            assert app.permissions == AppPermissions(clipboard_write=True)
            assert app.prefers_border is True
            raw = await client.request("resources/read", {"uri": "ui://clock/app.html"})
            assert raw["contents"][0]["_meta"] == {
                "ui": {
                    "csp": {"connectDomains": ["https://api.example.com"]},
                    "permissions": {"clipboardWrite": {}},
                    "prefersBorder": True,
                }
            }


@pytest.mark.parametrize("transport", ["memory", "http-session"])
async def test_a_client_without_the_extension_sees_plain_tools(transport: str) -> None:
    async with connect(clock_server(Seen()), transport) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert all(client.tool_app(tool) is None and not (tool.meta or {}).get("ui") for tool in tools.values())
        assert not [r for r in (await client.list_resources()).resources if r.uri.startswith("ui://")]
        result = await client.call_tool("get_time", {})
        assert result.content[0].text == "12:00"  # type: ignore[union-attr]
        assert (await client.read_app("ui://clock/app.html")).html == HTML  # a URI alone still reads it


async def test_the_bridge_relays_the_frames_requests_and_its_cancellations() -> None:
    seen = Seen()
    server = clock_server(seen)

    @server.resource("ui://clock/plain", mime_type="text/plain")
    async def plain() -> str:
        return "not html"

    async def open_link(params: dict[str, Any] | None) -> dict[str, Any]:
        return {"opened": (params or {}).get("url")}

    with trio.fail_after(20):
        async with open_in_memory(server, extensions=apps_capability()) as client:
            tools = (await client.list_tools()).tools
            bridge = AppBridge(client, tools=tools, host_handlers={"ui/open-link": open_link})
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "refresh", "arguments": {}}}
            answer = await bridge.handle(call)
            assert answer is not None and answer["result"]["content"][0]["text"] == "refreshed"
            hidden = await bridge.handle({**call, "id": 2, "params": {"name": "get_time", "arguments": {}}})
            assert hidden is not None  # visible to apps too, and it knows its app is shown
            assert hidden["result"]["content"][0]["text"] == "12:00 (the app shows the rest)"
            link = await bridge.handle({"jsonrpc": "2.0", "id": 3, "method": "ui/open-link", "params": {"url": "x"}})
            assert link == {"jsonrpc": "2.0", "id": 3, "result": {"opened": "x"}}
            unknown = await bridge.handle({"jsonrpc": "2.0", "id": 4, "method": "sampling/createMessage"})
            assert unknown is not None and unknown["error"]["code"] == -32601
            with pytest.raises(RemoteProtocolError, match="not an app"):  # plain text under ui:// is no app
                await client.read_app("ui://clock/plain")

            answers: list[Any] = []

            async def frame_call() -> None:
                answers.append(await bridge.handle({**call, "id": 5, "params": {"name": "wait", "arguments": {}}}))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(frame_call)
                await seen.started.wait()
                await bridge.handle({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
            await seen.cancelled.wait()  # the frame's cancellation reached the tool on the server
            assert answers == [None]


async def test_model_only_visibility_keeps_a_tool_from_the_frame() -> None:
    server = trio_mcp.Server("s")

    @server.tool()
    async def secret() -> str:
        return "model only"

    server.add_app("ui://s/app.html", HTML, tools=["secret"], visibility=["model"])
    async with open_in_memory(server, extensions=apps_capability()) as client:
        bridge = AppBridge(client, tools=(await client.list_tools()).tools)
        refused = await bridge.handle(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "secret", "arguments": {}}}
        )
        assert refused is not None and "not visible to apps" in refused["error"]["message"]


def test_add_app_refuses_what_a_host_could_not_render() -> None:
    server = trio_mcp.Server("bad")
    with pytest.raises(ValueError, match="ui:// scheme"):
        server.add_app("https://example.com/app.html", HTML)
    with pytest.raises(ValueError, match="no tool named 'missing'"):
        server.add_app("ui://x/app.html", HTML, tools=["missing"])
    with pytest.raises(TypeError, match="list of tool names"):
        server.add_app("ui://x/app.html", HTML, tools="missing")
    with pytest.raises(ValueError, match="visibility"):
        server.add_app("ui://x/app.html", HTML, visibility=["nobody"])  # type: ignore[list-item]


async def test_a_mounted_servers_apps_are_served_by_the_parent() -> None:
    parent = trio_mcp.Server("parent")
    parent.mount("clock", clock_server(Seen()), prefix_uris=True)
    async with open_in_memory(parent, extensions=apps_capability()) as client:
        assert "io.modelcontextprotocol/ui" in (client.server_capabilities.extensions or {})
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        link = client.tool_app(tools["clock_get_time"])
        assert link == AppLink(resource_uri="ui://clock/clock/app.html")  # the URI the parent serves it at
        assert (await client.read_app(link.resource_uri)).html == HTML
    async with open_in_memory(parent) as plain:  # and hidden from a client without the extension
        assert all(plain.tool_app(tool) is None for tool in (await plain.list_tools()).tools)
        assert not [r for r in (await plain.list_resources()).resources if r.uri.startswith("ui://")]
