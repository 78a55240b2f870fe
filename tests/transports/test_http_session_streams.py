"""A long session-era HTTP session keeps only its open streams: its memory stays flat however many calls it makes,
and a stream already answered can still be resumed from what the event store kept (real sockets)."""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

import trio
import trio.testing

from trio_mcp import Context, Server
from trio_mcp.transports._http_client import ClientResponse, HttpClient

from test_http_resumption import read_events  # isort: skip

VERSION = "2025-11-25"
HEADERS = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]


async def post(http: HttpClient, url: str, message: Any, session: str | None = None) -> ClientResponse:
    headers = HEADERS + ([("mcp-session-id", session), ("mcp-protocol-version", VERSION)] if session else [])
    return await http.request("POST", url, headers=headers, body=json.dumps(message).encode())


async def open_session(http: HttpClient, url: str) -> str:
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    opened = await post(http, url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    await read_events(opened, None)
    session = str(opened.headers["mcp-session-id"])
    await (await post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)).aclose()
    return session


async def test_a_session_making_many_calls_keeps_flat_memory() -> None:
    server = Server("calls")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    async def calls(http: HttpClient, url: str, session: str, first: int, count: int) -> None:
        for request_id in range(first, first + count):
            call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
            call["params"] = {"name": "echo", "arguments": {"text": "x"}}
            events, _ = await read_events(await post(http, url, call, session), None)
            assert events[-1][1]["result"]["content"][0]["text"] == "x"

    with trio.fail_after(60):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            port = await nursery.start(server.serve_http, "127.0.0.1", 0)
            url = f"http://127.0.0.1:{port}/mcp"
            session = await open_session(http, url)
            tracemalloc.start()  # before the warm-up, so that what it frees later is counted as freed
            try:
                await calls(http, url, session, 1, 400)  # past the default event store's bounds (256 streams)
                gc.collect()
                before = tracemalloc.get_traced_memory()[0]
                await calls(http, url, session, 1000, 1000)
                gc.collect()
                grown = tracemalloc.get_traced_memory()[0] - before
            finally:
                tracemalloc.stop()
            nursery.cancel_scope.cancel()
    # Each call's stream stayed, about 1.5 KB traced a call; what remains is noise of a few hundred KB either way
    # (free lists, dict and deque blocks), under 250 bytes a call here.
    assert grown / 1000 < 600, f"{grown / 1000:.0f} bytes more per call"


async def test_an_answered_stream_is_resumed_from_the_store() -> None:
    """The client leaves a call's stream after three events; once the call is answered it resumes, and gets the
    rest and the answer, then the end of the stream."""
    server = Server("answered")
    done = trio.Event()

    @server.tool()
    async def count(ctx: Context) -> str:
        for step in range(1, 11):
            await ctx.report_progress(step, 10)
        done.set()
        return "counted"

    with trio.fail_after(20):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            port = await nursery.start(server.serve_http, "127.0.0.1", 0)
            url = f"http://127.0.0.1:{port}/mcp"
            session = await open_session(http, url)
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
            call["params"] = {"name": "count", "arguments": {}, "_meta": {"progressToken": "p"}}
            response = await post(http, url, call, session)
            first, _ = await read_events(response, 4)  # the priming event and three progress events
            await response.aclose()
            await done.wait()
            await trio.testing.wait_all_tasks_blocked()
            resumed = await http.request(
                "GET",
                url,
                headers=[
                    ("mcp-session-id", session),
                    ("mcp-protocol-version", VERSION),
                    ("accept", "text/event-stream"),
                    ("last-event-id", first[-1][0]),
                ],
            )
            assert resumed.status == 200
            rest, ended = await read_events(resumed, None)
            nursery.cancel_scope.cancel()
    assert ended
    messages = [message for _, message in first + rest if message is not None]
    assert [m["params"]["progress"] for m in messages if m.get("method")] == list(range(1, 11))
    assert messages[-1]["id"] == 1 and messages[-1]["result"]["content"][0]["text"] == "counted"
