"""Transforms on mount: a mounted (or proxied) server's tools renamed, hidden, re-described and filtered, their
arguments renamed, documented, defaulted and hidden; calls mapped back to the original's names."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp.proxy import open_proxy
from trio_mcp.server import ArgumentChange, ToolChange, Transform
from trio_mcp.types import ToolAnnotations

from transport_helpers import connect  # isort: skip


def database(calls: list[dict[str, Any]]) -> trio_mcp.Server:
    child = trio_mcp.Server("database")

    @child.tool()
    async def search(query: str, limit: int = 10) -> str:
        """Search the records."""
        calls.append({"query": query, "limit": limit})
        return f"{limit} records for {query}"

    @child.tool()
    async def delete(record: str) -> str:
        """Delete a record."""
        return "deleted"

    @child.tool(meta={"tags": ["admin"]})
    async def reset() -> str:
        """Empty the database."""
        return "reset"

    @child.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def stats() -> str:
        """Count the records."""
        return "3"

    return child


TRANSFORM = Transform(
    tools={
        "search": ToolChange(
            name="find",
            description="Find records by words.",
            arguments={
                "query": ArgumentChange(name="words", description="What to look for"),
                "limit": ArgumentChange(hidden=True, default=3),
            },
        ),
        "delete": None,
    },
    exclude_tags={"admin"},
)


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("transport", ["memory", "http-session", "http-stateless"])
async def test_mounted_tools_are_shown_changed_and_called_as_the_original(transport: str) -> None:
    calls: list[dict[str, Any]] = []
    child = database(calls)
    parent = trio_mcp.Server("front")
    parent.mount("db", child, transform=TRANSFORM)
    with trio.fail_after(20):
        async with connect(parent, transport) as client:
            tools = {tool.name: tool async for tool in client.iter_tools()}
            assert sorted(tools) == ["db_find", "db_stats"]  # delete hidden, reset filtered out by its tag
            find = tools["db_find"]
            assert find.description == "Find records by words."
            assert find.input_schema["properties"] == {"words": {"type": "string", "description": "What to look for"}}
            assert find.input_schema["required"] == ["words"]

            assert text_of(await client.call_tool("db_find", {"words": "cats"})) == "3 records for cats"
            assert calls == [{"query": "cats", "limit": 3}]
            missing = await client.call_tool("db_find", {})
            assert missing.is_error
            refused = await client.call_tool("db_find", {"words": "cats", "limit": 50})
            assert refused.is_error and calls == [
                {"query": "cats", "limit": 3}
            ]  # a hidden argument is not the caller's
            with pytest.raises(trio_mcp.McpError):
                await client.call_tool("db_delete", {"record": "1"})

            @child.tool()
            async def export() -> str:
                """Added later: mounted as it is."""
                return "exported"

            assert text_of(await client.call_tool("db_export", {})) == "exported"


async def test_a_proxied_server_is_transformed_the_same(nursery: trio.Nursery) -> None:
    calls: list[dict[str, Any]] = []
    upstream = database(calls)
    port = await nursery.start(lambda task_status: upstream.serve_http("127.0.0.1", 0, task_status=task_status))
    with trio.fail_after(20):
        async with open_proxy(url=f"http://127.0.0.1:{port}/mcp") as proxied:
            parent = trio_mcp.Server("front")
            parent.mount("remote", proxied, transform=TRANSFORM)
            async with connect(parent, "memory") as client:
                assert sorted([tool.name async for tool in client.iter_tools()]) == ["remote_find", "remote_stats"]
                assert text_of(await client.call_tool("remote_find", {"words": "dogs"})) == "3 records for dogs"
                assert calls == [{"query": "dogs", "limit": 3}]


def test_a_transform_is_checked_when_mounted() -> None:
    with pytest.raises(ValueError, match="a hidden argument needs a default"):
        ArgumentChange(hidden=True)
    parent = trio_mcp.Server("front")
    with pytest.raises(ValueError, match="does not have: \\['lookup'\\]"):
        parent.mount("db", database([]), transform=Transform(tools={"lookup": None}))
    with pytest.raises(ValueError, match="no argument 'size'"):
        parent.mount(
            "db", database([]), transform=Transform(tools={"search": ToolChange(arguments={"size": ArgumentChange()})})
        )


async def test_transforms_compose_through_two_mounts() -> None:
    calls: list[dict[str, Any]] = []
    parent = trio_mcp.Server("front")
    parent.mount("db", database(calls), transform=TRANSFORM)
    top = trio_mcp.Server("top")
    again = ToolChange(name="lookup", arguments={"words": ArgumentChange(name="terms")})
    top.mount("all", parent, transform=Transform(tools={"db_find": again}))
    async with connect(top, "memory") as client:
        tools = {tool.name: tool async for tool in client.iter_tools()}
        assert list(tools["all_lookup"].input_schema["properties"]) == ["terms"]
        assert text_of(await client.call_tool("all_lookup", {"terms": "owls"})) == "3 records for owls"
        assert calls == [{"query": "owls", "limit": 3}]


async def test_tools_are_filtered_by_tags_and_by_a_test() -> None:
    child = trio_mcp.Server("mixed")

    @child.tool(meta={"tags": ["beta", "search"]})
    async def ours() -> str:
        """Tagged the trio_mcp way."""
        return ""

    @child.tool(meta={"_fastmcp": {"tags": ["beta"]}})
    async def theirs() -> str:
        """Tagged as FastMCP sends them."""
        return ""

    @child.tool(annotations=ToolAnnotations(destructive_hint=True))
    async def untagged() -> str:
        """No tags."""
        return ""

    parent = trio_mcp.Server("front")
    parent.mount("beta", child, transform=Transform(include_tags={"beta"}, exclude_tags={"search"}))
    parent.mount(
        "safe",
        child,
        transform=Transform(keep=lambda tool: not (tool.annotations and tool.annotations.destructive_hint)),
    )
    async with connect(parent, "memory") as client:
        names = sorted([tool.name async for tool in client.iter_tools()])
    assert names == ["beta_theirs", "safe_ours", "safe_theirs"]
    with pytest.raises(TypeError, match="collections of tags"):
        Transform(include_tags="beta")
