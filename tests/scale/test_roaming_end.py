"""The end of a roaming session ends its requests on every process, and only its end does: two HTTP servers (as two
processes would be, each with its own directory and origin) share a real redis-server, a call of the session is
held in flight on one of them, and the client ends the session with DELETE on the other one or on the same one;
meanwhile the session neither expires nor idles out."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, NoReturn

import pytest
import trio
from scale_peers import RedisServer
from transport_helpers import INITIALIZED, initialize_request
from waiting import Arrivals, task_count, wait_until

from trio_mcp import Server
from trio_mcp._core.session_record import SessionRecord
from trio_mcp.scale import RedisClient, RedisEventStore, RedisSessionDirectory, RedisTaskStore
from trio_mcp.server import TaskManager
from trio_mcp.transports._client.h11client import ClientResponse, HttpClient
from trio_mcp.transports.streamable_http import HttpTransportOptions

VERSION = "2025-11-25"
POST_HEADERS = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wait"}}


class Held:
    """The calls of the ``wait`` tool, on whichever server: those that started, and those whose cancel scope was
    cancelled (the tool saw ``trio.Cancelled``); ``servers``, the servers it is served on. With ``as_task`` the tool
    may run as a task (``task_support="optional"``)."""

    def __init__(self, *, as_task: bool = False) -> None:
        self.started = Arrivals()
        self.cancelled = Arrivals()
        self.as_task = as_task
        self.servers: list[Server] = []

    def serve_on(self, server: Server) -> None:
        self.servers.append(server)

        @server.tool(task_support="optional" if self.as_task else None)
        async def wait() -> str:
            """Stay in flight until cancelled."""
            self.started.arrive()
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                self.cancelled.arrive()
                raise
            return "never"


class Watched(RedisSessionDirectory):
    """The directory of one server, showing when it hears the others (``joined``) and each end it was told of
    (``ends``); ``hold_loads`` keeps each record it loads until ``release`` is set, as a slow Redis would."""

    def __init__(self, redis: RedisClient, ttl: float) -> None:
        super().__init__(redis, ttl=ttl)
        self.joined = trio.Event()
        self.ends = Arrivals()
        self.loading = Arrivals()
        self.release: trio.Event | None = None
        #: The sessions each sweep of the endpoint kept (``touch``), one list a sweep.
        self.kept: list[list[str]] = []
        self.sweeps = Arrivals()
        #: Set: the ends published by the others are lost, as for a process cut off from Redis at the time.
        self.deaf = False

    async def touch(self, session_ids: Sequence[str]) -> None:
        await super().touch(session_ids)
        self.kept.append(list(session_ids))
        self.sweeps.arrive()

    async def load(self, session_id: str) -> SessionRecord | None:
        record = await super().load(session_id)
        self.loading.arrive()
        if self.release is not None:
            await self.release.wait()
        return record

    async def run(
        self,
        routed: Callable[[str, Mapping[str, Any]], Awaitable[None]],
        joined: Callable[[], Awaitable[None]],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> NoReturn:
        async def watch_routed(session_id: str, message: Mapping[str, Any]) -> None:
            if self.deaf and message.get("kind") == "end":
                return
            await routed(session_id, message)
            if message.get("kind") == "end":
                self.ends.arrive()

        async def watch_joined() -> None:
            await joined()
            self.joined.set()

        await super().run(watch_routed, watch_joined, task_status=task_status)


@asynccontextmanager
async def two_servers(
    redis_server: RedisServer, held: Held, *, ttl: float = 3600.0, **options: Any
) -> AsyncIterator[list[tuple[str, Watched]]]:
    """Two servers, each with its URL and its directory (records kept ``ttl`` seconds), both hearing the other
    through Redis, and sharing their task records there; ``options`` for their ``HttpTransportOptions``."""
    async with RedisClient(redis_server.url, retries=0, connect_timeout=0.5) as redis, trio.open_nursery() as nursery:
        servers = []
        for _ in range(2):
            server = Server("roaming", tasks=TaskManager(store=RedisTaskStore(redis)))
            held.serve_on(server)
            directory = Watched(redis, ttl)
            transport = HttpTransportOptions(event_store=RedisEventStore(redis), session_directory=directory, **options)
            port = await nursery.start(
                lambda task_status, s=server, o=transport: s.serve_http(
                    "127.0.0.1", 0, options=o, task_status=task_status
                )
            )
            servers.append((f"http://127.0.0.1:{port}/mcp", directory))
        for _, directory in servers:
            await directory.joined.wait()
        yield servers
        nursery.cancel_scope.cancel()


def session_headers(session: str) -> list[tuple[str, str]]:
    return [("mcp-session-id", session), ("mcp-protocol-version", VERSION)]


async def post(http: HttpClient, url: str, message: Any, session: str) -> ClientResponse:
    """The response to a POST of ``message`` in ``session`` (its body not read yet)."""
    body = json.dumps(message).encode()
    return await http.request("POST", url, headers=[*POST_HEADERS, *session_headers(session)], body=body)


async def read_all(response: ClientResponse) -> bytes:
    body = b""
    while chunk := await response.receive_some():
        body += chunk
    return body


async def open_session(http: HttpClient, url: str) -> str:
    opened = await http.request(
        "POST", url, headers=POST_HEADERS, body=json.dumps(initialize_request(VERSION, id=1)).encode()
    )
    await read_all(opened)
    return str(opened.headers["mcp-session-id"])


async def delete(http: HttpClient, url: str, session: str) -> int:
    ended = await http.request("DELETE", url, headers=session_headers(session))
    await read_all(ended)
    return ended.status


@pytest.mark.parametrize("served_by", ["the other process", "the same process"])
async def test_a_delete_cancels_the_session_s_call_wherever_it_runs(redis_server: RedisServer, served_by: str) -> None:
    """The session opens on a; a call of it waits on b (or on a); DELETE on a. The call's cancel scope is
    cancelled at once, the POST's stream ends, and nothing of the session runs on either server any more."""
    held = Held()
    with trio.fail_after(30):
        async with two_servers(redis_server, held) as [(a, _), (b, _)], HttpClient() as http:
            session = await open_session(http, a)
            for url in (a, b):  # each server has served the session, and the client holds a connection to each
                assert await read_all(await post(http, url, INITIALIZED, session)) == b""
            served_on = b if served_by == "the other process" else a
            await trio.testing.wait_all_tasks_blocked()
            tasks_before = task_count()

            async with HttpClient() as calling:
                call = await post(calling, served_on, CALL, session)
                assert call.status == 200
                await held.started.wait_for(1)
                assert await delete(http, a, session) == 200
                with trio.fail_after(5):  # now, not when the call would have ended on its own (never)
                    await held.cancelled.wait_for(1)
                    streamed = await read_all(call)  # the call's stream ends with the session, unanswered
                assert b'"result"' not in streamed

            await wait_until(lambda: task_count() <= tasks_before, within=5)
            gone = await post(http, served_on, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, session)
            assert gone.status == 404
            await read_all(gone)


async def test_a_session_ended_while_another_process_takes_it_over_is_not_served_there(
    redis_server: RedisServer,
) -> None:
    """b is loading the session's record for a call when DELETE on a ends the session, and b hears of it before
    the record arrives: the call is refused (404), never started, and nothing of the session stays on b."""
    held = Held()
    with trio.fail_after(30):
        async with two_servers(redis_server, held) as [(a, _), (b, on_b)], HttpClient() as http:
            session = await open_session(http, a)
            assert await read_all(await post(http, a, INITIALIZED, session)) == b""
            on_b.release = trio.Event()
            async with trio.open_nursery() as nursery:
                responses: list[ClientResponse] = []
                answered = trio.Event()

                async def call() -> None:
                    async with HttpClient() as calling:
                        response = await post(calling, b, CALL, session)
                        await read_all(response)
                        responses.append(response)
                        answered.set()

                nursery.start_soon(call)
                await on_b.loading.wait_for(1)  # b has the record, not yet the session
                assert await delete(http, a, session) == 200
                await on_b.ends.wait_for(1)
                on_b.release.set()
                with trio.fail_after(5):  # answered at once, not served until the call would end (never)
                    await answered.wait()
            assert responses[0].status == 404
            assert held.started.count == 0
            on_b.release = None
            gone = await post(http, b, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, session)
            assert gone.status == 404
            await read_all(gone)


async def test_a_session_with_a_call_in_flight_neither_expires_nor_idles_out(redis_server: RedisServer) -> None:
    """A call of the session waits on b, its only traffic, for longer than the session's record lives in Redis
    and than a session may idle: each sweep of b keeps the record, so a finds the session then (a's own copy,
    idle, was let go meanwhile), and the call is still running, until the DELETE on a cancels it."""
    held = Held()
    ttl = 1.0
    with trio.fail_after(30):
        async with (
            two_servers(redis_server, held, ttl=ttl, session_idle_timeout=0.4) as [(a, _), (b, on_b)],
            HttpClient() as http,
            HttpClient() as calling,
        ):
            session = await open_session(http, a)
            assert await read_all(await post(http, a, INITIALIZED, session)) == b""
            call = await post(calling, b, CALL, session)
            await held.started.wait_for(1)
            called_at = trio.current_time()
            swept = on_b.sweeps.count
            while trio.current_time() < called_at + ttl + 0.3:  # b sweeps every 0.1 s
                await on_b.sweeps.wait_for(on_b.sweeps.count + 1)
            assert all(session in kept for kept in on_b.kept[swept:])  # kept by every sweep
            assert held.cancelled.count == 0  # neither expired nor idled out on b
            pinged = await post(http, a, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, session)
            assert pinged.status == 200  # its record lives: a takes the session over again
            await read_all(pinged)
            assert await delete(http, a, session) == 200
            with trio.fail_after(5):
                await held.cancelled.wait_for(1)
                await read_all(call)


async def test_a_session_waiting_for_a_json_answer_is_not_idle(redis_server: RedisServer) -> None:
    """With JSON responses (no stream is read while the call runs), a call that outlasts the idle timeout is
    not cancelled as if its session were idle: it ends when the session does."""
    held = Held()
    with trio.fail_after(30):
        async with (
            two_servers(redis_server, held, session_idle_timeout=0.2, json_response=True) as [(a, on_a), _],
            HttpClient() as http,
            HttpClient() as calling,
        ):
            session = await open_session(http, a)
            assert await read_all(await post(http, a, INITIALIZED, session)) == b""
            async with trio.open_nursery() as nursery:
                answered: list[ClientResponse] = []

                async def call() -> None:
                    response = await post(calling, a, CALL, session)
                    await read_all(response)
                    answered.append(response)

                nursery.start_soon(call)
                await held.started.wait_for(1)
                called_at = trio.current_time()
                while trio.current_time() < called_at + 0.5:  # a sweeps every 0.05 s
                    await on_a.sweeps.wait_for(on_a.sweeps.count + 1)
                assert held.cancelled.count == 0
                assert await delete(http, a, session) == 200
                with trio.fail_after(5):
                    await held.cancelled.wait_for(1)
