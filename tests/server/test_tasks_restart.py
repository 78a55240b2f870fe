"""Restart-honest tasks, for real: a server process with a FileTaskStore (or a RedisTaskStore on a real
redis-server) is killed (SIGKILL) while a task runs; after it is started again on the same store, the client
polling that task hears "failed" rather than "not found": at once with the file store (its leases lived in the
dead process), within two leases (3 s each) with Redis, where the dead process's lease lapses on its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import trio
from paths import ROOT
from waiting import wait_until

import trio_mcp
from trio_mcp import McpError
from trio_mcp.client import get_task
from trio_mcp.client._tasks import _request

SERVER = textwrap.dedent(
    """
    import sys
    import trio
    from trio_mcp import Server
    from trio_mcp.server import FileTaskStore, TaskManager

    if sys.argv[1].startswith("redis://"):
        from trio_mcp.scale import RedisClient, RedisTaskStore

        store = RedisTaskStore(RedisClient(sys.argv[1]))
    else:
        store = FileTaskStore(sys.argv[1])
    server = Server("restart", tasks=TaskManager(store=store))

    @server.tool(task_support="required")
    async def long_job() -> str:
        await trio.sleep(3600)
        return "never"

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve_http, "127.0.0.1", 0)
            print(port, flush=True)

    trio.run(main)
    """
)


async def start_server(script: Path, store: str) -> tuple[trio.Process, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = await trio.lowlevel.open_process([sys.executable, str(script), store], stdout=subprocess.PIPE, env=env)
    assert process.stdout is not None
    line = b""
    while not line.endswith(b"\n"):
        chunk = await process.stdout.receive_some(64)
        assert chunk, "the server exited before it printed its port"
        line += chunk
    return process, int(line)


@pytest.mark.parametrize("kind", ["file", "redis"])
async def test_a_task_of_a_killed_server_reads_failed_after_the_restart(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    store = request.getfixturevalue("redis_server").url if kind == "redis" else str(tmp_path / "tasks")
    with trio.fail_after(60):
        process, port = await start_server(script, store)
        try:
            async with trio_mcp.open_http_client(
                f"http://127.0.0.1:{port}/mcp", protocol_version="2026-07-28"
            ) as client:
                statuses: list[str] = []
                with trio.move_on_after(1):
                    await client.call_tool_as_task("long_job", on_status=lambda t: statuses.append(t["taskId"]))
                task_id = statuses[0]  # that call was cancelled, and so was its task
                # Another task, left running: the server is killed under it.
                second = (await _request(client, "tools/call", {"name": "long_job"}))["taskId"]
        finally:
            process.send_signal(signal.SIGKILL)
            await process.wait()
        process, port = await start_server(script, store)
        try:
            async with trio_mcp.open_http_client(
                f"http://127.0.0.1:{port}/mcp", protocol_version="2026-07-28"
            ) as client:
                first = await get_task(client, task_id)
                polls = 0

                async def ended() -> dict[str, Any] | None:  # working while the dead process's lease lives
                    nonlocal polls
                    polls += 1
                    state = await get_task(client, second)
                    return None if state["status"] == "working" else state

                killed = await wait_until(ended, within=30, interval=0.2)
                assert kind == "redis" or polls == 1
                try:
                    await get_task(client, "x" * 32)
                    raise AssertionError("an unknown task was found")
                except McpError as exc:
                    assert exc.code == -32602
        finally:
            process.send_signal(signal.SIGKILL)
            await process.wait()
    assert first["status"] == "cancelled"
    assert killed["status"] == "failed" and "stopped" in killed["statusMessage"]
    assert killed["error"]["code"] == -32603
