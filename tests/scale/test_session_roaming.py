"""Session roaming: legacy-era sessions served by whichever process a real HAProxy picks (round robin, no
stickiness), three server processes sharing a real redis-server through ``RedisSessionDirectory``."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from scale_peers import RedisServer, haproxy, supervisor
from waiting import wait_until

import trio_mcp
from trio_mcp import McpError
from trio_mcp.errors import INTERNAL_ERROR
from trio_mcp.types import ElicitResult, ProgressNotificationParams

VERSION = "2025-11-25"


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


@asynccontextmanager
async def balanced(
    redis_server: RedisServer, directory: Path, processes: int = 3, *, balancer: Any = haproxy
) -> AsyncIterator[str]:
    """``processes`` independent servers (one worker each, as machines would run them) behind HAProxy (or
    another ``balancer`` of ``scale_peers``)."""
    env = {"TRIO_MCP_TEST_REDIS": redis_server.url, "TRIO_MCP_SECRET_KEY": "one key for every process, 32+ chars"}
    async with AsyncExitStack() as stack:
        urls = [
            (
                await stack.enter_async_context(
                    supervisor("roaming_app:server", "--workers", "1", "--options", "roaming_app:options", env=env)
                )
            )[0]
            for _ in range(processes)
        ]
        port = await stack.enter_async_context(balancer([port_of(url) for url in urls], directory))
        yield f"http://127.0.0.1:{port}/mcp"


async def served_by_whom(client: trio_mcp.Client, callers: int, calls: int) -> list[int]:
    """The processes that served ``callers`` concurrent sequences of ``calls`` calls of one session."""
    served_by: list[int] = []

    async def call(count: int) -> None:
        for _ in range(count):
            result = await client.call_tool("pid", {})
            assert not result.is_error, result
            served_by.append(result.structured_content["result"])

    async with trio.open_nursery() as nursery:
        for _ in range(callers):
            nursery.start_soon(call, calls)
    return served_by


async def test_one_session_is_served_by_every_process_in_turn(redis_server: RedisServer, tmp_path: Path) -> None:
    """1,000 requests of one session, spread round robin over three processes, all succeed; an elicitation
    started by one process is answered through the balancer, whichever process that answer reaches."""
    asked: list[str] = []

    async def answer(params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"name": "Ada"})

    with trio.fail_after(120):
        async with (
            balanced(redis_server, tmp_path) as url,
            trio_mcp.open_http_client(url, protocol_version=VERSION, elicitation=answer) as client,
        ):
            served_by = await served_by_whom(client, 10, 100)
            assert len(served_by) == 1000
            assert len(set(served_by)) == 3, set(served_by)  # no stickiness: every process served the session

            greeters = set()
            for _ in range(6):
                result = await client.call_tool("greet", {})
                text = result.content[0].text
                assert not result.is_error and text.startswith("Ada answered, asked by "), text
                greeters.add(text.split()[-1])
            assert len(asked) == 6
            assert len(greeters) >= 2


async def test_a_killed_process_stream_resumes_elsewhere_exactly_once(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """The process streaming a call's 200 progress events is SIGKILLed mid-stream: the client resumes through the
    balancer on another process, gets every event stored before the kill once and in order, then a clear error
    for the call (never a hang); the session goes on serving new requests."""
    progress: list[tuple[float, str | None]] = []
    killed: list[int] = []

    def on_progress(params: ProgressNotificationParams) -> None:
        progress.append((params.progress, params.message))
        if len(progress) == 40 and params.message is not None:
            killed.append(int(params.message))
            os.kill(killed[0], signal.SIGKILL)

    with trio.fail_after(120):
        async with (
            balanced(redis_server, tmp_path) as url,
            trio_mcp.open_http_client(url, protocol_version=VERSION) as client,
        ):
            await client.call_tool("pid", {})
            with pytest.raises(McpError) as failure:
                await client.call_tool("count", {"steps": 200}, on_progress=on_progress)
            assert failure.value.code == INTERNAL_ERROR
            assert "stopped before answering" in failure.value.message
            steps = [step for step, _ in progress]
            assert steps == list(range(1, len(steps) + 1)), steps  # in order, none twice, none missing
            assert 40 <= len(steps) < 200
            assert {message for _, message in progress} == {str(killed[0])}
            after = [(await client.call_tool("pid", {})).structured_content["result"] for _ in range(6)]
            assert killed[0] not in after


async def test_a_redis_restart_mid_load_fails_clearly_and_recovers(redis_server: RedisServer, tmp_path: Path) -> None:
    """Redis is killed and restarted while calls of one session run through the balancer: every call ends, in a
    result or a typed error (never a hang); afterwards the session and new sessions are served."""
    outcomes: list[str] = []
    with trio.fail_after(120):
        async with (
            balanced(redis_server, tmp_path) as url,
            trio_mcp.open_http_client(url, protocol_version=VERSION) as client,
        ):
            for _ in range(6):
                await client.call_tool("pid", {})
            restarted = trio.Event()

            async def calls() -> None:
                for _ in range(40):
                    try:
                        result = await client.call_tool("pid", {}, timeout=20)
                        outcomes.append("error result" if result.is_error else "ok")
                    except (McpError, trio_mcp.ConnectionClosed) as exc:
                        outcomes.append(type(exc).__name__)
                    await trio.sleep(0.01)

            async def restart() -> None:
                await wait_until(lambda: len(outcomes) >= 40, within=60)
                redis_server.stop(signal.SIGKILL)
                await trio.sleep(0.5)
                await trio.to_thread.run_sync(redis_server.start)
                restarted.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(restart)
                for _ in range(4):
                    nursery.start_soon(calls)
            assert restarted.is_set() and len(outcomes) == 160
            assert outcomes.count("ok") >= 120, outcomes  # the processes hold the session: most calls never noticed
            after = [(await client.call_tool("pid", {})).structured_content["result"] for _ in range(6)]
            assert len(set(after)) == 3
            async with trio_mcp.open_http_client(url, protocol_version=VERSION) as fresh:
                assert not (await fresh.call_tool("pid", {})).is_error
