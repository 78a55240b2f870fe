"""Resumption of legacy-era SSE streams over a real socket: whatever the points where the client's
connection drops (before any event, mid-stream, in the middle of a replay, several times), every event of a
call reaches it exactly once and in order, followed by the call's answer."""

from __future__ import annotations

import json
from typing import Any

import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from transport_helpers import POST_HEADERS, open_raw_session

from trio_mcp import Context, Server
from trio_mcp._core.sse import SSEDecoder
from trio_mcp.transports._client.h11client import ClientResponse, HttpClient

STEPS = 30
ACCEPT = "application/json, text/event-stream"


def streaming_server() -> Server:
    server = Server("resumable")

    @server.tool()
    async def stream(steps: int, ctx: Context) -> str:
        """Send a progress and a log notification per step, with small pauses between steps."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, total=steps)
            await ctx.info(f"step {step}")
            await trio.sleep(0.001)
        return "streamed"

    return server


async def read_events(response: ClientResponse, limit: int | None) -> tuple[list[tuple[str, Any]], bool]:
    """Up to ``limit`` data events (id, message) from an SSE response, and whether it ended by itself."""
    decoder = SSEDecoder()
    events: list[tuple[str, Any]] = []
    while limit is None or len(events) < limit:
        chunk = await response.receive_some()
        if not chunk:
            return events, True
        for event in decoder.receive_data(chunk):
            if event.data:
                events.append((event.id, json.loads(event.data)))
            elif event.id:
                events.append((event.id, None))  # a priming event: an id to resume from, nothing to deliver
    return events, False


async def call_with_drops(port: int, drops: list[int]) -> list[Any]:
    """Call ``stream`` over raw HTTP, dropping the connection after ``drops[i]`` events of the i-th response
    and resuming with ``Last-Event-ID``; every message received, in order."""
    url = f"http://127.0.0.1:{port}/mcp"
    async with HttpClient() as http:

        async def post(message: dict[str, Any], headers: dict[str, str]) -> ClientResponse:
            all_headers = {"content-type": "application/json", "accept": ACCEPT, **headers}
            return await http.request("POST", url, headers=list(all_headers.items()), body=json.dumps(message).encode())

        session = dict(await open_raw_session(http, url))
        response = await post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "stream", "arguments": {"steps": STEPS}, "_meta": {"progressToken": "p"}},
            },
            session,
        )
        received: list[Any] = []
        last_id = ""
        for attempt in range(len(drops) + 1):
            # The first response opens with the priming event (counted), a resumed one with the replay.
            limit = drops[attempt] + (attempt == 0) if attempt < len(drops) else None
            events, ended = await read_events(response, limit)
            for event_id, message in events:
                last_id = event_id or last_id
                if message is not None:
                    received.append(message)
            await response.aclose()
            if ended and received and received[-1].get("id") == 1:
                return received
            assert last_id, "a 2025-11-25 stream starts with a priming event id"
            response = await http.request(
                "GET", url, headers=[*session.items(), ("accept", "text/event-stream"), ("last-event-id", last_id)]
            )
            assert response.status == 200
        raise AssertionError("the answer never arrived")


@settings(max_examples=20, deadline=None)
@given(drops=st.lists(st.integers(min_value=0, max_value=25), max_size=6))
def test_every_event_arrives_exactly_once_in_order_across_drops(drops: list[int]) -> None:
    async def scenario() -> list[Any]:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                port = await nursery.start(streaming_server().serve_http, "127.0.0.1", 0)
                received = await call_with_drops(port, drops)
                nursery.cancel_scope.cancel()
        return received

    received = trio.run(scenario)
    progress = [m["params"]["progress"] for m in received if m.get("method") == "notifications/progress"]
    logs = [m["params"]["data"] for m in received if m.get("method") == "notifications/message"]
    assert progress == list(range(1, STEPS + 1))
    assert logs == [f"step {step}" for step in range(1, STEPS + 1)]
    assert [m for m in received if "id" in m] == [received[-1]] and received[-1]["result"]["content"][0][
        "text"
    ] == "streamed"


def test_without_an_event_store_events_carry_no_ids_to_resume_from() -> None:
    from trio_mcp.transports.http import HttpTransportOptions

    async def scenario() -> None:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                options = HttpTransportOptions(event_store=None)
                port = await nursery.start(
                    lambda task_status: streaming_server().serve_http(
                        "127.0.0.1", 0, options=options, task_status=task_status
                    )
                )
                url = f"http://127.0.0.1:{port}/mcp"
                async with HttpClient() as http:
                    session = await open_raw_session(http, url)
                    call = await http.request(
                        "POST",
                        url,
                        headers=POST_HEADERS + session,
                        body=json.dumps(
                            {
                                "jsonrpc": "2.0",
                                "id": 1,
                                "method": "tools/call",
                                "params": {"name": "stream", "arguments": {"steps": 3}, "_meta": {"progressToken": 1}},
                            }
                        ).encode(),
                    )
                    events, ended = await read_events(call, None)
                    assert ended and len(events) == 7 and all(event_id == "" for event_id, _ in events)
                    resume = await http.request(
                        "GET", url, headers=[*session, ("accept", "text/event-stream"), ("last-event-id", "1_1")]
                    )
                    assert resume.status == 400
                nursery.cancel_scope.cancel()

    trio.run(scenario)


async def test_a_slow_call_gets_its_head_and_priming_event_before_its_answer() -> None:
    """The head of a POST's SSE response waits briefly for a quick answer to go with it; a call that takes
    longer gets the head and its priming event (the id to resume from) while it is still running."""
    release = trio.Event()
    server = Server("slow")

    @server.tool()
    async def wait() -> str:
        await release.wait()
        return "released"

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve_http, "127.0.0.1", 0)
            url = f"http://127.0.0.1:{port}/mcp"
            async with HttpClient() as http:
                session = await open_raw_session(http, url)
                call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}
                response = await http.request(
                    "POST", url, headers=[*POST_HEADERS, *session], body=json.dumps(call).encode()
                )
                assert response.status == 200 and not release.is_set()
                (priming,), _ = await read_events(response, 1)
                assert priming[0] and priming[1] is None and not release.is_set()
                release.set()
                events, ended = await read_events(response, None)
                assert ended and [message["result"]["content"][0]["text"] for _, message in events] == ["released"]
            nursery.cancel_scope.cancel()


async def test_a_resumed_stream_carries_the_answer_that_comes_while_it_catches_up() -> None:
    """An answer ready while a resuming client is being sent what it missed goes on that client's response:
    the response does not end without it (it once did, when the answer had left the stream's pending set
    but not yet been written)."""
    from trio_mcp.transports.http import HttpTransportOptions, MemoryEventStore

    class SlowReplay(MemoryEventStore):
        """Once armed, the second replay (the catch-up, made while the stream is held; the first only finds the
        stream) waits until told to, so a call can finish meanwhile."""

        def __init__(self) -> None:
            super().__init__()
            self.replays_to_block: int | None = None
            self.catching_up = trio.Event()
            self.proceed = trio.Event()

        async def replay(self, session_id: str, last_event_id: str) -> tuple[str, list[tuple[str, str]]] | None:
            if self.replays_to_block is not None:
                self.replays_to_block -= 1
                if self.replays_to_block == 0:
                    self.catching_up.set()
                    await self.proceed.wait()
            return await super().replay(session_id, last_event_id)

    store = SlowReplay()
    answer_now = trio.Event()
    server = Server("racy")

    @server.tool()
    async def finish() -> str:
        await answer_now.wait()
        return "finished"

    options = HttpTransportOptions(event_store=store)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: server.serve_http("127.0.0.1", 0, options=options, task_status=task_status)
            )
            url = f"http://127.0.0.1:{port}/mcp"
            async with HttpClient() as http:
                session = await open_raw_session(http, url)
                call = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "finish", "arguments": {}},
                }
                response = await http.request(
                    "POST", url, headers=[*POST_HEADERS, *session], body=json.dumps(call).encode()
                )
                ((priming_id, _),), _ = await read_events(response, 1)
                await response.aclose()  # the connection drops before the answer
                store.replays_to_block = 2
                resume_headers = [*session, ("accept", "text/event-stream"), ("last-event-id", priming_id)]
                async with trio.open_nursery() as resuming:
                    resumed: list[Any] = []

                    async def resume() -> None:
                        get = await http.request("GET", url, headers=resume_headers)
                        resumed.extend(await read_events(get, None))

                    resuming.start_soon(resume)
                    await store.catching_up.wait()  # the server holds the stream while it reads the store
                    answer_now.set()  # the call finishes meanwhile: its answer waits for the stream
                    await trio.testing.wait_all_tasks_blocked()
                    store.proceed.set()
                events, ended = resumed
                assert ended and [message["result"]["content"][0]["text"] for _, message in events] == ["finished"]
            nursery.cancel_scope.cancel()
