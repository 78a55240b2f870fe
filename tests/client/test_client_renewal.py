"""The HTTP client rides out what servers do to sessions and streams: a session the server ends (404 from then
on) is renewed once, restoring what the client had set up, the failed request sent again only when that is safe;
a standalone GET stream the server keeps ending is reconnected with backoff."""

from __future__ import annotations

import json
from functools import partial
from typing import AsyncIterator

import pytest
import trio

import trio_mcp
from trio_mcp import Context, Server
from trio_mcp.client import ChangeNotification, SessionLost
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports._h11server import HttpLimits, HttpRequest, HttpResponse, serve_http
from trio_mcp.transports.streamable_http_client import StreamableHttpSessionStream
from trio_mcp.types import LoggingMessageNotificationParams

from transport_helpers import initialize_result  # isort: skip

VERSION = "2025-11-25"


def make_server() -> Server:
    server = Server("renewal")

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """Log once at debug level."""
        await ctx.debug("fine detail")
        return "ok"

    @server.resource("test://doc", mime_type="text/plain")
    def doc() -> str:
        return "v1"

    return server


async def end_session(url: str, client: trio_mcp.Client) -> str:
    """End the client's session the way an operator or a restarted worker would: DELETE it from outside."""
    session_id = client.session.stream.session_id  # type: ignore[attr-defined]
    async with HttpClient() as http:
        response = await http.request(
            "DELETE", url, headers=[("mcp-session-id", session_id), ("mcp-protocol-version", VERSION)]
        )
        await response.aclose()
    assert response.status in (200, 202, 204)
    return str(session_id)


@pytest.fixture
async def served() -> AsyncIterator[tuple[Server, str]]:
    server = make_server()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve_http, "127.0.0.1", 0)
        yield server, f"http://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


async def test_an_ended_session_is_renewed_with_its_log_level_and_subscriptions(served: tuple[Server, str]) -> None:
    server, url = served
    logs: list[LoggingMessageNotificationParams] = []
    updated: list[str] = []
    got_log, got_update = trio.Event(), trio.Event()

    def on_log(message: LoggingMessageNotificationParams) -> None:
        logs.append(message)
        got_log.set()

    def on_resource_updated(uri: str) -> None:
        updated.append(uri)
        got_update.set()

    with trio.fail_after(20):
        async with trio_mcp.open_http_client(
            url, protocol_version=VERSION, on_log=on_log, on_resource_updated=on_resource_updated
        ) as client:
            await client.set_logging_level("debug")
            await client.subscribe_resource("test://doc")
            async with client.listen(tools=True) as changes:
                old = await end_session(url, client)
                tools = await client.list_tools()  # renewed underneath, then sent again: listing is safe
                assert [tool.name for tool in tools.tools] == ["chatty"]
                assert client.session.stream.session_id not in (None, old)  # type: ignore[attr-defined]

                await client.call_tool("chatty")
                await got_log.wait()  # the debug level was restored on the new session
                assert [(m.level, m.data) for m in logs] == [("debug", "fine detail")]

                server.notify_resource_updated("test://doc")  # the subscription was restored
                await got_update.wait()
                assert updated == ["test://doc"]

                server.add_tool(lambda: "x", name="late", description="added after the renewal")
                assert await changes.receive() == ChangeNotification("tools")  # listen() carries on


async def test_a_call_in_flight_when_the_session_ends_is_not_repeated(served: tuple[Server, str]) -> None:
    _, url = served
    with trio.fail_after(20):
        async with trio_mcp.open_http_client(url, protocol_version=VERSION) as client:
            await end_session(url, client)
            with pytest.raises(SessionLost) as info:
                await client.call_tool("chatty")  # reached the server's 404: running it again may not be safe
            assert info.value.method == "tools/call"
            assert isinstance(info.value, trio_mcp.ConnectionClosed)
            assert (await client.call_tool("chatty")).content[0].text == "ok"  # type: ignore[union-attr]


async def test_a_session_ending_twice_is_renewed_each_time(served: tuple[Server, str]) -> None:
    _, url = served
    with trio.fail_after(20):
        async with trio_mcp.open_http_client(url, protocol_version=VERSION) as client:
            seen = set()
            for _ in range(2):
                seen.add(await end_session(url, client))
                await client.ping()
            seen.add(client.session.stream.session_id)  # type: ignore[attr-defined]
            assert len(seen) == 3


async def test_the_standalone_stream_reconnects_with_backoff_until_it_brings_something() -> None:
    # The server ends the GET stream at once, five times, then sends a notification on the sixth: the client
    # keeps reconnecting (it used to give up after three empty reconnections), doubling its wait each time.
    gets: list[float] = []
    changed = trio.Event()

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        if request.method == "GET":
            gets.append(trio.current_time())
            await response.start(200, [("content-type", "text/event-stream")])
            if len(gets) <= 5:
                await response.finish()
                return
            note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            await response.write(b"id: 1\ndata: " + json.dumps(note).encode() + b"\n\n")
            await trio.sleep_forever()
        body = json.loads(await request.read_body())
        if body.get("method") == "initialize":
            result = initialize_result(VERSION, capabilities={"tools": {"listChanged": True}}, server="flaky-get")
            payload = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()
            await response.send(200, [("content-type", "application/json"), ("mcp-session-id", "s-1")], payload)
        else:
            await response.send(202)

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                partial(serve_http, handler, limits=HttpLimits(graceful_shutdown_timeout=0.2))
            )
            url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"
            stream = await StreamableHttpSessionStream.connect(nursery, url, default_retry=0.1, max_reconnect_delay=0.4)
            client = await trio_mcp.connect_client(
                nursery, stream, protocol_version=VERSION, on_list_changed=lambda kind: changed.set()
            )
            await changed.wait()
            await client.aclose()
            nursery.cancel_scope.cancel()
    gaps = [later - earlier for earlier, later in zip(gets, gets[1:])]
    assert len(gets) == 6
    # Waits of 0.1, 0.2, then 0.4 s (doubling, capped at max_reconnect_delay; uncapped the last would be 1.6 s).
    assert all(gap >= wait for gap, wait in zip(gaps, [0.1, 0.2, 0.4, 0.4, 0.4])), gaps
    assert gaps[4] < 1.2, gaps


@pytest.mark.parametrize("retry_after", ["0", "60"])
async def test_a_busy_server_is_asked_again_after_its_retry_after(retry_after: str) -> None:
    # Each request is first answered 503: with a short Retry-After the server did not handle it and asks us
    # to come back, so it is sent again; a long one is the caller's to decide about.
    refused: list[str] = []

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        if request.method != "POST":
            await response.send(405, [("allow", "POST")])
            return
        body = json.loads(await request.read_body())
        if "id" not in body:
            await response.send(202)
            return
        key = f"{body['method']}#{body['id']}"
        if key not in refused:
            refused.append(key)
            await response.send(503, [("retry-after", retry_after), ("content-type", "text/plain")], b"busy")
            return
        if body["method"] == "initialize":
            result = initialize_result(VERSION, capabilities={"tools": {}}, server="busy")
        else:
            result = {"tools": []}
        payload = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()
        await response.send(200, [("content-type", "application/json"), ("mcp-session-id", "s-1")], payload)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                partial(serve_http, handler, limits=HttpLimits(graceful_shutdown_timeout=0.2))
            )
            url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"
            if retry_after == "0":
                async with trio_mcp.open_http_client(url, protocol_version=VERSION) as client:
                    assert (await client.list_tools()).tools == []
                assert [key.split("#")[0] for key in refused] == ["initialize", "tools/list"]
            else:
                started = trio.current_time()
                with pytest.raises(trio_mcp.McpError) as info:
                    async with trio_mcp.open_http_client(url, protocol_version=VERSION):
                        pass  # pragma: no cover
                assert info.value.data["status"] == 503 and trio.current_time() - started < 5
            nursery.cancel_scope.cancel()
