"""The HTTP transport with ``RedisEventStore``: a legacy-era stream that breaks mid-call is resumed with
``Last-Event-ID`` from what Redis kept, every event exactly once and in order (real redis-server, real sockets)."""

from __future__ import annotations

import json
from typing import Any

import trio
from scale_peers import RedisServer
from transport_helpers import open_raw_session

from trio_mcp import Context, Server
from trio_mcp._core.sse import SSEDecoder
from trio_mcp.scale import RedisClient, RedisEventStore
from trio_mcp.transports._client.h11client import ClientResponse, HttpClient
from trio_mcp.transports.streamable_http import HttpTransportOptions

VERSION = "2025-11-25"
STEPS = 60


def make_server() -> Server:
    server = Server("resumable")

    @server.tool()
    async def count(ctx: Context) -> str:
        """Report STEPS progress events, a little apart, then finish."""
        for step in range(1, STEPS + 1):
            await ctx.report_progress(step, STEPS)
            await trio.sleep(0.005)
        return "counted"

    return server


async def events_of(response: ClientResponse, decoder: SSEDecoder, *, until: int | None = None) -> list[Any]:
    """``(event id, message)`` pairs of an SSE body, stopping after ``until`` messages if given."""
    found: list[Any] = []
    while until is None or len(found) < until:
        chunk = await response.receive_some()
        events = decoder.receive_data(chunk) if chunk else decoder.receive_eof()
        found += [(event.id, json.loads(event.data)) for event in events if event.data]
        if not chunk:
            break
    return found


async def test_a_broken_stream_resumes_from_redis_exactly_once_in_order(redis_server: RedisServer) -> None:
    async with RedisClient(redis_server.url) as redis, HttpClient() as http, trio.open_nursery() as nursery:
        options = HttpTransportOptions(event_store=RedisEventStore(redis))
        port = await nursery.start(
            lambda task_status: make_server().serve_http("127.0.0.1", 0, options=options, task_status=task_status)
        )
        url = f"http://127.0.0.1:{port}/mcp"

        async def post(message: Any, headers: dict[str, str]) -> ClientResponse:
            all_headers = {
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                **headers,
            }
            return await http.request("POST", url, headers=list(all_headers.items()), body=json.dumps(message).encode())

        with trio.fail_after(30):
            headers = dict(await open_raw_session(http, url, VERSION))

            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "count", "arguments": {}, "_meta": {"progressToken": "p"}},
            }
            response = await post(call, headers)
            first = await events_of(response, SSEDecoder(), until=10)
            await response.aclose()  # the connection breaks mid-stream (not a cancellation in this era)
            last_id = first[-1][0]
            assert "/" in last_id  # an id RedisEventStore made
            await trio.sleep(0.1)  # events go on being recorded while nobody reads
            resumed = await http.request(
                "GET", url, headers=[*headers.items(), ("accept", "text/event-stream"), ("last-event-id", last_id)]
            )
            assert resumed.status == 200
            rest = await events_of(resumed, SSEDecoder())

        messages = [message for _, message in first + rest]
        progress = [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"]
        assert progress == list(range(1, STEPS + 1))
        assert messages[-1]["id"] == 2 and messages[-1]["result"]["content"][0]["text"] == "counted"
        ids = [event_id for event_id, _ in first + rest if event_id]
        assert len(ids) == len(set(ids))
        nursery.cancel_scope.cancel()
