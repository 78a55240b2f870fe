"""Peers for the fault suite: the misbehaving server as a real stdio subprocess or a real HTTP server process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from transport_helpers import handshake

import trio_mcp
from trio_mcp import Client

FAULT_SERVER = Path(__file__).parent.parent / "servers" / "fault_server.py"
STDIO_COMMAND = [sys.executable, str(FAULT_SERVER)]
#: Transports and eras every fault is tried on.
TRANSPORTS = ["stdio", "http-session", "http-stateless"]
#: A call that should be answered gets this long before the test calls it a hang (a loaded 2-core machine).
ANSWER_WITHIN = 8.0


@asynccontextmanager
async def http_server_process() -> AsyncIterator[tuple[str, trio.Process]]:
    """Start fault_server.py --http; yield its /mcp URL and the process; SIGKILL it afterwards."""
    process = await trio.lowlevel.open_process(
        [*STDIO_COMMAND, "--http"], stdout=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        assert process.stdout is not None
        line = b""
        with trio.fail_after(30):
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive_some(64)
                if not chunk:
                    raise RuntimeError("the HTTP fault server exited before printing its port")
                line += chunk
        yield f"http://127.0.0.1:{int(line)}/mcp", process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGKILL)
        with trio.move_on_after(5):
            await process.wait()


@asynccontextmanager
async def fault_client(transport: str) -> AsyncIterator[tuple[Client, trio.Process | None]]:
    """An initialized client of the fault server over ``transport``, and the server process when it is HTTP."""
    if transport == "stdio":
        async with trio_mcp.open_stdio_client(STDIO_COMMAND, stderr="capture", protocol_version="2025-11-25") as client:
            yield client, None
        return
    version = "2025-11-25" if transport == "http-session" else "2026-07-28"
    async with http_server_process() as (url, process):
        async with trio_mcp.open_http_client(url, protocol_version=version) as client:
            yield client, process


class RawStdio:
    """The fault server on raw pipes: write JSON lines, read JSON lines."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.stdin = process.stdin
        self.stdout = process.stdout
        self.buffer = b""

    async def send(self, message: Any) -> None:
        await self.stdin.send_all(json.dumps(message).encode() + b"\n")

    async def receive(self) -> Any:
        while b"\n" not in self.buffer:
            chunk = await self.stdout.receive_some(65536)
            assert chunk, "the server closed its stdout"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


async def open_raw_stdio() -> RawStdio:
    """The fault server as a subprocess on raw pipes, initialized on 2025-03-26 (the revision with batches)."""
    process = await trio.lowlevel.open_process(
        STDIO_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    peer = RawStdio(process)
    assert (await handshake(peer.send, peer.receive, "2025-03-26"))["protocolVersion"] == "2025-03-26"
    return peer
