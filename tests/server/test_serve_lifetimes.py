"""How ``serve_*`` ends, as a trio user expects: Ctrl-C is a plain KeyboardInterrupt, failures are one exception."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from typing import Any

import pytest
import trio
from paths import ROOT
from transport_helpers import initialize_request
from waiting import wait_until

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

import trio_mcp
from trio_mcp import Server
from trio_mcp.testing import open_in_memory

SERVE = """
import sys, trio
from trio_mcp import Server
server = Server("ctrl-c")

@server.tool()
async def echo(text: str) -> str:
    return text

if sys.argv[1] == "stdio":
    trio.run(server.serve_stdio)
else:
    trio.run(server.serve_http, "127.0.0.1", int(sys.argv[2]))
"""


@pytest.mark.parametrize("how", ["stdio", "http"])
async def test_ctrl_c_ends_serving_with_a_plain_keyboard_interrupt(how: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", SERVE, how, str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        with trio.fail_after(10):
            if how == "stdio":  # serving for real: it answered the handshake
                await process.stdin.send_all(json.dumps(initialize_request(id=1)).encode() + b"\n")
                line = b""
                while not line.endswith(b"\n"):
                    line += await process.stdout.receive_some(65536)
                assert json.loads(line)["id"] == 1
            else:  # serving for real: it answers a request (so Ctrl-C lands while it waits, not mid-accept)
                answers: list[bytes] = []

                async def answered() -> bool:
                    try:
                        connection = await trio.open_tcp_stream("127.0.0.1", port)
                    except OSError:
                        return False  # not listening yet
                    await connection.send_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                    answer = b""
                    while chunk := await connection.receive_some(65536):
                        answer += chunk
                    await connection.aclose()
                    answers.append(answer)
                    return True

                await wait_until(answered, within=10, interval=0.05)
                assert answers[0].startswith(b"HTTP/1.1 200"), answers
            process.send_signal(signal.SIGINT)
            await process.wait()
            stderr = b""
            while chunk := await process.stderr.receive_some(65536):
                stderr += chunk
    finally:
        process.kill()
    text = stderr.decode()
    assert text.rstrip().endswith("KeyboardInterrupt"), text
    assert "ExceptionGroup" not in text and "+-+" not in text, text
    assert process.returncode in (-signal.SIGINT, 130, 1)


async def test_serve_http_on_a_port_in_use_raises_the_os_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with trio.fail_after(5), pytest.raises(OSError) as info:
            await Server("busy").serve_http("127.0.0.1", port)
    assert not isinstance(info.value, BaseExceptionGroup)
    assert info.value.errno is not None


async def test_a_lifespan_failure_is_one_exception_from_every_way_of_serving() -> None:
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(server: Server) -> Any:
        raise RuntimeError("no database")
        yield  # pragma: no cover

    server = Server("broken-lifespan", lifespan=lifespan)
    with trio.fail_after(5):
        with pytest.raises(RuntimeError, match="no database"):
            await server.serve_http("127.0.0.1", 0)
        with pytest.raises(RuntimeError, match="no database"):
            async with open_in_memory(server):
                pass  # pragma: no cover


async def test_open_in_memory_runs_the_lifespan() -> None:
    from contextlib import asynccontextmanager

    events: list[str] = []

    @asynccontextmanager
    async def lifespan(server: Server) -> Any:
        events.append("start")
        yield {"db": "connected"}
        events.append("stop")

    server = Server("with-lifespan", lifespan=lifespan)

    @server.tool()
    async def state(ctx: trio_mcp.Context) -> str:
        return str(ctx.lifespan_state["db"])

    with trio.fail_after(5):
        async with open_in_memory(server) as client:
            result = await client.call_tool("state")
            assert result.content[0].text == "connected"  # type: ignore[union-attr]
    assert events == ["start", "stop"]


def test_help_shows_readable_defaults() -> None:
    import inspect
    import pydoc

    public = [trio_mcp.Client, trio_mcp.Server, trio_mcp.Context]
    for cls in public:
        for name, member in inspect.getmembers(cls):
            if not name.startswith("_") and callable(member):
                assert "object at 0x" not in pydoc.render_doc(member), f"{cls.__name__}.{name}"


STOPPABLE = """
import sys, time, trio
from trio_mcp import Server
server = Server("stoppable")
stopped = []

async def main():
    with trio.CancelScope() as scope:
        @server.tool()
        async def slow() -> str:
            print("slow started", file=sys.stderr, flush=True)
            await trio.sleep(30)
            return "never"

        @server.tool()
        async def stop() -> str:
            stopped.append(time.monotonic())
            scope.cancel()
            return "stopping"

        await server.serve_stdio()
    print(f"returned after {time.monotonic() - stopped[0]:.3f}", file=sys.stderr, flush=True)

trio.run(main)
"""


async def test_cancelling_serve_stdio_with_calls_in_flight_returns_at_once() -> None:
    lines: list[str] = []
    with trio.fail_after(15):
        async with trio_mcp.open_stdio_client(
            [sys.executable, "-c", STOPPABLE],
            protocol_version="2025-11-25",
            stderr=lines.append,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        ) as client:
            failures: list[BaseException] = []

            async def call_slow() -> None:
                try:
                    await client.call_tool("slow")
                except trio_mcp.ConnectionClosed as exc:
                    failures.append(exc)

            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(call_slow)
                await wait_until(lambda: lines.count("slow started") == 3)  # every call is in its handler
                try:
                    await client.call_tool("stop")  # its answer, already made, may or may not get out
                except trio_mcp.ConnectionClosed:
                    pass
            assert len(failures) == 3  # every call in flight learns the connection closed
    [report] = [line for line in lines if line.startswith("returned after")]
    assert float(report.split()[-1]) < 0.5


INTERRUPTED = """
import trio
from trio_mcp import Server
server = Server("interrupted")

@server.tool()
async def interrupt() -> str:
    raise KeyboardInterrupt

trio.run(server.serve_stdio)
"""


async def test_a_keyboard_interrupt_raised_in_a_handler_still_stops_the_server() -> None:
    lines: list[str] = []
    with trio.fail_after(15):
        async with trio_mcp.open_stdio_client(
            [sys.executable, "-c", INTERRUPTED],
            protocol_version="2025-11-25",
            stderr=lines.append,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        ) as client:
            with pytest.raises(trio_mcp.ConnectionClosed):
                await client.call_tool("interrupt")
    assert lines and lines[-1] == "KeyboardInterrupt" and not any("ExceptionGroup" in line for line in lines)
