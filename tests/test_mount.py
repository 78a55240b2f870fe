"""``Server.mount``: another server's tools, prompts and resources served as one's own, kept in step, with its
lifespan nested and its handlers seeing their own server."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import pytest
import trio

from trio_mcp import Context, Server
from trio_mcp.client import Client
from trio_mcp.testing import open_in_memory
from trio_mcp.types import TextContent

events: list[str] = []


def build() -> tuple[Server, Server]:
    @asynccontextmanager
    async def weather_life(server: Server) -> AsyncIterator[str]:
        events.append("weather up")
        yield "weather-db"
        events.append("weather down")

    @asynccontextmanager
    async def app_life(server: Server) -> AsyncIterator[str]:
        events.append("app up")
        yield "app-db"
        events.append("app down")

    weather = Server("weather", lifespan=weather_life)

    @weather.tool()
    async def forecast(city: str, ctx: Context) -> str:
        """Tomorrow's weather."""
        return f"sunny in {city} ({ctx.lifespan_state}, served by {ctx.server.info.name})"

    @weather.tool()
    def humidity(city: str) -> int:
        """A sync tool, run in a thread."""
        return 40

    @weather.prompt()
    def report(city: str) -> str:
        return f"Write a weather report for {city}."

    @weather.resource("weather://stations")
    def stations() -> str:
        return "north, south"

    @weather.resource("weather://city/{name}")
    def city(name: str, ctx: Context) -> str:
        return f"{name} via {ctx.server.info.name}"

    app = Server("app", lifespan=app_life)

    @app.tool()
    async def state(ctx: Context) -> str:
        return str(ctx.lifespan_state)

    app.mount("weather", weather)
    return app, weather


@pytest.fixture
def mcp_server() -> Server:
    events.clear()
    return build()[0]


def text(result: Any) -> str:
    block = result.content[0] if hasattr(result, "content") else result.messages[0].content
    assert isinstance(block, TextContent)
    return block.text


async def test_everything_is_served_under_the_prefix(mcp_client: Client) -> None:
    tools = {tool.name: tool async for tool in mcp_client.iter_tools()}
    assert list(tools) == ["state", "weather_forecast", "weather_humidity"]
    assert tools["weather_forecast"].description == "Tomorrow's weather."
    assert tools["weather_forecast"].input_schema["required"] == ["city"]
    assert (
        text(await mcp_client.call_tool("weather_forecast", {"city": "Oslo"}))
        == "sunny in Oslo (weather-db, served by weather)"
    )
    assert (await mcp_client.call_tool("weather_humidity", {"city": "Oslo"})).structured_content == {"result": 40}
    assert text(await mcp_client.call_tool("state")) == "app-db"
    assert [prompt.name async for prompt in mcp_client.iter_prompts()] == ["weather_report"]
    assert text(await mcp_client.get_prompt("weather_report", {"city": "Rome"})) == "Write a weather report for Rome."
    assert [r.uri async for r in mcp_client.iter_resources()] == ["weather://stations"]
    read = await mcp_client.read_resource("weather://city/Lima")
    assert read.contents[0].text == "Lima via weather"  # type: ignore[union-attr]


async def test_lifespans_nest() -> None:
    events.clear()
    app, _ = build()
    async with app.running():
        assert events == ["app up", "weather up"]
    assert events == ["app up", "weather up", "weather down", "app down"]


async def test_changes_and_updates_in_the_child_reach_the_parents_clients() -> None:
    app, weather = build()
    changed: list[str] = []
    updated: list[str] = []
    list_changed = trio.Event()
    resource_updated = trio.Event()

    def on_list_changed(kind: str) -> None:
        changed.append(kind)
        list_changed.set()

    def on_resource_updated(uri: str) -> None:
        updated.append(uri)
        resource_updated.set()

    with trio.fail_after(10):
        async with (
            app.running(),
            open_in_memory(
                app,
                protocol_version="2025-11-25",
                on_list_changed=on_list_changed,
                on_resource_updated=on_resource_updated,
            ) as client,
        ):
            await client.list_tools()

            async def alerts() -> str:
                return "none"

            weather.add_tool(alerts)
            await list_changed.wait()
            assert changed == ["tools"]
            assert "weather_alerts" in [tool.name async for tool in client.iter_tools()]
            weather.remove_tool("humidity")
            assert "weather_humidity" not in [tool.name async for tool in client.iter_tools()]

            await client.subscribe_resource("weather://stations")
            weather.notify_resource_updated("weather://stations")
            await resource_updated.wait()
            assert updated == ["weather://stations"]


def test_mount_refuses_clashes_bad_prefixes_and_cycles() -> None:
    app, weather = build()
    other = Server("other")

    @other.tool()
    async def forecast() -> str:
        return ""

    with pytest.raises(ValueError, match="already has 'weather_forecast'"):
        app.mount("weather", other)
    with pytest.raises(ValueError, match="prefix 'bad prefix'"):
        app.mount("bad prefix", Server("x"))
    with pytest.raises(ValueError, match="cycle"):
        weather.mount("app", app)
    with pytest.raises(ValueError, match="cycle"):
        app.mount("self", app)
