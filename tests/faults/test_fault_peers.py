"""Peers vanishing at random points, over real processes: the survivor ends promptly and in a typed way.

A server killed mid-call fails every pending call with ConnectionClosed; a client killed mid-call makes a stdio
server exit (its stdin closed) and leaves an HTTP server serving everyone else, with a stateless request's
handler cancelled. The kill points are random but seeded, so a failure reproduces.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from fault_peers import ANSWER_WITHIN, TRANSPORTS, fault_client, http_server_process
from waiting import wait_until

import trio_mcp
from trio_mcp import ConnectionClosed

FAULT_CLIENT = [sys.executable, str(Path(__file__).parent / "fault_client.py")]
#: How soon the survivor must notice a peer's death (generous: a loaded 2-core machine).
PROMPTLY = 3.0
SEEDS = [1, 2]


def gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie counts: it runs nothing and holds no pipes)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_server_killed_mid_call_fails_every_pending_call_promptly(transport: str, seed: int) -> None:
    delay = random.Random(seed).uniform(0.0, 0.4)
    async with fault_client(transport) as (client, _):
        pid = (await client.call_tool("pid")).structured_content["result"]  # type: ignore[index]
        outcomes: list[BaseException] = []

        async def pending() -> None:
            try:
                await client.call_tool("nap", {"seconds": 60}, timeout=60)
            except ConnectionClosed as exc:
                outcomes.append(exc)

        with trio.fail_after(ANSWER_WITHIN + PROMPTLY):
            async with trio.open_nursery() as nursery:
                for _ in range(4):
                    nursery.start_soon(pending)
                await trio.sleep(delay)
                killed_at = trio.current_time()
                os.kill(pid, signal.SIGKILL)
        assert len(outcomes) == 4 and all(type(o) is ConnectionClosed for o in outcomes)
        assert trio.current_time() - killed_at < PROMPTLY
        with pytest.raises(ConnectionClosed):
            with trio.fail_after(PROMPTLY):
                await client.call_tool("pid")


@pytest.mark.parametrize("seed", SEEDS)
async def test_stdio_client_killed_mid_call_makes_the_server_exit(seed: int) -> None:
    delay = random.Random(seed).uniform(0.0, 0.4)
    client = await trio.lowlevel.open_process(FAULT_CLIENT, stdout=subprocess.PIPE)
    try:
        assert client.stdout is not None
        with trio.fail_after(30):
            line = b""
            while not line.endswith(b"\n"):
                chunk = await client.stdout.receive_some(64)
                assert chunk, "the client exited before printing the server's pid"
                line += chunk
        server_pid = int(line)
        await trio.sleep(delay)
        client.send_signal(signal.SIGKILL)
        await wait_until(lambda: gone(server_pid), within=PROMPTLY * 2, interval=0.05)
    finally:
        if client.returncode is None:
            client.send_signal(signal.SIGKILL)
        await client.wait()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_http_client_killed_mid_call_leaves_the_server_serving(version: str, seed: int) -> None:
    delay = random.Random(seed).uniform(0.0, 0.4)
    async with http_server_process() as (url, _):
        client = await trio.lowlevel.open_process([*FAULT_CLIENT, url, version], stdout=subprocess.PIPE)
        try:
            assert client.stdout is not None
            with trio.fail_after(30):
                assert await client.stdout.receive_some(64)
            await trio.sleep(delay)
            client.send_signal(signal.SIGKILL)
            await client.wait()
        finally:
            if client.returncode is None:
                client.send_signal(signal.SIGKILL)
                await client.wait()
        async with trio_mcp.open_http_client(url, protocol_version=version) as survivor:
            with trio.fail_after(ANSWER_WITHIN):
                assert (await survivor.call_tool("nap", {"seconds": 0})).is_error is not True
            if version == "2026-07-28":
                # A stateless request ends with its connection: the dead client's handler is cancelled.

                async def no_naps() -> bool:
                    return (await survivor.call_tool("naps")).structured_content == {"result": 0}

                await wait_until(no_naps, within=PROMPTLY * 2, interval=0.05)
