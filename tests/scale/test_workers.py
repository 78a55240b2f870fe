"""Worker processes (``python -m trio_mcp.scale``): real supervisor and worker subprocesses on 127.0.0.1, driven
through the public client."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import pytest
import trio
from scale_peers import ROOT, supervisor

import trio_mcp
from trio_mcp.client import connect_http_client
from trio_mcp.scale import WorkerSettings
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.types import ElicitResult

MODERN = "2026-07-28"


async def worker_pid(url: str, busy: float = 0.0, **tool_args: Any) -> int:
    async with trio_mcp.open_http_client(url, protocol_version=MODERN) as client:
        result = await client.call_tool("pid", {"busy": busy, **tool_args})
    assert not result.is_error
    return pid_of(result)


def pid_of(result: Any) -> int:
    return int(result.structured_content["result"])


async def pids_seen(url: str, count: int, connections: int = 8) -> set[int]:
    """The worker pids that answered ``connections`` concurrent connections, retried until ``count`` differ."""
    seen: set[int] = set()
    while len(seen) < count:

        async def one() -> None:
            seen.add(await worker_pid(url, busy=0.05))

        async with trio.open_nursery() as nursery:
            for _ in range(connections):
                nursery.start_soon(one)
    return seen


async def test_requests_spread_over_the_workers() -> None:
    async with supervisor("worker_app:server", "--workers", "2") as (url, process):
        with trio.fail_after(30):
            pids = await pids_seen(url, 2)
        assert len(pids) == 2 and process.pid not in pids


async def test_a_killed_worker_is_replaced_and_service_continues() -> None:
    async with supervisor("worker_app:server", "--workers", "2") as (url, _):
        with trio.fail_after(40):
            before = await pids_seen(url, 2)
            victim = min(before)
            os.kill(victim, signal.SIGKILL)
            for _ in range(10):  # service goes on while the replacement starts
                assert await worker_pid(url) != victim
            after: set[int] = set()
            while len(after - before) < 1 or len(after) < 2:
                after |= await pids_seen(url, 2)
                after.discard(victim)
        assert victim not in after and len(after - before) == 1


async def test_sigterm_drains_in_flight_calls_then_exits_zero() -> None:
    async with supervisor("worker_app:server", "--workers", "2", "--drain-timeout", "5") as (url, process):
        with trio.fail_after(30):
            await pids_seen(url, 2)
            results: list[int] = []
            in_hand = trio.Event()

            async def slow_call() -> None:
                async with trio_mcp.open_http_client(url, protocol_version=MODERN) as client:
                    result = await client.call_tool("slow", {"seconds": 1.5}, on_progress=lambda _: in_hand.set())
                results.append(pid_of(result))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow_call)
                await in_hand.wait()  # the call is in a worker's hands: its first progress update came
                process.send_signal(signal.SIGTERM)
            assert len(results) == 1
            assert await process.wait() == 0
        with pytest.raises(OSError):  # nobody listens any more
            await trio.open_tcp_stream("127.0.0.1", int(url.rsplit(":", 1)[1].split("/")[0]))


async def test_sigterm_kills_a_worker_that_outlives_the_drain_deadline() -> None:
    async with supervisor("worker_app:server", "--workers", "1", "--drain-timeout", "0.5") as (url, process):
        with trio.fail_after(30):
            await worker_pid(url)

            async def stuck_call() -> None:
                with pytest.raises(trio_mcp.TrioMcpError):
                    async with trio_mcp.open_http_client(url, protocol_version=MODERN) as client:
                        await client.call_tool("pid", {"busy": 5.0})  # blocks the worker's event loop

            async with trio.open_nursery() as nursery:
                nursery.start_soon(stuck_call)
                await trio.sleep(0.5)
                began = trio.current_time()
                process.send_signal(signal.SIGTERM)
                assert await process.wait() == 0
                assert trio.current_time() - began < 3.0


async def test_a_crash_loop_exits_non_zero() -> None:
    async with supervisor("worker_app:no_such_server", "--workers", "2", "--max-restarts", "3") as (_, process):
        with trio.fail_after(30):
            assert await process.wait() == 1


async def test_a_request_state_minted_by_one_worker_is_accepted_by_another() -> None:
    """The modern era's elicitation round trip: the InputRequiredResult comes from one worker and the retry,
    on a new connection, may land on the other; with the shared key both verify the other's requestState."""
    args = ("worker_app:server", "--workers", "2", "--options", "worker_app:on_rpc")
    async with supervisor(*args, path="/rpc") as (url, _):
        crossed = 0
        asked_by: list[int] = []

        async def answer(params: Any) -> ElicitResult:
            asked_by.append(int(params.message.split()[2].rstrip(":")))
            await trio.sleep(0.05)
            return ElicitResult(action="accept", content={"name": "Ada"})

        with trio.fail_after(60):
            await pids_seen(url, 2)
            for _ in range(40):
                fresh_connections = HttpClient(keep_alive_expiry=0.01)  # the retry opens a new connection
                async with fresh_connections, trio.open_nursery() as nursery:
                    client = await connect_http_client(
                        nursery, url, protocol_version=MODERN, elicitation=answer, http=fresh_connections
                    )
                    try:
                        result = await client.call_tool("greet", {})
                    finally:
                        await client.aclose()
                text = result.content[0].text  # type: ignore[union-attr]
                assert not result.is_error, text
                if int(text.split()[-1]) != asked_by[-1]:
                    crossed += 1
                if crossed >= 2:
                    break
        assert crossed >= 2


def test_settings_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match="server"):
        WorkerSettings(server="no_colon")
    with pytest.raises(ValueError, match="workers"):
        WorkerSettings(server="a:b", workers=0)
    with pytest.raises(ValueError, match="drain_timeout"):
        WorkerSettings(server="a:b", drain_timeout=0)
    with pytest.raises(ValueError, match="worker_timeout"):
        WorkerSettings(server="a:b", worker_timeout=float("inf"))
    with pytest.raises(ValueError, match="secret_key"):
        WorkerSettings(server="a:b", secret_key="short")


def test_the_configured_key_is_shared_and_a_short_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIO_MCP_SECRET_KEY", "k" * 32)
    first, second = trio_mcp.Server("a"), trio_mcp.Server("b")
    state = first.request_states.sign("digest", {"name": {"action": "accept"}})
    assert second.request_states.verify(state, "digest") == {"name": {"action": "accept"}}
    assert second.cursors.decode(first.cursors.encode(20, scope="tools/list"), scope="tools/list") == 20
    monkeypatch.setenv("TRIO_MCP_SECRET_KEY", "too short")
    with pytest.raises(ValueError, match="TRIO_MCP_SECRET_KEY"):
        trio_mcp.Server("c")


@pytest.mark.bench
def test_the_worker_benchmark_runs() -> None:
    import subprocess

    argv = [
        sys.executable,
        str(ROOT / "benchmarks" / "workers.py"),
        "--runs",
        "1",
        "--clients",
        "2",
        "--requests",
        "30",
        "--seconds",
        "5",
    ]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split() for line in done.stdout.splitlines() if line.split()[:1] in (["1"], ["2"])]
    assert [row[0] for row in rows] == ["1", "2"] and all(float(row[2]) > 0 for row in rows)


async def test_a_worker_whose_event_loop_is_blocked_is_replaced() -> None:
    async with supervisor("worker_app:server", "--workers", "1", "--worker-timeout", "1") as (url, _):
        with trio.fail_after(30):
            first = await worker_pid(url)
            began = trio.current_time()
            with pytest.raises(trio_mcp.TrioMcpError):
                await worker_pid(url, busy=20.0)  # blocks the whole worker, heartbeats included
            assert trio.current_time() - began < 10
            assert await worker_pid(url) != first


async def test_a_worker_slower_to_import_than_its_timeout_is_not_taken_for_blocked() -> None:
    async with supervisor("slow_import_app:server", "--workers", "1", "--worker-timeout", "1") as (url, _):
        with trio.fail_after(30):
            first = await worker_pid(url)
            await trio.sleep(1.5)  # heartbeats flow once it runs
            assert await worker_pid(url) == first


async def test_run_workers_returns_the_exit_status() -> None:
    code = (
        "import sys; from trio_mcp.scale import run_workers; sys.exit(run_workers('worker_app:nope', workers=1, "
        "port=0, max_restarts=1))"
    )
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT), str(ROOT / "tests" / "servers")))}
    with trio.fail_after(30):
        done = await trio.run_process([sys.executable, "-c", code], env=environment, check=False, capture_stderr=True)
    assert done.returncode == 1
    assert done.stderr.count(b"has no attribute 'nope'") == 2  # started, restarted once, then given up


async def test_workers_serve_https(self_signed_cert: tuple[str, str]) -> None:
    import ssl

    cert, key = self_signed_cert
    async with supervisor("worker_app:server", "--workers", "2", "--certfile", cert, "--keyfile", key) as (url, _):
        assert url.startswith("https://127.0.0.1:")
        with trio.fail_after(30):
            async with (
                HttpClient(ssl_context=ssl.create_default_context(cafile=cert)) as http,
                trio_mcp.open_http_client(url, protocol_version=MODERN, http=http) as client,
            ):
                result = await client.call_tool("pid", {"busy": 0})
        assert not result.is_error and pid_of(result) > 0


def test_https_settings_are_checked_when_made(self_signed_cert: tuple[str, str]) -> None:
    cert, key = self_signed_cert
    assert WorkerSettings(server="worker_app:server", certfile=cert, keyfile=key).scheme == "https"
    with pytest.raises(ValueError, match="certfile and keyfile go together"):
        WorkerSettings(server="worker_app:server", certfile=cert)
    with pytest.raises(ValueError, match="certfile/keyfile"):
        WorkerSettings(server="worker_app:server", certfile=key, keyfile=key)  # a key is no certificate
