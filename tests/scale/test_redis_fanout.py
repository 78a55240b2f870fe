"""Resource-update notifications reach the subscribers of every process through Redis pub/sub: two servers
(each its own supervisor, as two machines would run them) and a real redis-server."""

from __future__ import annotations

import signal

import pytest
import trio
from scale_peers import RedisServer, supervisor

import trio_mcp
from trio_mcp.scale import RedisClient, RedisFanout, RedisUnavailable


async def test_an_update_on_one_machine_reaches_subscribers_on_another(redis_server: RedisServer) -> None:
    env = {"TRIO_MCP_TEST_REDIS_URL": redis_server.url}
    updates: list[str] = []
    arrived = trio.Event()

    def on_update(uri: str) -> None:
        updates.append(uri)
        arrived.set()

    with trio.fail_after(60):
        async with (
            supervisor("fanout_app:server", "--workers", "1", env=env) as (first, _),
            supervisor("fanout_app:server", "--workers", "1", env=env) as (second, _),
        ):
            async with (
                trio_mcp.open_http_client(
                    first, protocol_version="2025-11-25", on_resource_updated=on_update
                ) as subscriber,
                trio_mcp.open_http_client(second, protocol_version="2026-07-28") as other,
            ):
                await subscriber.subscribe_resource("note://a")
                await other.call_tool("touch", {"uri": "note://b"})  # nobody listens for b
                await other.call_tool("touch", {"uri": "note://a"})
                await arrived.wait()
                assert updates == ["note://a"]

                # on the subscriber's own server: delivered once, not again through Redis
                arrived = trio.Event()
                await subscriber.call_tool("touch", {"uri": "note://a"})
                await arrived.wait()
                await trio.sleep(0.3)
                assert updates == ["note://a", "note://a"]

                # Redis restarts: the fan-out subscribes again by itself and delivery resumes
                redis_server.stop(signal.SIGKILL)
                redis_server.start()
                while len(updates) < 3:
                    arrived = trio.Event()
                    try:
                        await other.call_tool("touch", {"uri": "note://a"})
                    except trio_mcp.McpError:
                        pass  # the touching server's own Redis connection may still be reconnecting
                    with trio.move_on_after(0.5):
                        await arrived.wait()
                assert set(updates) == {"note://a"}


async def test_a_list_change_on_one_machine_reaches_the_clients_of_another(redis_server: RedisServer) -> None:
    env = {"TRIO_MCP_TEST_REDIS_URL": redis_server.url}
    changed: list[str] = []
    arrived = trio.Event()

    def on_list_changed(kind: str) -> None:
        changed.append(kind)
        arrived.set()

    with trio.fail_after(60):
        async with (
            supervisor("fanout_app:server", "--workers", "1", env=env) as (first, _),
            supervisor("fanout_app:server", "--workers", "1", env=env) as (second, _),
            trio_mcp.open_http_client(first, protocol_version="2025-11-25", on_list_changed=on_list_changed) as client,
            trio_mcp.open_http_client(second, protocol_version="2026-07-28") as other,
        ):
            await client.list_tools()
            await other.call_tool("retool", {})
            await arrived.wait()
            assert changed == ["tools"]


async def test_the_first_subscription_must_succeed() -> None:
    server = trio_mcp.Server("lonely")
    async with RedisClient("redis://127.0.0.1:1", connect_timeout=0.2, retries=1) as redis:
        with trio.fail_after(10), pytest.raises(RedisUnavailable, match="cannot subscribe.*cannot connect"):
            await RedisFanout(server, redis).run()


async def test_a_stateless_listen_stream_gets_updates_published_by_another_machine(redis_server: RedisServer) -> None:
    env = {"TRIO_MCP_TEST_REDIS_URL": redis_server.url}
    with trio.fail_after(60):
        async with (
            supervisor("fanout_app:server", "--workers", "1", env=env) as (first, _),
            supervisor("fanout_app:server", "--workers", "1", env=env) as (second, _),
        ):
            async with (
                trio_mcp.open_http_client(first, protocol_version="2026-07-28") as listener,
                trio_mcp.open_http_client(second, protocol_version="2026-07-28") as other,
            ):
                async with listener.listen(resource_uris=["note://a"]) as changes:
                    await other.call_tool("touch", {"uri": "note://a"})
                    change = await changes.receive()
                assert (change.kind, change.uri) == ("resource", "note://a")
