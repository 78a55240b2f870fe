"""Tasks as a shared record: three independent server processes on one real redis-server (``tasks_app``), a task
created on the first and polled, listed, awaited and cancelled through the others, in both eras; and the process
running a task killed (SIGKILL) mid-task, after which every process reports it ``failed``, once, within two
leases. Requests go straight to each process (no balancer), so which process answers is certain."""

from __future__ import annotations

import itertools
import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest
import trio
from scale_peers import RedisServer, supervisor
from transport_helpers import open_raw_session
from waiting import wait_until

from trio_mcp.scale import RedisClient
from trio_mcp.transports._client.h11client import HttpClient, HttpClosed
from trio_mcp.types.tasks import TASKS_EXTENSION_ID

CORE, MODERN = "2025-11-25", "2026-07-28"
LEASE = 1.0  # tasks_app's
_ids = itertools.count(1)


@asynccontextmanager
async def processes(redis_server: RedisServer, count: int = 3) -> AsyncIterator[list[str]]:
    """``count`` independent servers (one worker each, as machines would run them) on the same Redis."""
    env = {"TRIO_MCP_TEST_REDIS": redis_server.url, "TRIO_MCP_SECRET_KEY": "one key for every process, 32+ chars"}
    async with AsyncExitStack() as stack:
        yield [
            (
                await stack.enter_async_context(
                    supervisor("tasks_app:server", "--workers", "1", "--options", "tasks_app:options", env=env)
                )
            )[0]
            for _ in range(count)
        ]


class Caller:
    """One client speaking raw Streamable HTTP to whichever process it is told, in one era (one session on
    2025-11-25, opened on the first process and carried to the others by its id)."""

    def __init__(self, http: HttpClient, version: str) -> None:
        self.http = http
        self.version = version
        self.session: str | None = None

    async def open(self, url: str) -> None:
        if self.version == CORE:
            self.session = dict(await open_raw_session(self.http, url, CORE))["mcp-session-id"]

    async def post(self, url: str, message: dict[str, Any]) -> tuple[Any, bytes]:
        headers = [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", self.version),
        ]
        if self.session is not None:
            headers.append(("mcp-session-id", self.session))
        if self.version == MODERN and "id" in message:
            headers.append(("mcp-method", message["method"]))
            if message["method"] == "tools/call":
                headers.append(("mcp-name", message["params"]["name"]))
            elif message["method"].startswith("tasks/"):
                headers.append(("mcp-name", message["params"]["taskId"]))
        response = await self.http.request("POST", url, headers=headers, body=json.dumps(message).encode())
        async with response:
            body = await response.read()
        self.session = self.session or response.headers.get("mcp-session-id")
        return response, body

    async def call(self, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC answer (``result`` or ``error``) of one request sent to ``url``."""
        request_id = next(_ids)
        if self.version == MODERN:
            capabilities = {"extensions": {TASKS_EXTENSION_ID: {}}}
            meta = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            }
            params = {**params, "_meta": meta}
        response, body = await self.post(url, {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        assert response.status == 200, body
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            data = (line[5:].strip() for line in body.decode().splitlines() if line.startswith("data:"))
            messages = [json.loads(item) for item in data if item]  # a priming event has no data
        else:
            messages = [json.loads(body)]
        (answer,) = [m for m in messages if isinstance(m, dict) and m.get("id") == request_id]
        return answer  # type: ignore[no-any-return]

    async def start_job(self, url: str, seconds: float, tool: str = "job") -> str:
        params: dict[str, Any] = {"name": tool, "arguments": {"seconds": seconds}}
        if self.version == CORE:
            answer = await self.call(url, "tools/call", {**params, "task": {}})
            return answer["result"]["task"]["taskId"]  # type: ignore[no-any-return]
        answer = await self.call(url, "tools/call", params)
        assert answer["result"]["resultType"] == "task", answer
        return answer["result"]["taskId"]  # type: ignore[no-any-return]

    async def status(self, url: str, task_id: str) -> dict[str, Any]:
        try:
            answer = await self.call(url, "tasks/get", {"taskId": task_id})
        except HttpClosed:  # a kept-alive connection to a worker just killed: once more, on a new one
            answer = await self.call(url, "tasks/get", {"taskId": task_id})
        assert "result" in answer, answer
        return answer["result"]  # type: ignore[no-any-return]


@asynccontextmanager
async def cluster(redis_server: RedisServer, version: str) -> AsyncIterator[tuple[Caller, RedisClient, list[str]]]:
    """Three processes, a caller of ``version`` and a client of the Redis they share."""
    async with processes(redis_server) as urls, HttpClient() as http, RedisClient(redis_server.url) as redis:
        yield Caller(http, version), redis, urls


async def pid_of(caller: Caller, url: str) -> int:
    answer = await caller.call(url, "tools/call", {"name": "pid", "arguments": {}})
    return int(answer["result"]["structuredContent"]["result"])


async def redis_value(redis: RedisClient, key: str) -> int | None:
    """The integer at ``key``, waiting up to 5 s for it to be set."""
    with trio.move_on_after(5):
        while (value := await redis.execute("GET", key)) is None:
            await trio.sleep(0.02)
    return None if value is None else int(value)


async def final_statuses(redis: RedisClient, task_id: str) -> list[str]:
    """The statuses of the distinct final records written for the task (tasks_app's ``WitnessedStore``), once
    one was written (the writer notes it just after the write others may already read)."""
    with trio.move_on_after(5):
        while not (bodies := await redis.execute("LRANGE", f"test:finals:{task_id}", 0, -1)):
            await trio.sleep(0.02)
    return [json.loads(body)["status"] for body in dict.fromkeys(bodies)]


async def ended(caller: Caller, url: str, task_id: str, *, interval: float) -> dict[str, Any]:
    """The task's record as ``url`` tells it, once it is no longer working (asked every ``interval`` seconds)."""

    async def record() -> dict[str, Any] | None:
        state = await caller.status(url, task_id)
        return None if state["status"] == "working" else state

    return await wait_until(record, within=60, interval=interval)


async def started(
    caller: Caller, redis: RedisClient, *, opened_on: str, runs_on: str, seconds: float, tool: str = "job"
) -> tuple[str, int]:
    """Open the caller's session (2025-11-25) on one process and start a job on another: its id and the id of the
    process that runs it (``runs_on``'s, checked)."""
    await caller.open(opened_on)
    task_id = await caller.start_job(runs_on, seconds=seconds, tool=tool)
    runner = await redis_value(redis, f"test:runner:{task_id}")
    assert runner is not None and runner == await pid_of(caller, runs_on)
    return task_id, runner


@pytest.mark.parametrize("version", [CORE, MODERN])
async def test_a_task_created_on_one_process_is_answered_for_by_the_others(
    redis_server: RedisServer, version: str
) -> None:
    with trio.fail_after(90):
        async with cluster(redis_server, version) as (caller, redis, (a, b, c)):
            task_id, _ = await started(caller, redis, opened_on=a, runs_on=a, seconds=3 * LEASE)
            # While it runs (over several leases, renewed by a), b and c say so; neither declares it failed.
            seen = []
            while not seen or seen[-1] == "working":
                seen += [(await caller.status(url, task_id))["status"] for url in (b, c)]
                await trio.sleep(0.1)
            assert len(seen) > 10 and set(seen) == {"working", "completed"}, seen
            if version == CORE:
                listed = (await caller.call(b, "tasks/list", {}))["result"]["tasks"]
                assert [task["taskId"] for task in listed] == [task_id]
                result = (await caller.call(c, "tasks/result", {"taskId": task_id}))["result"]
            else:
                result = (await caller.status(c, task_id))["result"]
            assert result["content"][0]["text"] == f"done on {await pid_of(caller, a)}"
            assert {(await caller.status(url, task_id))["status"] for url in (a, b, c)} == {"completed"}

            # tasks/result on c waits for a task that still runs on a (core), and tasks/cancel on b stops it on a.
            long_id = await caller.start_job(a, seconds=600)
            await redis_value(redis, f"test:runner:{long_id}")
            async with trio.open_nursery() as nursery:
                waited: dict[str, Any] = {}

                async def await_result() -> None:
                    waited.update(await caller.call(c, "tasks/result", {"taskId": long_id}))

                if version == CORE:
                    nursery.start_soon(await_result)
                    await trio.sleep(0.3)
                cancelled = await caller.call(b, "tasks/cancel", {"taskId": long_id})
            assert "result" in cancelled, cancelled
            if version == CORE:
                assert cancelled["result"]["status"] == "cancelled"
                assert waited["error"]["message"].endswith("was cancelled")
            assert await redis_value(redis, f"test:stopped:{long_id}") == 1  # the work really stopped, on a
            for url in (a, b, c):
                assert (await caller.status(url, long_id))["status"] == "cancelled"
            assert await final_statuses(redis, task_id) == ["completed"]
            assert await final_statuses(redis, long_id) == ["cancelled"]


@pytest.mark.parametrize("version", [CORE, MODERN])
async def test_the_task_of_a_killed_process_fails_once_within_two_leases(
    redis_server: RedisServer, version: str
) -> None:
    with trio.fail_after(90):
        async with cluster(redis_server, version) as (caller, redis, (a, b, c)):
            task_id, runner = await started(caller, redis, opened_on=b, runs_on=a, seconds=600)
            await trio.sleep(2 * LEASE)  # longer than a lease: renewed, it stays working
            assert (await caller.status(b, task_id))["status"] == "working"
            os.kill(runner, signal.SIGKILL)
            killed_at = trio.current_time()
            record = await ended(caller, c, task_id, interval=0.05)
            assert trio.current_time() - killed_at < 2 * LEASE + 0.5
            assert record["status"] == "failed" and "stopped" in record["statusMessage"]
            # One final status, whoever is asked, and it stays.
            for url in (b, c, a, b, c):
                again = await caller.status(url, task_id)
                assert (again["status"], again["lastUpdatedAt"]) == ("failed", record["lastUpdatedAt"])
            assert await redis.execute("GET", f"test:stopped:{task_id}") is None  # nobody cancelled it
            assert await final_statuses(redis, task_id) == ["failed"]
            cancel = await caller.call(c, "tasks/cancel", {"taskId": task_id})
            if version == CORE:
                assert cancel["error"]["code"] == -32602 and "already ended (failed)" in cancel["error"]["message"]
                failure = await caller.call(b, "tasks/result", {"taskId": task_id})
                assert failure["error"]["code"] == -32603


async def next_runner(redis: RedisClient, task_id: str, killed: int) -> int:
    """The process that took the task over after ``killed`` died (it records itself as it starts)."""

    async def other() -> int | None:
        runner = await redis_value(redis, f"test:runner:{task_id}")
        return None if runner == killed else runner

    return await wait_until(other, within=60, interval=0.05)


@pytest.mark.parametrize("version", [CORE, MODERN])
async def test_a_task_with_retry_on_loss_is_run_again_by_another_process(
    redis_server: RedisServer, version: str
) -> None:
    """The process running it is killed: another takes it over within two leases and runs it again from the
    start; the client following the task sees the new attempt (its status messages, 2026-07-28) and gets its
    result (through tasks/result on a third process, 2025-11-25). Lost on every attempt, it fails after three."""
    with trio.fail_after(120):
        async with cluster(redis_server, version) as (caller, redis, (a, b, c)):
            task_id, runner = await started(caller, redis, opened_on=b, runs_on=a, seconds=3, tool="resilient_job")
            os.kill(runner, signal.SIGKILL)
            if version == CORE:
                result = (await caller.call(c, "tasks/result", {"taskId": task_id}))["result"]
            else:
                messages = []
                while (state := await caller.status(b, task_id))["status"] == "working":
                    messages.append(state.get("statusMessage") or "")
                    await trio.sleep(0.1)
                assert any(message.startswith("attempt 2 of 3: step ") for message in messages), messages
                result = state["result"]
            second = await redis_value(redis, f"test:runner:{task_id}")
            assert second not in (None, runner)
            assert result["content"][0]["text"] == f"done on {second}"
            assert (await caller.status(c, task_id))["statusMessage"].startswith("attempt 2 of 3")

            doomed, killed = await started(caller, redis, opened_on=b, runs_on=a, seconds=60, tool="resilient_job")
            for attempt in (1, 2, 3):
                os.kill(killed, signal.SIGKILL)
                if attempt < 3:
                    killed = await next_runner(redis, doomed, killed)
            state = await ended(caller, c, doomed, interval=0.1)
            assert state["status"] == "failed"
            assert state["statusMessage"].startswith("attempt 3 of 3: the process running the task stopped")
            assert await final_statuses(redis, task_id) == ["completed"]
            assert await final_statuses(redis, doomed) == ["failed"]
