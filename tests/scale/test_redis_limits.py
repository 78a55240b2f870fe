"""The shipped middleware across processes: a rate limit whose buckets are in a real redis-server holds across
two servers (each its own supervisor, as two machines would run them), and a response cache in one is dropped
when the other announces a change through the Redis fan-out."""

from __future__ import annotations

import pytest
import trio
from scale_peers import RedisServer, supervisor

import trio_mcp
from trio_mcp.errors import RATE_LIMITED


def first_text(result: trio_mcp.types.ReadResourceResult) -> str:
    return result.contents[0].text  # type: ignore[union-attr]


async def test_a_rate_limit_and_a_cache_shared_by_two_machines(redis_server: RedisServer) -> None:
    env = {"TRIO_MCP_TEST_REDIS_URL": redis_server.url}
    updated = trio.Event()
    with trio.fail_after(60):
        async with (
            supervisor("limits_app:server", "--workers", "1", env=env) as (first, _),
            supervisor("limits_app:server", "--workers", "1", env=env) as (second, _),
            trio_mcp.open_http_client(
                first, protocol_version="2025-11-25", on_resource_updated=lambda uri: updated.set()
            ) as one,
            trio_mcp.open_http_client(second, protocol_version="2026-07-28") as other,
        ):
            pids = {(await one.call_tool("limited", {})).structured_content["result"] for _ in range(2)}  # type: ignore[index]
            pids.add((await other.call_tool("limited", {})).structured_content["result"])  # type: ignore[index]
            assert len(pids) == 2  # two processes took from one bucket of three
            for client in (one, other):
                with pytest.raises(trio_mcp.McpError) as refused:
                    await client.call_tool("limited", {})
                assert refused.value.code == RATE_LIMITED and refused.value.data["retryAfter"] > 900

            await one.subscribe_resource("shared://note")
            assert first_text(await one.read_resource("shared://note")) == ""
            await other.call_tool("write", {"text": "quiet", "announce": False})
            assert first_text(await one.read_resource("shared://note")) == ""  # cached, and nobody said otherwise
            await other.call_tool("write", {"text": "announced", "announce": True})
            await updated.wait()
            assert first_text(await one.read_resource("shared://note")) == "announced"
