"""MCP over real subprocess pipes: the handshake on every revision, tool calls, cancellation both ways,
progress, timeouts, a peer that dies mid-call, framing errors, stdout hygiene and shutdown order.

Every test runs twice: with the servers it starts on trio's non-blocking pipes, then on the portable path
(``TRIO_MCP_STDIO_PORTABLE=1``: stdin and stdout read and written in worker threads, as on Windows)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio
import trio.testing
from paths import TESTS

import trio_mcp
from trio_mcp.transports._thread_io import ThreadSendStream
from trio_mcp.transports.stdio import StdioMessageStream, StdioProcess, stdio_server_stream
from trio_mcp.types import ProgressNotificationParams, Root, TextContent

from transport_helpers import handshake, recording_pipes  # isort: skip

SERVER_DIR = TESTS / "servers"
SERVER = [sys.executable, str(SERVER_DIR / "stdio_server.py")]
LEGACY_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


pytestmark = pytest.mark.usefixtures("stdio_server_io")


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return str(block.text)


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
async def test_handshake_on_each_revision(version: str) -> None:
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(SERVER, protocol_version=version) as client:
            assert client.protocol_version == version
            assert client.server_info.name == "stdio-test-server"
            assert client.server_info.version == "9.9.9"
            assert client.instructions == "for tests"
            assert client.server_capabilities.tools is not None
            await client.ping()
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools][:3] == ["echo", "sleep", "count"]
            result = await client.call_tool("echo", {"text": "héllo \u2603"})
            assert text_of(result) == "héllo \u2603"


async def test_revision_gates_tool_fields() -> None:
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(SERVER, protocol_version="2024-11-05") as old:
            result = await old.call_tool("count", {"steps": 1})
            assert result.structured_content is None  # structuredContent does not exist before 2025-06-18
            assert all(tool.output_schema is None for tool in (await old.list_tools()).tools)
        async with trio_mcp.open_stdio_client(SERVER, protocol_version="2025-06-18") as new:
            result = await new.call_tool("count", {"steps": 1})
            assert result.structured_content == {"result": 1}
            tools = {tool.name: tool for tool in (await new.list_tools()).tools}
            assert tools["count"].output_schema == {
                "type": "object",
                "properties": {"result": {"type": "integer"}},
                "required": ["result"],
                "additionalProperties": False,
            }


async def test_tool_errors_are_results_not_exceptions() -> None:
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(SERVER, protocol_version="2025-11-25") as client:
            result = await client.call_tool("fail")
            assert result.is_error is True
            assert "Tool fail failed (error id " in text_of(result)
            bad = await client.call_tool("echo", {"text": 5})
            assert bad.is_error is True
            assert "text: expected string" in text_of(bad)
            with pytest.raises(trio_mcp.McpError) as info:
                await client.call_tool("no_such_tool")
            assert info.value.code == -32602
            assert (await client.call_tool("echo", {"text": "still serving"})).is_error is not True


async def test_caller_cancel_cancels_the_server_handler(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(SERVER, protocol_version="2025-11-25") as client:
            with trio.move_on_after(0.5) as scope:
                await client.call_tool("sleep", {"seconds": 30, "marker": str(marker)})
            assert scope.cancelled_caught  # the caller sees its own cancellation
            # The server observed trio.Cancelled in the handler.
            while "cancelled" not in marker.read_text():
                await trio.sleep(0.01)
            assert [line.split()[0] for line in marker.read_text().splitlines()] == ["start", "cancelled"]
            assert text_of(await client.call_tool("echo", {"text": "after"})) == "after"


async def test_server_cancel_cancels_the_client_callback() -> None:
    outcome: list[str] = []

    async def roots() -> list[Root]:
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            outcome.append("cancelled")
            raise
        return []

    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(SERVER, roots=roots, protocol_version="2025-11-25") as client:
            result = await client.call_tool("roots_probe", {"timeout": 0.3})
            assert text_of(result) == "gave up"
            await client.ping()  # the cancel notification was read before the ping answer
            assert outcome == ["cancelled"]
            assert client.session.statistics().inbound_in_flight == 0


async def test_server_requests_roots_from_the_client() -> None:
    async def roots() -> list[Root]:
        return [Root(uri="file:///work", name="work"), Root(uri="file:///tmp")]

    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(SERVER, roots=roots, protocol_version="2025-11-25") as client:
            result = await client.call_tool("roots_probe", {"timeout": 5})
            assert text_of(result) == "file:///work,file:///tmp"
        async with trio_mcp.open_stdio_client(SERVER, protocol_version="2025-11-25") as client:
            # No roots capability declared: the server refuses to send the request, and the McpError its
            # handler did not catch stays a protocol error.
            with pytest.raises(trio_mcp.McpError, match="did not declare the roots capability") as info:
                await client.call_tool("roots_probe", {"timeout": 5})
            assert info.value.code == -32601


async def test_progress_reaches_the_caller() -> None:
    updates: list[ProgressNotificationParams] = []
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(SERVER, protocol_version="2025-11-25") as client:
            result = await client.call_tool("count", {"steps": 4}, on_progress=updates.append)
    assert result.structured_content == {"result": 4}
    assert [(u.progress, u.total, u.message) for u in updates] == [
        (1, 4, "step 1"),
        (2, 4, "step 2"),
        (3, 4, "step 3"),
        (4, 4, "step 4"),
    ]


async def test_timeout_raises_and_cancels_on_the_server(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(SERVER, request_timeout=5, protocol_version="2025-11-25") as client:
            with pytest.raises(trio_mcp.RequestTimeout, match="tools/call got no response within 0.3 s"):
                await client.call_tool("sleep", {"seconds": 30, "marker": str(marker)}, timeout=0.3)
            while "cancelled" not in marker.read_text():
                await trio.sleep(0.01)


async def test_server_crash_fails_every_pending_call_with_exit_status_and_stderr(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    failures: list[BaseException] = []
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(SERVER, stderr="capture", protocol_version="2025-11-25") as client:

            async def pending_call() -> None:
                try:
                    await client.call_tool("sleep", {"seconds": 30, "marker": str(marker)})
                except trio_mcp.ConnectionClosed as exc:
                    failures.append(exc)

            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(pending_call)
                while marker.exists() is False or marker.read_text().count("start") < 3:
                    await trio.sleep(0.01)
                started = trio.current_time()
                with pytest.raises(trio_mcp.ConnectionClosed) as info:
                    await client.call_tool("crash", {"status": 3})
            assert trio.current_time() - started < 1.5
            assert "exited with status 3" in str(info.value)
            assert "fatal: simulated crash" in str(info.value)
            assert len(failures) == 3
            with pytest.raises(trio_mcp.ConnectionClosed):
                await client.ping()


async def test_server_killed_mid_call() -> None:
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(SERVER, protocol_version="2025-11-25") as client:
            with pytest.raises(trio_mcp.ConnectionClosed, match="killed by SIGKILL"):
                await client.call_tool("kill_self")


async def test_stray_prints_do_not_reach_the_wire() -> None:
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client(SERVER, stderr="capture", protocol_version="2025-11-25") as client:
            assert text_of(await client.call_tool("noisy")) == "quiet wire"
            assert text_of(await client.call_tool("echo", {"text": "next"})) == "next"


async def test_client_skips_non_json_lines_on_stdout() -> None:
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client([*SERVER, "--banner"], protocol_version="2025-11-25") as client:
            assert text_of(await client.call_tool("echo", {"text": "after the banner"})) == "after the banner"


async def test_command_not_found_is_a_fast_typed_error() -> None:
    with trio.fail_after(5):
        with pytest.raises(trio_mcp.ConnectionClosed, match="could not start server"):
            async with trio_mcp.open_stdio_client(["/nonexistent/mcp-server"], protocol_version="2025-11-25"):
                pass  # pragma: no cover


@pytest.mark.parametrize("version", ["auto", "2025-11-25"])
async def test_server_that_is_not_mcp_fails_fast(version: str) -> None:
    with trio.fail_after(5):
        with pytest.raises(trio_mcp.ConnectionClosed) as info:
            async with trio_mcp.open_stdio_client(
                [sys.executable, "-c", "print('hello, I am not MCP')"], protocol_version=version
            ):
                pass  # pragma: no cover
    message = str(info.value)
    assert "exited with status 0" in message
    assert "no JSON-RPC" in message and "hello, I am not MCP" in message


@pytest.mark.parametrize("version", ["auto", "2025-11-25", "2026-07-28"])
async def test_a_peer_that_echoes_its_input_is_named_as_such(version: str) -> None:
    with trio.fail_after(10):
        with pytest.raises(trio_mcp.RemoteProtocolError, match="sent our own .* request back.*not an MCP server"):
            async with trio_mcp.open_stdio_client(["cat"], protocol_version=version):
                pass  # pragma: no cover


@pytest.mark.parametrize("version", ["auto", "2025-11-25"])
async def test_server_exiting_during_the_handshake_always_reports_status_and_stderr(version: str) -> None:
    # The exit races our first write (EPIPE) against the read side's EOF; either way the report is the same.
    command = ["sh", "-c", "echo 'fatal: no config' >&2; exit 3"]
    with trio.fail_after(60):
        for _ in range(50):
            with pytest.raises(trio_mcp.ConnectionClosed) as info:
                async with trio_mcp.open_stdio_client(command, stderr="capture", protocol_version=version):
                    pass  # pragma: no cover
            assert "exited with status 3" in str(info.value)
            assert "fatal: no config" in str(info.value)


async def test_server_may_write_while_it_stops() -> None:
    # The server writes one more line 50 ms after its stdin closes: the client keeps reading until it exits.
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            process = await StdioProcess.start(
                nursery, [sys.executable, str(SERVER_DIR / "late_writer.py")], stderr="capture"
            )
            client = await trio_mcp.connect_client(nursery, process.stream, protocol_version="2025-11-25")
            client.add_close_callback(process.aclose)
            await client.ping()
            await client.aclose()
    assert process.process.returncode == 0, process.stderr_tail
    assert process.stderr_tail == ""


async def test_shutdown_escalates_to_sigkill_for_a_stubborn_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(StdioProcess, "shutdown_grace", 0.5)
    with trio.fail_after(10):
        async with trio_mcp.open_stdio_client([*SERVER, "--stubborn"], protocol_version="2025-11-25") as client:
            await client.ping()
            started = trio.current_time()
        # stdin closed, 0.5 s, SIGTERM (ignored), 0.5 s, SIGKILL.
        assert 0.9 < trio.current_time() - started < 3


async def test_cancelling_the_client_stops_a_stubborn_server_promptly() -> None:
    # Leaving the block normally gives the server shutdown_grace (2 s) twice; a cancelled scope means now.
    with trio.fail_after(20):
        with trio.CancelScope() as scope:
            async with trio_mcp.open_stdio_client([*SERVER, "--stubborn"], protocol_version="2025-11-25") as client:
                await client.ping()
                scope.cancel()
                started = trio.current_time()
                await trio.sleep_forever()
        assert scope.cancelled_caught
        assert trio.current_time() - started < 2.5  # the graceful path takes over 4 s with this server


class RawPeer:
    """The server process spoken to byte by byte, to assert exactly what goes over the pipes."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.buffer = b""

    async def send(self, message: Any) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(data)

    async def receive(self) -> Any:
        assert self.process.stdout is not None
        while b"\n" not in self.buffer:
            chunk = await self.process.stdout.receive_some(65536)
            if not chunk:
                raise EOFError("server closed stdout")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    async def initialize(self, version: str = "2025-11-25") -> Any:
        return await handshake(self.send, self.receive, version)


@pytest.fixture
async def raw_peer() -> AsyncIterator[RawPeer]:
    process = await trio.lowlevel.open_process(
        SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        yield RawPeer(process)
    finally:
        process.kill()
        await process.wait()


async def test_cancelled_request_gets_no_response_on_the_wire(raw_peer: RawPeer, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with trio.fail_after(10):
        await raw_peer.initialize()
        await raw_peer.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"seconds": 30, "marker": str(marker)}},
            }
        )
        while not marker.exists():
            await trio.sleep(0.01)
        await raw_peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        await raw_peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert await raw_peer.receive() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        while "cancelled" not in marker.read_text():
            await trio.sleep(0.01)
        await raw_peer.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert await raw_peer.receive() == {"jsonrpc": "2.0", "id": 3, "result": {}}


async def test_requests_before_initialize_are_refused(raw_peer: RawPeer) -> None:
    with trio.fail_after(10):
        await raw_peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        reply = await raw_peer.receive()
        assert reply["error"]["code"] == -32600
        assert "before initialize" in reply["error"]["message"]
        await raw_peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert (await raw_peer.receive())["result"] == {}
        result = await raw_peer.initialize("2025-06-18")
        assert result["protocolVersion"] == "2025-06-18"
        await raw_peer.send({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {}})
        assert "already initialized" in (await raw_peer.receive())["error"]["message"]


async def test_unknown_protocol_version_gets_the_latest_legacy_revision(raw_peer: RawPeer) -> None:
    with trio.fail_after(10):
        result = await raw_peer.initialize("1999-01-01")
        assert result["protocolVersion"] == "2025-11-25"


async def test_framing_errors_over_pipes_and_the_session_survives(raw_peer: RawPeer) -> None:
    with trio.fail_after(10):
        await raw_peer.initialize()
        cases = [
            (b'{"jsonrpc":"2.0","id":1,\n', -32700),
            (b"not json at all\n", -32700),
            (b"\xc3\x28\n", -32700),
            (b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n', -32600),
            (b'{"jsonrpc":"2.0","id":true,"method":"ping"}\n', -32600),
            (b'{"id":1,"method":"ping"}\n', -32600),
            (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n', -32600),
        ]
        for raw, code in cases:
            await raw_peer.send_raw(raw)
            reply = await raw_peer.receive()
            assert reply["error"]["code"] == code, raw
        await raw_peer.send({"jsonrpc": "2.0", "id": 5, "method": "no/such/method"})
        assert (await raw_peer.receive())["error"]["code"] == -32601
        await raw_peer.send({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"arguments": {}}})
        reply = await raw_peer.receive()
        assert reply["error"]["code"] == -32602
        assert "name" in reply["error"]["message"]
        await raw_peer.send({"jsonrpc": "2.0", "id": 7, "method": "initialize"})  # no params at all
        assert (await raw_peer.receive())["error"]["code"] in (-32600, -32602)
        await raw_peer.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
        assert await raw_peer.receive() == {"jsonrpc": "2.0", "id": 8, "result": {}}


async def test_batches_are_accepted_on_2025_03_26_only(raw_peer: RawPeer) -> None:
    with trio.fail_after(10):
        await raw_peer.initialize("2025-03-26")
        await raw_peer.send(
            [
                {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "b"}},
                },
            ]
        )
        reply = await raw_peer.receive()
        assert sorted(item["id"] for item in reply) == [1, 2]


async def test_oversized_line_is_refused_and_the_session_survives(raw_peer: RawPeer) -> None:
    with trio.fail_after(20):
        await raw_peer.initialize()
        chunk = b"x" * (1024 * 1024)
        async with trio.open_nursery() as nursery:

            async def flood() -> None:
                for _ in range(20):  # 20 MiB, beyond the 16 MiB line limit
                    await raw_peer.send_raw(chunk)
                await raw_peer.send_raw(b"\n")

            nursery.start_soon(flood)
            reply = await raw_peer.receive()
        assert reply["error"]["code"] == -32600
        assert "line limit" in reply["error"]["message"]
        await raw_peer.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})
        assert (await raw_peer.receive())["id"] == 9


async def test_server_exits_promptly_on_stdin_eof(raw_peer: RawPeer) -> None:
    with trio.fail_after(10):
        await raw_peer.initialize()
        assert raw_peer.process.stdin is not None
        await raw_peer.process.stdin.aclose()
        started = trio.current_time()
        assert await raw_peer.process.wait() == 0
        assert trio.current_time() - started < 2


async def test_sigterm_stops_a_server(raw_peer: RawPeer) -> None:
    with trio.fail_after(10):
        await raw_peer.initialize()
        raw_peer.process.send_signal(signal.SIGTERM)
        assert await raw_peer.process.wait() == -signal.SIGTERM


async def test_lines_sent_later_go_out_before_receive_waits_or_at_flush_and_close_drops_them() -> None:
    incoming, outgoing, writes = recording_pipes()
    stream = StdioMessageStream(incoming, outgoing)
    incoming.put_data(b'{"m":1}\n{"m":2}\n')
    assert await stream.receive() == {"m": 1}
    stream.send_later({"n": 1})
    assert await stream.receive() == {"m": 2}
    assert writes == []  # another line was at hand: nothing written yet
    stream.send_later({"n": 2})
    with trio.move_on_after(0.1):
        await stream.receive()
    assert writes == [b'{"n":1}\n{"n":2}\n']  # written in one write, before waiting for input
    stream.send_later({"n": 3})
    await stream.flush()
    assert writes[1:] == [b'{"n":3}\n']
    stream.send_later({"n": 4})
    await stream.aclose()  # closing means now: what is still queued is not written
    assert len(writes) == 2
    with pytest.raises(trio_mcp.ConnectionClosed):
        stream.send_later({"n": 5})


async def test_writes_to_a_pipe_go_out_whole_and_in_order_however_large(stdio_server_io: str) -> None:
    """A write the pipe takes at once, then one several times the pipe's size while the peer reads slowly."""
    read_end, write_end = os.pipe()
    writer = ThreadSendStream(write_end) if stdio_server_io == "portable" else trio.lowlevel.FdStream(write_end)
    stream = StdioMessageStream(trio.testing.MemoryReceiveStream(), writer)
    peer = trio.lowlevel.FdStream(read_end)
    big = {"text": "x" * 400_000}
    received = bytearray()
    with trio.fail_after(10):
        await stream.send({"n": 1})
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stream.send, big)
            while received.count(b"\n") < 2:
                await trio.sleep(0.001)  # a slow reader: the big line cannot go in one write
                received += await peer.receive_some(16384)
        await stream.aclose()
        await peer.aclose()
    first, second, rest = bytes(received).split(b"\n")
    assert json.loads(first) == {"n": 1} and json.loads(second) == big and rest == b""


async def test_server_stream_serves_fds_0_and_1_and_points_fd_1_at_stderr_meanwhile() -> None:
    """In this process: fds 0 and 1 on pipes of the test's own, fd 2 on a file; what the handler would print goes
    to fd 2, messages to the real fd 1, and every fd is back as it was afterwards."""
    to_server_r, to_server_w = os.pipe()
    from_server_r, from_server_w = os.pipe()
    err_r, err_w = os.pipe()
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    for fd, target in ((0, to_server_r), (1, from_server_w), (2, err_w)):
        os.dup2(target, fd)
    try:
        with trio.fail_after(10):
            async with stdio_server_stream() as stream:
                os.write(to_server_w, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
                assert await stream.receive() == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
                os.write(1, b"a stray print\n")
                await stream.send({"jsonrpc": "2.0", "id": 1, "result": {}})
                assert os.read(from_server_r, 1000) == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
                assert os.read(err_r, 1000) == b"a stray print\n"
                os.close(to_server_w)
                with pytest.raises(trio_mcp.ConnectionClosed):
                    await stream.receive()  # end of stdin
            os.write(1, b"after\n")
            assert os.read(from_server_r, 1000) == b"after\n"  # fd 1 is the real stdout again
    finally:
        for fd, original in zip((0, 1, 2), saved):
            os.dup2(original, fd)
            os.close(original)
        for fd in (to_server_r, from_server_r, from_server_w, err_r, err_w):
            os.close(fd)


async def test_on_windows_the_client_ends_the_server_tree_with_taskkill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Windows branch of the shutdown, run here: a ``taskkill`` of ours on PATH records how it was called and
    ends the process group as ``taskkill /T /F`` ends a tree."""
    calls = tmp_path / "calls"
    taskkill = tmp_path / "taskkill"
    taskkill.write_text(
        f"#!{sys.executable}\nimport os, signal, sys\n"
        f"open({str(calls)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "os.killpg(int(sys.argv[2]), signal.SIGKILL)\n"
    )
    taskkill.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(StdioProcess, "shutdown_grace", 0.3)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            process = await StdioProcess.start(nursery, [*SERVER, "--stubborn"], stderr="capture")
            client = await trio_mcp.connect_client(nursery, process.stream, protocol_version="2025-11-25")
            await client.ping()
            await client.aclose()
            monkeypatch.setattr(sys, "platform", "win32")
            await process.aclose()  # stdin closed, 0.3 s, then the tree ended: no SIGTERM step to ignore
            monkeypatch.undo()
    assert calls.read_text() == f"/PID {process.process.pid} /T /F\n"
    assert process.process.returncode == -signal.SIGKILL
