"""``trio-mcp run --workers N --redis URL``: worker processes that share sessions, their events and task records
through a real redis-server, from one option; without a shared store, one warning line at start."""

from __future__ import annotations

import os
import signal
import sys

import trio
from cli_helpers import CLI_SERVER, REPO, Running, cli_env, start
from scale_peers import RedisServer

import trio_mcp

VERSION = "2025-11-25"
WARNING = r"trio-mcp: warning: .*lose their sessions.*--redis"


async def serve(nursery: trio.Nursery, *words: str, target: str = str(CLI_SERVER)) -> tuple[Running, str]:
    """``trio-mcp run`` of a test server (the command line's by default) with three workers; it and its URL."""
    running = await start(nursery, "run", target, "--transport", "http", "--port", "0", "--workers", "3", *words)
    found = await running.wait_for_stderr(r"serving \S+ \S+ on (\S+) from 3 workers")
    return running, found.group(1)


async def stop(running: Running) -> None:
    running.process.send_signal(signal.SIGTERM)
    assert await running.process.wait() == 0, running.stderr.decode()


async def test_six_session_clients_of_three_workers_sharing_redis_all_succeed(redis_server: RedisServer) -> None:
    echoed: list[str] = []

    async def client(number: int) -> None:
        async with trio_mcp.open_http_client(url, protocol_version=VERSION) as session:
            for call in range(5):
                result = await session.call_tool("echo", {"text": f"{number}.{call}"})
                assert not result.is_error, result
                echoed.append(result.content[0].text)

    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            running, url = await serve(nursery, "--redis", redis_server.url)
            async with trio.open_nursery() as clients:
                for number in range(6):
                    clients.start_soon(client, number)
            await stop(running)
    assert sorted(echoed) == sorted(f"{number}.{call}" for number in range(6) for call in range(5))
    assert "warning" not in running.stderr.decode()


async def test_workers_without_a_shared_store_say_so_in_one_line_at_start() -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running, _ = await serve(nursery)
            await running.wait_for_stderr(WARNING)
            await stop(running)
    lines = [line for line in running.stderr.decode().splitlines() if "lose their sessions" in line]
    assert len(lines) == 1, running.stderr.decode()


async def test_a_change_announced_on_any_worker_reaches_a_subscriber_once(redis_server: RedisServer) -> None:
    """``server.notify_resource_updated`` on whichever worker serves the call reaches the subscriber, whichever
    worker holds its GET stream: each change once."""
    updates: list[str] = []
    arrived = trio.Event()

    def on_update(uri: str) -> None:
        nonlocal arrived
        updates.append(uri)
        arrived.set()

    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            target = str(REPO / "tests" / "servers" / "changes_app.py")
            running, url = await serve(nursery, "--redis", redis_server.url, target=target)
            async with trio_mcp.open_http_client(
                url, protocol_version=VERSION, on_resource_updated=on_update
            ) as subscriber:
                await subscriber.subscribe_resource("note://a")
                workers: list[int] = []
                while len(set(workers)) < 2 or len(workers) < 6:  # each touch on a connection of its own
                    arrived = trio.Event()
                    async with trio_mcp.open_http_client(url, protocol_version="2026-07-28") as toucher:
                        result = await toucher.call_tool("touch", {"uri": "note://a"})
                    workers.append(result.structured_content["result"])
                    with trio.fail_after(10):
                        await arrived.wait()
                await trio.sleep(0.5)
                assert updates == ["note://a"] * len(workers)  # each change told once
            await stop(running)


async def test_run_workers_without_a_shared_store_says_so_once() -> None:
    """The Python entry point warns as the command does (here its workers fail to import, a crash loop)."""
    code = (
        "import sys; from trio_mcp.scale import run_workers; "
        "sys.exit(run_workers('worker_app:nope', workers=2, port=0, max_restarts=1))"
    )
    environment = {**cli_env(), "PYTHONPATH": os.pathsep.join((str(REPO), str(REPO / "tests" / "servers")))}
    with trio.fail_after(30):
        done = await trio.run_process([sys.executable, "-c", code], env=environment, check=False, capture_stderr=True)
    assert done.returncode == 1
    assert done.stderr.decode().count("lose their sessions when a request reaches another worker; add --redis") == 1
