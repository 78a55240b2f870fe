"""Clients over HTTP and WebSocket against our own servers on 127.0.0.1: the era each finds, the fallbacks,
and a legacy-era client and a modern client using one server at the same time."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp import Context, HttpTransportOptions, Server
from trio_mcp.types import Root, TextContent

from waiting import HeldCalls  # isort: skip


def make_server() -> Server:
    server = Server("remote", version="2.0.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    @server.tool()
    async def where(ctx: Context) -> str:
        """Ask the client for its roots."""
        return ",".join(root.uri for root in await ctx.list_roots())

    return server


async def roots() -> list[Root]:
    return [Root(uri="file:///here")]


async def serve(nursery: trio.Nursery, server: Server, **options: Any) -> str:
    port = await nursery.start(
        lambda task_status: server.serve_http(
            "127.0.0.1", 0, options=HttpTransportOptions(**options), task_status=task_status
        )
    )
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize(
    ("version", "era", "negotiated"),
    [
        ("auto", "modern", "2026-07-28"),
        ("2025-11-25", "legacy", "2025-11-25"),
        ("2025-03-26", "legacy", "2025-03-26"),
        ("2024-11-05", "legacy", "2024-11-05"),
    ],
)
async def test_http_client_in_every_era(nursery: trio.Nursery, version: str, era: str, negotiated: str) -> None:
    base = await serve(nursery, make_server())
    url = f"{base}/sse" if version == "2024-11-05" else f"{base}/mcp"
    with trio.fail_after(10):
        async with trio_mcp.open_http_client(url, protocol_version=version, roots=roots) as client:
            assert client.era == era and client.protocol_version == negotiated
            assert client.server_info.name == "remote"
            assert (await client.call_tool("echo", {"text": "hé"})).content == [TextContent(text="hé")]
            assert (await client.call_tool("where")).content == [TextContent(text="file:///here")]


async def test_auto_falls_back_to_sessions_on_a_handshake_only_server(nursery: trio.Nursery) -> None:
    base = await serve(nursery, make_server(), stateless=False)
    with trio.fail_after(10):
        async with trio_mcp.open_http_client(f"{base}/mcp") as client:
            assert client.era == "legacy" and client.protocol_version == "2025-11-25"
            assert (await client.call_tool("echo", {"text": "x"})).content == [TextContent(text="x")]


async def test_cancelling_a_stateless_call_closes_its_stream_and_cancels_the_handler(nursery: trio.Nursery) -> None:
    server = make_server()
    held = HeldCalls(server)
    base = await serve(nursery, server)
    with trio.fail_after(10):
        async with trio_mcp.open_http_client(f"{base}/mcp") as client:
            async with trio.open_nursery() as calls:
                calls.start_soon(client.call_tool, "wait")
                await held.started.wait_for(1)
                calls.cancel_scope.cancel()
            await held.cancelled.wait_for(1)
            assert (await client.call_tool("echo", {"text": "after"})).content == [TextContent(text="after")]


async def test_a_handshake_client_and_a_stateless_client_share_one_server(nursery: trio.Nursery) -> None:
    server = make_server()
    base = await serve(nursery, server)
    with trio.fail_after(10):
        async with (
            trio_mcp.open_http_client(f"{base}/mcp", protocol_version="2025-06-18", roots=roots) as old,
            trio_mcp.open_http_client(f"{base}/mcp", roots=roots) as new,
        ):
            assert (old.era, new.era) == ("legacy", "modern")
            results: dict[str, Any] = {}

            async def use(name: str, client: trio_mcp.Client) -> None:
                for n in range(5):
                    assert (await client.call_tool("echo", {"text": f"{name}{n}"})).content == [
                        TextContent(text=f"{name}{n}")
                    ]
                results[name] = (await client.call_tool("where")).content

            async with trio.open_nursery() as both:
                both.start_soon(use, "old", old)
                both.start_soon(use, "new", new)
            assert results == {"old": [TextContent(text="file:///here")], "new": [TextContent(text="file:///here")]}
            changes: list[Any] = []
            async with new.listen(tools=True) as subscription:
                server.add_tool(lambda: "x", name="late", description="late")
                changes.append(await subscription.receive())
            assert changes[0].kind == "tools"


async def test_websocket_client(nursery: trio.Nursery) -> None:
    server = make_server()
    port = await nursery.start(lambda task_status: server.serve_websocket("127.0.0.1", 0, task_status=task_status))
    with trio.fail_after(10):
        async with trio_mcp.open_websocket_client(f"ws://127.0.0.1:{port}/", roots=roots) as client:
            assert client.era == "modern"
            assert (await client.call_tool("where")).content == [TextContent(text="file:///here")]
        async with trio_mcp.open_websocket_client(
            f"ws://127.0.0.1:{port}/", protocol_version="2025-11-25", roots=roots
        ) as client:
            assert (await client.call_tool("where")).content == [TextContent(text="file:///here")]
