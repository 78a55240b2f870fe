"""A long legacy-era HTTP session keeps only its open streams: its memory stays flat however many calls it makes,
a cancelled call's stream ends and leaves nothing behind, and a stream already answered can still be resumed from
what the event store kept (real sockets)."""

from __future__ import annotations

import contextvars
import gc
import json
import tracemalloc
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp import Context, Server
from trio_mcp.transports._client.h11client import ClientResponse, HttpClient
from trio_mcp.transports.http import HttpTransportOptions, MemoryEventStore
from trio_mcp.types import TextContent

from test_http_resumption import read_events  # isort: skip
from transport_helpers import POST_HEADERS, open_raw_session  # isort: skip

VERSION = "2025-11-25"


async def post(
    http: HttpClient, url: str, message: Any, session: str | None = None, version: str = VERSION
) -> ClientResponse:
    headers = POST_HEADERS + ([("mcp-session-id", session), ("mcp-protocol-version", version)] if session else [])
    return await http.request("POST", url, headers=headers, body=json.dumps(message).encode())


async def open_session(http: HttpClient, url: str, version: str = VERSION) -> str:
    return dict(await open_raw_session(http, url, version))["mcp-session-id"]


async def serve_and_open(
    server: Server, http: HttpClient, nursery: trio.Nursery, version: str = VERSION, **options: Any
) -> tuple[str, str]:
    """Serve ``server`` over HTTP on 127.0.0.1 (``options``: its ``HttpTransportOptions``) and open a session there:
    its URL and session id."""
    settings = HttpTransportOptions(**options)
    port = await nursery.start(partial(server.serve_http, "127.0.0.1", 0, options=settings))
    url = f"http://127.0.0.1:{port}/mcp"
    return url, await open_session(http, url, version)


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
            url, session = await serve_and_open(server, http, nursery)
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
            url, session = await serve_and_open(server, http, nursery)
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


def blocking_server() -> tuple[Server, list[trio.Event]]:
    """A server whose ``block`` tool reports progress once (its stream's first event) and then waits until it is
    cancelled; it sets the last event of the list when it starts. Its ``echo`` tool answers at once."""
    server = Server("cancelled")
    started = [trio.Event()]

    @server.tool()
    async def echo(text: str) -> str:
        return text

    @server.tool()
    async def block(ctx: Context) -> str:
        started[-1].set()
        await ctx.report_progress(1)
        await trio.sleep_forever()
        return "never"

    return server, started


def held_by(server: Server) -> tuple[set[str], int, int]:
    """What the server's one HTTP session holds: its open streams, its request owners, its requests in flight."""
    (connection,) = server.connections
    session = connection.control  # the transport's HttpSession
    return set(session.streams), len(session.owner), connection.session.statistics().inbound_in_flight


async def check_leaves_nothing_behind(
    server: Server, cancelled_call: Callable[[int], Awaitable[None]], count: int
) -> None:
    """Make ``count`` cancelled calls after a first one, and check that the server is left holding what it held
    after the first: the session's GET stream alone, no request owner or request, no more tasks."""
    await cancelled_call(1)
    await trio.testing.wait_all_tasks_blocked()
    tasks = trio.lowlevel.current_statistics().tasks_living
    for request_id in range(2, count + 2):
        await cancelled_call(request_id)
    await trio.testing.wait_all_tasks_blocked()
    assert held_by(server) == ({"0"}, 0, 0)
    assert trio.lowlevel.current_statistics().tasks_living <= tasks


async def test_a_cancelled_call_ends_its_stream_and_leaves_nothing_behind() -> None:
    """1,000 calls cancelled with notifications/cancelled in one session: each call's stream ends without an answer
    (half are read to their end, half closed by the client at once), and the session is left holding its GET
    stream alone: no stream, request owner, request or task stays behind."""
    server, _ = blocking_server()
    with trio.fail_after(120):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            url, session = await serve_and_open(server, http, nursery)

            async def cancelled_call(request_id: int) -> None:
                call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
                call["params"] = {"name": "block", "arguments": {}, "_meta": {"progressToken": request_id}}
                response = await post(http, url, call, session)
                started, _ = await read_events(response, 2)  # the priming event, then the progress
                assert started[-1][1]["method"] == "notifications/progress"
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
                accepted = await post(http, url, cancel, session)
                assert accepted.status == 202
                await accepted.aclose()
                if request_id % 2:
                    with trio.fail_after(10):
                        rest, ended = await read_events(response, None)
                    assert ended and rest == []  # no answer to a cancelled request, and the stream ends
                await response.aclose()

            await check_leaves_nothing_behind(server, cancelled_call, 1000)
            nursery.cancel_scope.cancel()


async def test_a_client_cancelling_calls_leaves_nothing_behind() -> None:
    """The same through the client: each call cancelled by its caller's scope once the tool runs."""
    server, started = blocking_server()
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve_http, "127.0.0.1", 0)
            async with trio_mcp.open_http_client(f"http://127.0.0.1:{port}/mcp", protocol_version=VERSION) as client:

                async def cancelled_call(_: int) -> None:
                    started.append(trio.Event())
                    with trio.CancelScope() as scope:
                        async with trio.open_nursery() as calls:
                            calls.start_soon(client.call_tool, "block", {})
                            await started[-1].wait()
                            scope.cancel()
                    assert scope.cancelled_caught

                await check_leaves_nothing_behind(server, cancelled_call, 200)
            nursery.cancel_scope.cancel()


async def test_a_call_failing_as_it_is_cancelled_ends_its_stream_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A tool whose cleanup fails while it is cancelled (an error beside the ``Cancelled``, from a nursery): its
    stream ends without an answer, the failure is logged, and the session's next call on it is answered."""
    server = Server("messy")
    started = trio.Event()

    @server.tool()
    async def echo(text: str) -> str:
        return text

    @server.tool()
    async def messy() -> str:
        async def cleanup_fails() -> None:
            try:
                await trio.sleep_forever()
            finally:
                raise RuntimeError("cleanup failed")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cleanup_fails)
            started.set()
            await trio.sleep_forever()
        return "never"

    with trio.fail_after(20):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            url, session = await serve_and_open(server, http, nursery)
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "messy", "arguments": {}}}
            response = await post(http, url, call, session)
            await started.wait()
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
            await (await post(http, url, cancel, session)).aclose()
            events, ended = await read_events(response, None)
            assert ended and [message for _, message in events if message is not None] == []
            await response.aclose()
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
            call["params"] = {"name": "echo", "arguments": {"text": "still here"}}
            events, _ = await read_events(await post(http, url, call, session), None)
            assert events[-1][1]["result"]["content"][0]["text"] == "still here"
            await trio.testing.wait_all_tasks_blocked()
            assert held_by(server) == ({"0"}, 0, 0)
            nursery.cancel_scope.cancel()
    assert any("cleanup failed" in repr(record.exc_info) for record in caplog.records)


async def test_a_cancelled_call_in_json_response_mode_is_answered_202() -> None:
    """With JSON bodies instead of streams, a cancelled call's POST gets 202 and no body (nothing to answer)."""
    server, started = blocking_server()
    with trio.fail_after(20):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            url, session = await serve_and_open(server, http, nursery, json_response=True)

            async def cancel_once_started() -> None:
                await started[-1].wait()
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
                await (await post(http, url, cancel, session)).aclose()

            nursery.start_soon(cancel_once_started)
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "block", "arguments": {}}}
            answered = await post(http, url, call, session)
            assert answered.status == 202
            assert await answered.receive_some() == b""
            assert held_by(server) == ({"0"}, 0, 0)
            nursery.cancel_scope.cancel()


async def test_a_batch_with_a_cancelled_member_ends_its_stream_with_the_other_answers() -> None:
    """2025-03-26 batches: the stream of a batch whose member was cancelled ends with the answers of the others."""
    server, started = blocking_server()
    version = "2025-03-26"
    with trio.fail_after(20):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            url, session = await serve_and_open(server, http, nursery, version)
            batch = [
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "block", "arguments": {}}},
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "x"}},
                },
            ]
            response = await post(http, url, batch, session, version)
            await started[-1].wait()
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
            await (await post(http, url, cancel, session, version)).aclose()
            events, ended = await read_events(response, None)
            assert ended
            answers = [message for _, message in events if message is not None and "method" not in message]
            assert answers == [[{"jsonrpc": "2.0", "id": 2, "result": answers[0][0]["result"]}]]
            assert answers[0][0]["result"]["content"][0]["text"] == "x"
            assert held_by(server) == ({"0"}, 0, 0)
            nursery.cancel_scope.cancel()


async def test_changes_made_while_the_get_stream_is_away_are_resumed_once_in_order() -> None:
    """One process: the client leaves its GET stream, two resources change, it comes back with ``Last-Event-ID``
    and gets both changes once, in order, then the next one live."""
    server = Server("changes")

    @server.resource("note://{name}")
    def note(name: str) -> str:
        return name

    def updated(events: list[tuple[str, Any]]) -> list[str]:
        return [message["params"]["uri"] for _, message in events if message]

    with trio.fail_after(30):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            url, session = await serve_and_open(server, http, nursery)
            for request_id, name in enumerate("abc", 1):
                subscribe = {"jsonrpc": "2.0", "id": request_id, "method": "resources/subscribe"}
                await read_events(
                    await post(http, url, subscribe | {"params": {"uri": f"note://{name}"}}, session), None
                )
            headers = [("accept", "text/event-stream"), ("mcp-session-id", session), ("mcp-protocol-version", VERSION)]
            listening = await http.request("GET", url, headers=headers)
            server.notify_resource_updated("note://a")
            seen, _ = await read_events(listening, 1)
            assert updated(seen) == ["note://a"]
            await listening.aclose()
            server.notify_resource_updated("note://b")
            server.notify_resource_updated("note://c")
            resumed = await http.request("GET", url, headers=[*headers, ("last-event-id", seen[-1][0])])
            replayed, _ = await read_events(resumed, 2)
            assert updated(replayed) == ["note://b", "note://c"]
            server.notify_resource_updated("note://a")
            live, _ = await read_events(resumed, 1)
            assert updated(live) == ["note://a"]
            nursery.cancel_scope.cancel()


MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_a_call_does_not_see_what_an_earlier_call_set_in_its_context(version: str) -> None:
    """Calls on one keep-alive connection, in a session or stateless, each start from the connection's context: a
    context variable one handler sets is not seen by the next."""
    server = Server("marks")

    @server.tool()
    async def mark(value: str) -> str:
        before = MARK.get()
        MARK.set(value)
        return before

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve_http, "127.0.0.1", 0)
            url = f"http://127.0.0.1:{port}/mcp"
            async with trio_mcp.open_http_client(url, protocol_version=version) as client:
                seen = [(await client.call_tool("mark", {"value": value})).content[0] for value in ("a", "b")]
            nursery.cancel_scope.cancel()
    assert [content.text for content in seen if isinstance(content, TextContent)] == ["unset", "unset"]


class HeldStore(MemoryEventStore):
    """The default store, except that one append waits once ``hold`` is armed: the moment between a POST finding
    its session and handing its request over, made long enough to end the session in."""

    def __init__(self) -> None:
        super().__init__()
        self.hold: trio.Event | None = None
        self.reached = trio.Event()

    async def append(self, session_id: str, stream_id: str, data: str) -> str:
        if self.hold is not None:
            hold, self.hold = self.hold, None
            self.reached.set()
            await hold.wait()
        return await super().append(session_id, stream_id, data)


async def test_a_post_whose_session_ends_meanwhile_is_told_the_session_is_gone() -> None:
    """A DELETE (here, or on another process through the directory) that ends the session while one of its POSTs is
    on the way in: that POST is answered 404 like any POST to an ended session, and the server goes on serving."""
    store = HeldStore()
    server = Server("ending")
    ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    with trio.fail_after(10):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            port = await nursery.start(
                partial(server.serve_http, "127.0.0.1", 0, options=HttpTransportOptions(event_store=store))
            )
            url = f"http://127.0.0.1:{port}/mcp"
            session = await open_session(http, url)
            answered: list[ClientResponse] = []
            done = trio.Event()

            async def ping_the_session() -> None:
                answered.append(await post(http, url, ping, session))
                done.set()

            store.hold = hold = trio.Event()
            nursery.start_soon(ping_the_session)
            await store.reached.wait()  # the POST found its session and is recording its stream's first event
            deleted = await http.request(
                "DELETE", url, headers=[("mcp-session-id", session), ("mcp-protocol-version", VERSION)]
            )
            assert deleted.status == 200
            hold.set()
            await done.wait()
            assert answered[0].status == 404
            assert await open_session(http, url)  # a new session on the same server
            nursery.cancel_scope.cancel()
