"""A legacy-era session answering in JSON bodies (``json_response=True``) while a call is in flight: its progress
goes on the GET stream, it keeps the session from being reaped as idle, a DELETE from another connection ends
it, a client that leaves before the answer leaves nothing behind, a graceful stop lets it finish, and its
deadline passing answers it with the error (real sockets)."""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.testing

from trio_mcp import Server
from trio_mcp.errors import DEADLINE_EXCEEDED
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports.http import Drain
from trio_mcp.types import META_DEADLINE

from test_http_resumption import read_events  # isort: skip
from test_http_session_streams import VERSION, blocking_server, held_by, post, serve_and_open  # isort: skip

BLOCK = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "block", "arguments": {}, "_meta": {"progressToken": "p"}},
}


async def serve_in_json(server: Server, http: HttpClient, nursery: trio.Nursery, **options: Any) -> tuple[str, str]:
    """Serve ``server`` answering in JSON bodies on 127.0.0.1, and open a session there: its URL and session id."""
    return await serve_and_open(server, http, nursery, json_response=True, **options)


async def test_progress_goes_on_the_get_stream_and_a_delete_ends_the_call() -> None:
    server, started = blocking_server()
    with trio.fail_after(20):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            url, session = await serve_in_json(server, http, nursery)
            headers = [("accept", "text/event-stream"), ("mcp-session-id", session), ("mcp-protocol-version", VERSION)]
            standalone = await http.request("GET", url, headers=headers)
            answered: list[int] = []

            async def call() -> None:
                response = await post(http, url, BLOCK, session)
                answered.append((response.status, json.loads(await response.read())))

            nursery.start_soon(call)
            await started[-1].wait()
            (event,) = [message for _, message in (await read_events(standalone, 1))[0] if message]
            assert event["method"] == "notifications/progress" and event["params"]["progressToken"] == "p"
            assert not answered
            delete = [("mcp-session-id", session), ("mcp-protocol-version", VERSION)]
            await (await http.request("DELETE", url, headers=delete)).aclose()
            await trio.testing.wait_all_tasks_blocked()
            assert not server.connections
            ((status, body),) = answered
            assert status == 404 and body["id"] == 1 and body["error"]["message"] == "Session not found"
            nursery.cancel_scope.cancel()


async def test_a_call_in_flight_keeps_the_session_from_being_reaped() -> None:
    server, started = blocking_server()
    with trio.fail_after(20):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            url, session = await serve_in_json(server, http, nursery, session_idle_timeout=0.1)

            async def cancel_later() -> None:
                await started[-1].wait()
                await trio.sleep(0.5)  # several idle timeouts, and reaper passes, with the call in flight
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
                await (await post(http, url, cancel, session)).aclose()

            nursery.start_soon(cancel_later)
            answered = await post(http, url, BLOCK, session)
            assert answered.status == 202
            await answered.aclose()
            assert held_by(server) == ({"0"}, 0, 0)
            nursery.cancel_scope.cancel()


async def test_a_client_leaving_before_its_answer_leaves_nothing_behind() -> None:
    """The handler runs to its end (a dropped response is not a cancellation in this era); its answer is dropped."""
    server = Server("left")
    started, release, finished = trio.Event(), trio.Event(), trio.Event()

    @server.tool()
    async def wait() -> str:
        started.set()
        await release.wait()
        finished.set()
        return "done"

    with trio.fail_after(20):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            url, session = await serve_in_json(server, http, nursery)
            await trio.testing.wait_all_tasks_blocked()
            tasks = trio.lowlevel.current_statistics().tasks_living

            async def leave_once_started(scope: trio.CancelScope) -> None:
                await started.wait()
                scope.cancel()

            with trio.CancelScope() as scope:
                nursery.start_soon(leave_once_started, scope)
                call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}
                await post(http, url, call, session)
            assert scope.cancelled_caught
            await trio.testing.wait_all_tasks_blocked()
            assert held_by(server)[1:] == (1, 1)  # still running
            release.set()
            await finished.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert held_by(server) == ({"0"}, 0, 0)
            assert trio.lowlevel.current_statistics().tasks_living <= tasks
            echo = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}
            again = await post(http, url, echo, session)
            assert json.loads(await again.read())["result"]["content"][0]["text"] == "done"
            nursery.cancel_scope.cancel()


async def test_a_drain_lets_a_call_in_flight_finish_and_answer() -> None:
    """A JSON body cannot be resumed elsewhere: a graceful stop waits for the call (within its timeout)."""
    server = Server("drained")
    started, release = trio.Event(), trio.Event()

    @server.tool()
    async def wait() -> str:
        started.set()
        await release.wait()
        return "finished"

    drain = Drain()
    with trio.fail_after(20):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            url, session = await serve_in_json(server, http, nursery, drain=drain)
            drained: list[bool] = []
            done = trio.Event()

            async def release_when_draining() -> None:
                await trio.testing.wait_all_tasks_blocked()
                release.set()

            async def drain_once_started() -> None:
                await started.wait()
                nursery.start_soon(release_when_draining)
                drained.append(await drain(10))
                done.set()

            nursery.start_soon(drain_once_started)
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}
            answered = await post(http, url, call, session)
            assert answered.status == 200
            assert json.loads(await answered.read())["result"]["content"][0]["text"] == "finished"
            await done.wait()
            assert drained == [True]
            nursery.cancel_scope.cancel()


async def test_a_call_whose_deadline_passes_is_answered_with_the_error_and_leaves_nothing() -> None:
    server, started = blocking_server()
    with trio.fail_after(20):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            url, session = await serve_in_json(server, http, nursery)
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "block", "arguments": {}, "_meta": {META_DEADLINE: {"remainingMs": 50}}},
            }
            answered = await post(http, url, call, session)
            assert answered.status == 200
            assert json.loads(await answered.read())["error"]["code"] == DEADLINE_EXCEEDED
            assert started[-1].is_set()
            await trio.testing.wait_all_tasks_blocked()
            assert held_by(server) == ({"0"}, 0, 0)
            nursery.cancel_scope.cancel()
