"""The end of a session ends its tasks (2025-11-25 task-augmented ``tools/call``) on every process: two HTTP
servers share a real redis-server (session directory, events and task records), a task of the session runs on
one of them, and the client ends the session with DELETE on the other one or on the same one. The task's handler
is cancelled, and its record, which every process answers from, reads ``cancelled``. A process that let its idle
copy of the session go still runs the session's task, and still ends it, also when the session's record expired
rather than being ended. One process without a directory keeps the same rule."""

from __future__ import annotations

import json

import pytest
import trio
from scale_peers import RedisServer
from test_roaming_end import Held, delete, open_session, post, read_all, two_servers
from transport_helpers import INITIALIZED
from waiting import wait_until

from trio_mcp import Server
from trio_mcp._core.tasks import TaskRecord
from trio_mcp.scale import RedisClient, RedisTaskStore
from trio_mcp.server import TaskManager, TaskStore
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports.streamable_http import HttpTransportOptions

TASK_CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wait", "task": {}}}


async def start_task(http: HttpClient, url: str, session: str) -> str:
    """Call ``wait`` as a task in ``session`` on ``url``; the task's id (the call is answered at once)."""
    answer = json.loads(await read_all(await post(http, url, TASK_CALL, session)))
    return str(answer["result"]["task"]["taskId"])


async def final_record(store: TaskStore, task_id: str) -> TaskRecord:
    """The task's record once it is final (another process writes it: polled, bounded)."""

    async def final() -> TaskRecord | None:
        record = await store.load(task_id)
        return record if record is not None and record.terminal else None

    return await wait_until(final, within=5)


@pytest.mark.parametrize(
    "runs_on",
    ["the other process", "the other process, idle there", "the other process, idle, deaf", "the same process"],
)
async def test_a_delete_cancels_the_session_s_tasks_wherever_they_run(redis_server: RedisServer, runs_on: str) -> None:
    """The session opens on a; a task of it runs on b (or on a); DELETE on a. The task's handler is cancelled at
    once, and its shared record reads cancelled because the session ended. "idle there": b let its copy of the
    session go before the DELETE (a task is no traffic), as it does between a client's requests; "deaf": and the
    end published over Redis is lost for b, which finds the session's record gone at its next sweep."""
    held = Held(as_task=True)
    idle = runs_on.startswith("the other process, idle")
    with trio.fail_after(30):
        async with (
            two_servers(redis_server, held, json_response=True, session_idle_timeout=0.2 if idle else 3600) as [
                (a, _),
                (b, on_b),
            ],
            HttpClient() as http,
            RedisClient(redis_server.url) as redis,
        ):
            session = await open_session(http, a)
            for url in (a, b):
                assert await read_all(await post(http, url, INITIALIZED, session)) == b""
            runs_here = a if runs_on == "the same process" else b
            task_id = await start_task(http, runs_here, session)
            await held.started.wait_for(1)
            if idle:
                await wait_until(lambda: not held.servers[1].connections, within=5)  # b's copy was let go
                assert held.cancelled.count == 0  # letting an idle copy go is no end: the task runs on
            on_b.deaf = runs_on.endswith("deaf")
            assert await delete(http, a, session) == 200
            with trio.fail_after(5):  # now, not when the task would have ended on its own (never)
                await held.cancelled.wait_for(1)
            record = await final_record(RedisTaskStore(redis), task_id)
            assert (record.status, record.status_message) == ("cancelled", "the session ended")


async def test_a_session_whose_record_expired_ends_its_tasks(redis_server: RedisServer) -> None:
    """No request of the session comes for longer than its record lives in Redis, while its task runs on b: both
    copies idle out, the record expires, and b, finding it gone, cancels the task (the session is gone for the
    client too). Until then the task runs on."""
    held = Held(as_task=True)
    with trio.fail_after(30):
        async with (
            two_servers(redis_server, held, ttl=1.0, json_response=True, session_idle_timeout=0.2) as [(a, _), (b, _)],
            HttpClient() as http,
            RedisClient(redis_server.url) as redis,
        ):
            session = await open_session(http, a)
            assert await read_all(await post(http, a, INITIALIZED, session)) == b""
            task_id = await start_task(http, b, session)
            await held.started.wait_for(1)
            await wait_until(lambda: not any(server.connections for server in held.servers), within=5)
            assert held.cancelled.count == 0  # both copies let go: no end yet
            with trio.fail_after(5):  # the record's ttl, then one sweep of b
                await held.cancelled.wait_for(1)
            record = await final_record(RedisTaskStore(redis), task_id)
            assert (record.status, record.status_message) == ("cancelled", "the session ended")
            gone = await post(http, a, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, session)
            assert gone.status == 404
            await read_all(gone)


async def test_a_delete_cancels_the_session_s_tasks_on_one_process() -> None:
    """The same rule without a session directory: DELETE cancels the session's task, recorded cancelled."""
    held = Held(as_task=True)
    server = Server("one", tasks=TaskManager())
    held.serve_on(server)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            options = HttpTransportOptions(json_response=True)
            port = await nursery.start(
                lambda task_status: server.serve_http("127.0.0.1", 0, options=options, task_status=task_status)
            )
            url = f"http://127.0.0.1:{port}/mcp"
            session = await open_session(http, url)
            assert await read_all(await post(http, url, INITIALIZED, session)) == b""
            task_id = await start_task(http, url, session)
            await held.started.wait_for(1)
            assert await delete(http, url, session) == 200
            with trio.fail_after(5):
                await held.cancelled.wait_for(1)
            record = await final_record(server.tasks.store, task_id)
            assert (record.status, record.status_message) == ("cancelled", "the session ended")
            nursery.cancel_scope.cancel()
