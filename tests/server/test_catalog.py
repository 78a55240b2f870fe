"""The tool-search tool of a large catalog (trio_mcp.catalog): ranked by name and description, paged, mounted
tools included, and the full list still there for clients that want it."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp.catalog import add_tool_search

from transport_helpers import connect  # isort: skip


def catalog() -> trio_mcp.Server:
    server = trio_mcp.Server("catalog")
    for number in range(200):

        async def filler() -> str:
            return ""

        server.add_tool(filler, name=f"report_{number}", description=f"Quarterly report number {number}.")

    @server.tool()
    async def get_weather_forecast(city: str) -> str:
        """The forecast for a city."""
        return f"sunny in {city}"

    @server.tool()
    async def translate(text: str, language: str) -> str:
        """Put text into another language (weather reports included)."""
        return text

    child = trio_mcp.Server("maps")

    @child.tool()
    async def route(start: str, end: str) -> str:
        """The way from one place to another."""
        return ""

    server.mount("maps", child)
    add_tool_search(server, page_size=25)
    return server


async def search(client: trio_mcp.Client, query: str, cursor: str = "") -> dict[str, Any]:
    result = await client.call_tool("search_tools", {"query": query, "cursor": cursor})
    assert not result.is_error, result
    assert isinstance(result.structured_content, dict)
    return result.structured_content


@pytest.mark.parametrize("transport", ["memory", "http-session", "http-stateless"])
async def test_tools_are_found_by_words_ranked_and_paged(transport: str) -> None:
    with trio.fail_after(30):
        async with connect(catalog(), transport) as client:
            found = await search(client, "weather forecast")
            assert [tool["name"] for tool in found["tools"]] == ["get_weather_forecast", "translate"]
            assert found["tools"][0]["inputSchema"]["required"] == ["city"]
            assert found["nextCursor"] == ""

            assert [tool["name"] for tool in (await search(client, "route"))["tools"]] == ["maps_route"]

            names: list[str] = []
            cursor = ""
            while True:
                page = await search(client, "", cursor)
                assert len(page["tools"]) <= 25 and page["total"] == 203
                names += [tool["name"] for tool in page["tools"]]
                cursor = page["nextCursor"]
                if not cursor:
                    break
            assert len(names) == len(set(names)) == 203 and "search_tools" not in names

            refused = await client.call_tool("search_tools", {"query": "x", "cursor": "elsewhere"})
            assert refused.is_error and "cursor must be a nextCursor" in refused.content[0].text  # type: ignore[union-attr]

            listed = [tool.name async for tool in client.iter_tools()]
            assert len(listed) == 204  # the full list, the search tool in it


def test_page_size_is_checked() -> None:
    with pytest.raises(ValueError, match="page_size must be"):
        add_tool_search(trio_mcp.Server("s"), page_size=0)
