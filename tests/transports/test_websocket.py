"""MCP over WebSocket (a transport outside the MCP specification), over real sockets on 127.0.0.1.

The handshake and tool calls, both eras on one connection, cancellation both ways, the upgrade checks
(Origin, subprotocol, path), frame rules (binary: 1003, oversized: 1009 with flat memory, invalid JSON:
-32700), keep-alive pings on both sides, a peer that vanishes mid-call, and shutdown.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import struct
import subprocess
import sys
import tracemalloc
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import pytest
import trio
import trio.testing

from trio_mcp import Context, Server
from trio_mcp.client import Client
from trio_mcp.errors import ConnectionClosed
from trio_mcp.transports._base import MessageStream
from trio_mcp.transports.websocket import (
    DEFAULT_MAX_MESSAGE_BYTES,
    WebSocketMessageStream,
    WebSocketRejected,
    connect_websocket_stream,
    serve_websocket,
)
from trio_mcp.types import Root, TextContent

from transport_helpers import handshake  # isort: skip
from waiting import Arrivals  # isort: skip

LEGACY_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
MODERN = "2026-07-28"
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return str(block.text)


class Probe:
    """What the server's tools saw."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.cancelled = trio.Event()
        self.streams: list[WebSocketMessageStream] = []
        self.ended: list[tuple[WebSocketMessageStream, float]] = []
        self.endings = Arrivals()

    def end(self, stream: WebSocketMessageStream) -> None:
        self.ended.append((stream, trio.current_time()))
        self.endings.arrive()


def make_server(probe: Probe) -> Server:
    server = Server("ws-test", version="1.2.3", instructions="over a websocket")

    @server.tool()
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Sleep, noting the start and any cancellation."""
        probe.started.set()
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            probe.cancelled.set()
            raise
        return "slept"

    @server.tool()
    async def roots_probe(timeout: float, ctx: Context) -> str:
        """Ask the client for its roots, giving up (which cancels the request) after `timeout` seconds."""
        with trio.move_on_after(timeout):
            roots = await ctx.list_roots()
            return ",".join(root.uri for root in roots)
        return "gave up"

    return server


@asynccontextmanager
async def running_server(**options: Any) -> AsyncIterator[tuple[int, Probe]]:
    """A trio_mcp server on a WebSocket; yields its port. Stops when the block ends."""
    probe = Probe()
    server = make_server(probe)

    async def connect(stream: MessageStream) -> None:
        assert isinstance(stream, WebSocketMessageStream)
        probe.streams.append(stream)
        try:
            await server.serve_connection(stream)
        finally:
            probe.end(stream)

    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(serve_websocket, connect, "127.0.0.1", 0, **options))
        yield port, probe
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def ws_client(
    url: str, *, stream_options: dict[str, Any] | None = None, **client_options: Any
) -> AsyncIterator[tuple[Client, WebSocketMessageStream]]:
    async with trio.open_nursery() as nursery:
        stream = await connect_websocket_stream(nursery, url, **(stream_options or {}))
        client = Client(stream, **client_options)
        await client.start(nursery)
        try:
            yield client, stream
        finally:
            await client.aclose()


def url_of(port: int) -> str:
    return f"ws://127.0.0.1:{port}/mcp"


# -- a hand-written WebSocket peer, for what no well-behaved library sends ---------------------------------


def frame(opcode: int, payload: bytes = b"", *, length: int | None = None, fin: bool = True) -> bytes:
    """A client frame (masked, with an all-zero key so the payload goes as it is)."""
    n = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    return head + b"\0\0\0\0" + payload


class RawPeer:
    def __init__(self, sock: trio.SocketStream) -> None:
        self.sock = sock
        self.buffer = bytearray()

    async def _fill(self) -> bool:
        try:
            data = await self.sock.receive_some(65536)
        except trio.BrokenResourceError:
            return False
        self.buffer += data
        return bool(data)

    async def read_head(self) -> bytes:
        while b"\r\n\r\n" not in self.buffer:
            if not await self._fill():
                raise EOFError("no response head")
        head, _, rest = bytes(self.buffer).partition(b"\r\n\r\n")
        self.buffer = bytearray(rest)
        return head

    async def _take(self, n: int) -> bytes | None:
        while len(self.buffer) < n:
            if not await self._fill():
                return None
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    async def read_frame(self) -> tuple[int, bytes] | None:
        """The next server frame as (opcode, payload); None at end of stream."""
        head = await self._take(2)
        if head is None:
            return None
        length = head[1] & 0x7F
        if length == 126:
            ext = await self._take(2)
            assert ext is not None
            length = struct.unpack("!H", ext)[0]
        elif length == 127:
            ext = await self._take(8)
            assert ext is not None
            length = struct.unpack("!Q", ext)[0]
        assert not head[1] & 0x80, "server frames are not masked"
        payload = await self._take(length)
        assert payload is not None
        return head[0] & 0x0F, payload

    async def send_json(self, message: Any) -> None:
        import json

        await self.sock.send_all(frame(0x1, json.dumps(message).encode()))

    async def receive_json(self) -> Any:
        import json

        while True:
            item = await self.read_frame()
            assert item is not None, "connection closed"
            opcode, payload = item
            if opcode == 0x9:
                await self.sock.send_all(frame(0xA, payload))
            elif opcode == 0x1:
                return json.loads(payload)


async def upgrade(
    port: int, *, subprotocol: str | None = "mcp", origin: str | None = None, path: str = "/mcp"
) -> tuple[RawPeer, int, bytes]:
    sock = await trio.open_tcp_stream("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        f"GET {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    if subprotocol is not None:
        lines.append(f"Sec-WebSocket-Protocol: {subprotocol}")
    if origin is not None:
        lines.append(f"Origin: {origin}")
    await sock.send_all(("\r\n".join(lines) + "\r\n\r\n").encode())
    peer = RawPeer(sock)
    head = await peer.read_head()
    return peer, int(head.split()[1]), head


async def initialize_raw(peer: RawPeer) -> None:
    assert (await handshake(peer.send_json, peer.receive_json))["serverInfo"]["name"] == "ws-test"


def close_code(payload: bytes) -> int:
    return int(struct.unpack("!H", payload[:2])[0])


# -- handshake, calls, both eras ----------------------------------------------------------------------------


async def test_handshake_and_tool_calls_on_each_revision() -> None:
    with trio.fail_after(10):
        async with running_server() as (port, probe):
            for version in ["auto", *LEGACY_VERSIONS]:
                async with ws_client(url_of(port), protocol_version=version) as (client, stream):
                    assert stream.websocket.subprotocol == "mcp"
                    assert client.protocol_version == (MODERN if version == "auto" else version)
                    assert client.server_info.name == "ws-test"
                    assert client.instructions == "over a websocket"
                    await client.ping()
                    tools = await client.list_tools()
                    assert [tool.name for tool in tools.tools] == ["echo", "sleep", "roots_probe"]
                    assert text_of(await client.call_tool("echo", {"text": "héllo \u2603"})) == "héllo \u2603"
            assert len(probe.streams) == len(LEGACY_VERSIONS) + 1
            # Each connection ended with the client's close, and the server's session with it.
            await probe.endings.wait_for(len(probe.streams))
            assert all(stream.close_reason is not None and stream.close_reason.code == 1000 for stream in probe.streams)


async def test_concurrent_clients_and_calls() -> None:
    with trio.fail_after(10):
        async with running_server() as (port, _):

            async def one(n: int) -> None:
                async with ws_client(url_of(port)) as (client, _):
                    async with trio.open_nursery() as nursery:
                        for i in range(10):
                            nursery.start_soon(functools.partial(client.call_tool, "echo", {"text": f"{n}-{i}"}))
                    assert text_of(await client.call_tool("echo", {"text": str(n)})) == str(n)

            async with trio.open_nursery() as nursery:
                for n in range(5):
                    nursery.start_soon(one, n)


async def test_stateless_requests_on_the_same_connection() -> None:
    """As on stdio: a 2026-07-28 request carries its own envelope and is answered on any connection."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    with trio.fail_after(10):
        async with running_server() as (port, _), trio.open_nursery() as nursery:
            stream = await connect_websocket_stream(nursery, url_of(port))
            await stream.send({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}})
            reply = await stream.receive()
            assert MODERN in reply["result"]["supportedVersions"]
            await stream.send(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta},
                }
            )
            reply = await stream.receive()
            assert reply["id"] == 2 and reply["result"]["content"][0]["text"] == "hi"
            await stream.aclose()


# -- cancellation both ways ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2025-11-25", "auto"])
async def test_caller_cancel_cancels_the_server_handler(version: str) -> None:
    with trio.fail_after(10):
        async with running_server() as (port, probe), ws_client(url_of(port), protocol_version=version) as (client, _):
            with trio.move_on_after(0.3) as scope:
                await client.call_tool("sleep", {"seconds": 30})
            assert scope.cancelled_caught
            await probe.cancelled.wait()
            assert text_of(await client.call_tool("echo", {"text": "after"})) == "after"


async def test_server_cancel_cancels_the_client_callback() -> None:
    outcome: list[str] = []

    async def roots() -> list[Root]:
        try:
            await trio.sleep(60)
        except trio.Cancelled:
            outcome.append("cancelled")
            raise
        return []

    with trio.fail_after(10):
        # Server-to-client requests exist in the legacy era (2026-07-28 embeds them in results instead).
        async with (
            running_server() as (port, _),
            ws_client(url_of(port), roots=roots, protocol_version="2025-11-25") as (client, _),
        ):
            assert text_of(await client.call_tool("roots_probe", {"timeout": 0.3})) == "gave up"
            await client.ping()  # the cancel notification was read before the ping's answer
            assert outcome == ["cancelled"]
            assert client.session.statistics().inbound_in_flight == 0


async def test_server_requests_reach_the_client() -> None:
    async def roots() -> list[Root]:
        return [Root(uri="file:///work", name="work")]

    with trio.fail_after(10):
        for version in ("2025-11-25", "auto"):
            async with (
                running_server() as (port, _),
                ws_client(url_of(port), roots=roots, protocol_version=version) as (client, _),
            ):
                assert text_of(await client.call_tool("roots_probe", {"timeout": 5})) == "file:///work"


# -- the upgrade ---------------------------------------------------------------------------------------------


async def test_foreign_origin_is_refused() -> None:
    with trio.fail_after(10):
        async with running_server() as (port, probe), trio.open_nursery() as nursery:
            with pytest.raises(WebSocketRejected) as info:
                await connect_websocket_stream(nursery, url_of(port), origin="https://evil.example")
            assert info.value.status_code == 403
            assert "Origin" in str(info.value)
            # A DNS-rebinding page: a local address, a foreign origin.
            peer, status, _ = await upgrade(port, origin=f"http://attacker.example:{port}")
            assert status == 403
            await peer.sock.aclose()
            # Local origins (any port) and no Origin at all are accepted.
            for origin in ("http://localhost:5173", "http://127.0.0.1", None):
                stream = await connect_websocket_stream(nursery, url_of(port), origin=origin)
                await stream.aclose()
            assert len(probe.streams) == 3


async def test_configured_origins() -> None:
    with trio.fail_after(10):
        async with running_server(allowed_origins=["https://app.example"]) as (port, _), trio.open_nursery() as nursery:
            stream = await connect_websocket_stream(nursery, url_of(port), origin="https://app.example")
            await stream.aclose()
            with pytest.raises(WebSocketRejected, match="403"):
                await connect_websocket_stream(nursery, url_of(port), origin="http://localhost")


@pytest.mark.parametrize("subprotocol", [None, "graphql-ws", "MCP2"])
async def test_upgrade_without_the_mcp_subprotocol_is_refused(subprotocol: str | None) -> None:
    with trio.fail_after(10):
        async with running_server() as (port, probe):
            peer, status, _ = await upgrade(port, subprotocol=subprotocol)
            assert status == 400
            body = bytes(peer.buffer)
            while await peer._fill():
                body = bytes(peer.buffer)
            await peer.sock.aclose()
            assert b"subprotocol is required" in body
            assert probe.streams == []


async def test_path_is_checked_when_configured() -> None:
    with trio.fail_after(10):
        async with running_server(path="/mcp") as (port, _):
            peer, status, _ = await upgrade(port, path="/other")
            assert status == 404
            await peer.sock.aclose()
            peer, status, head = await upgrade(port, path="/mcp?token=1")
            assert status == 101 and b"sec-websocket-protocol: mcp" in head.lower()
            await peer.sock.aclose()


async def test_client_refuses_a_server_that_does_not_select_mcp() -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(raw_server, None)
            with pytest.raises(ConnectionClosed, match="did not select the 'mcp' subprotocol"):
                await connect_websocket_stream(nursery, url_of(port), close_timeout=0.2)
            nursery.cancel_scope.cancel()


# -- frames -------------------------------------------------------------------------------------------------


async def test_binary_frame_closes_with_1003() -> None:
    with trio.fail_after(10):
        async with running_server() as (port, probe), trio.open_nursery() as nursery:
            stream = await connect_websocket_stream(nursery, url_of(port))
            await stream.websocket.send_message(b'{"jsonrpc": "2.0", "method": "ping", "id": 1}')
            with pytest.raises(ConnectionClosed, match="1003"):
                await stream.receive()
            assert stream.close_reason is not None and stream.close_reason.code == 1003
            await stream.aclose()
            await probe.endings.wait_for(1)


async def test_invalid_json_gets_parse_error_and_the_session_keeps_serving() -> None:
    with trio.fail_after(10):
        async with running_server() as (port, _), trio.open_nursery() as nursery:
            stream = await connect_websocket_stream(nursery, url_of(port))
            for bad in ("{not json", "", "[1, 2", "NaN"):
                await stream.websocket.send_message(bad)
                reply = await stream.receive()
                assert reply["id"] is None and reply["error"]["code"] == -32700
            client = Client(stream)
            await client.start(nursery)
            assert text_of(await client.call_tool("echo", {"text": "still here"})) == "still here"
            await client.aclose()


@pytest.mark.parametrize(("limit", "budget"), [(1 << 20, 6 << 20), (DEFAULT_MAX_MESSAGE_BYTES, 48 << 20)])
async def test_oversized_frame_closes_with_1009_without_buffering_it(limit: int, budget: int) -> None:
    """A 100 MB frame is refused once it passes the limit, while it arrives: memory stays far below 100 MB."""
    size = 100 * 1024 * 1024
    chunk = b"a" * 65536
    with trio.fail_after(15):
        async with running_server(max_message_bytes=limit) as (port, probe):
            peer, status, _ = await upgrade(port)
            assert status == 101
            tracemalloc.start()
            try:
                baseline, _ = tracemalloc.get_traced_memory()
                sent = 0
                close: list[int] = []
                async with trio.open_nursery() as nursery:

                    async def flood() -> None:
                        nonlocal sent
                        await peer.sock.send_all(frame(0x1, length=size))
                        try:
                            while sent < size:
                                await peer.sock.send_all(chunk)
                                sent += len(chunk)
                        except (trio.BrokenResourceError, trio.ClosedResourceError):
                            pass

                    async def watch() -> None:
                        while True:
                            item = await peer.read_frame()
                            assert item is not None, "closed without a close frame"
                            if item[0] == 0x8:
                                close.append(close_code(item[1]))
                                nursery.cancel_scope.cancel()
                                return

                    nursery.start_soon(flood)
                    nursery.start_soon(watch)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert close == [1009]
            assert sent < size  # refused mid-frame
            assert peak - baseline < budget, f"peak {peak - baseline} bytes"
            await peer.sock.aclose()
            await probe.endings.wait_for(1)
            stream = probe.streams[0]
            assert stream.close_reason is not None and stream.close_reason.code == 1009


async def test_client_refuses_an_oversized_message_from_the_server() -> None:
    with trio.fail_after(10):
        async with (
            running_server() as (port, probe),
            ws_client(url_of(port), stream_options={"max_message_bytes": 8192}) as (client, stream),
        ):
            assert text_of(await client.call_tool("echo", {"text": "x" * 4000})) == "x" * 4000
            with pytest.raises(ConnectionClosed, match="1009"):
                await client.call_tool("echo", {"text": "x" * 20000})
            assert stream.close_reason is not None and stream.close_reason.code == 1009
            await probe.endings.wait_for(1)


async def test_connection_cap() -> None:
    with trio.fail_after(10):
        async with running_server(max_connections=1) as (port, probe), trio.open_nursery() as nursery:
            first = await connect_websocket_stream(nursery, url_of(port))
            with pytest.raises(WebSocketRejected) as info:
                await connect_websocket_stream(nursery, url_of(port))
            assert info.value.status_code == 503
            await first.aclose()
            await probe.endings.wait_for(1)
            await trio.testing.wait_all_tasks_blocked()  # the server has let go of the first connection
            second = await connect_websocket_stream(nursery, url_of(port))
            await second.aclose()


# -- keep-alive and vanishing peers -------------------------------------------------------------------------


async def test_idle_connection_is_kept_alive_by_pings(autojump_clock: trio.testing.MockClock) -> None:
    fast: dict[str, Any] = {"ping_interval": 0.1, "pong_timeout": 0.5}
    with trio.fail_after(10):
        async with (
            running_server(**fast) as (port, probe),
            ws_client(url_of(port), stream_options=fast) as (client, stream),
        ):
            await trio.sleep(0.8)  # idle: only pings and pongs cross
            assert text_of(await client.call_tool("echo", {"text": "awake"})) == "awake"
            assert stream.pings_sent >= 3 and probe.streams[0].pings_sent >= 3
            assert probe.ended == []


async def test_server_drops_a_peer_that_does_not_answer_pings() -> None:
    with trio.fail_after(10):
        async with running_server(ping_interval=0.1, pong_timeout=0.2) as (port, probe):
            peer, status, _ = await upgrade(port)
            assert status == 101
            opened = trio.current_time()
            pings = 0
            while True:  # never answer; read what the server sends until it drops us
                item = await peer.read_frame()
                if item is None:
                    break
                pings += item[0] == 0x9
            await peer.sock.aclose()
            assert pings >= 1
            await probe.endings.wait_for(1)
            assert probe.ended[0][1] - opened < 2.0
            with pytest.raises(ConnectionClosed, match="did not answer a ping"):
                await probe.streams[0].receive()


async def raw_server(subprotocol: str | None, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """Accepts the upgrade, then reads nothing and answers nothing (a hung server)."""

    async def handler(sock: trio.SocketStream) -> None:
        peer = RawPeer(sock)
        head = (await peer.read_head()).decode()
        key = next(
            line.split(":", 1)[1].strip()
            for line in head.split("\r\n")
            if line.lower().startswith("sec-websocket-key:")
        )
        accept = base64.b64encode(hashlib.sha1(key.encode() + WS_GUID).digest()).decode()
        response = (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept}\r\n"
        )
        if subprotocol is not None:
            response += f"Sec-WebSocket-Protocol: {subprotocol}\r\n"
        await sock.send_all((response + "\r\n").encode())
        await trio.sleep_forever()

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(handler, listeners)


async def test_client_drops_a_server_that_does_not_answer_pings() -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(raw_server, "mcp")
            stream = await connect_websocket_stream(nursery, url_of(port), ping_interval=0.1, pong_timeout=0.2)
            started = trio.current_time()
            with pytest.raises(ConnectionClosed, match="did not answer a ping"):
                await stream.receive()
            assert trio.current_time() - started < 2.0
            with pytest.raises(ConnectionClosed, match="did not answer a ping"):
                await stream.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await stream.aclose()
            nursery.cancel_scope.cancel()


CHILD_SERVER = r"""
import trio
from trio_mcp import Server
from trio_mcp.transports.websocket import serve_websocket

server = Server("ws-child")

@server.tool()
async def hang() -> str:
    print("hanging", flush=True)
    await trio.sleep(60)
    return "never"

async def main() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_websocket, server.serve_connection)
        print(port, flush=True)

trio.run(main)
"""


async def test_server_vanishing_mid_call_fails_pending_calls_at_once() -> None:
    with trio.fail_after(15):
        process = await trio.lowlevel.open_process([sys.executable, "-c", CHILD_SERVER], stdout=subprocess.PIPE)
        try:
            assert process.stdout is not None
            lines: trio.MemorySendChannel[str]
            lines, receive_lines = trio.open_memory_channel[str](10)

            async def read_lines() -> None:
                assert process.stdout is not None
                buffer = b""
                async with lines:
                    async for data in process.stdout:
                        buffer += data
                        while b"\n" in buffer:
                            line, buffer = buffer.split(b"\n", 1)
                            await lines.send(line.decode())

            async with trio.open_nursery() as nursery:
                nursery.start_soon(read_lines)
                port = int(await receive_lines.receive())
                async with ws_client(url_of(port)) as (client, _):
                    failures: list[tuple[BaseException, float]] = []

                    async def call() -> None:
                        try:
                            await client.call_tool("hang")
                        except ConnectionClosed as exc:
                            failures.append((exc, trio.current_time()))

                    async with trio.open_nursery() as calls:
                        calls.start_soon(call)
                        calls.start_soon(call)
                        assert await receive_lines.receive() == "hanging"
                        assert await receive_lines.receive() == "hanging"
                        process.kill()
                        killed = trio.current_time()
                    assert len(failures) == 2
                    assert all(at - killed < 1.0 for _, at in failures)  # not the 60 s request timeout
                    assert "connection lost" in str(failures[0][0]) or "closed" in str(failures[0][0])
        finally:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()


async def test_client_vanishing_mid_call_cancels_the_handler() -> None:
    with trio.fail_after(10):
        async with running_server() as (port, probe):
            peer, status, _ = await upgrade(port)
            assert status == 101
            await initialize_raw(peer)
            await peer.send_json(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "sleep", "arguments": {"seconds": 30}},
                }
            )
            await probe.started.wait()
            await peer.sock.aclose()  # no close frame: the TCP connection just goes
            await probe.cancelled.wait()
            await probe.endings.wait_for(1)
            assert probe.streams[0].close_reason is not None and probe.streams[0].close_reason.code == 1006


async def test_server_shutdown_closes_connections_with_1001() -> None:
    probe = Probe()
    server = make_server(probe)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            server_scope = trio.CancelScope()

            async def run_server(task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
                with server_scope:
                    await serve_websocket(server.serve_connection, task_status=task_status)

            port = await nursery.start(run_server)
            async with ws_client(url_of(port)) as (client, stream):
                failed = trio.Event()

                async def call() -> None:
                    with pytest.raises(ConnectionClosed):
                        await client.call_tool("sleep", {"seconds": 30})
                    failed.set()

                nursery.start_soon(call)
                await probe.started.wait()
                server_scope.cancel()
                with pytest.raises(ConnectionClosed, match="1001"):
                    await client.ping()
                await probe.cancelled.wait()
                assert stream.close_reason is not None and stream.close_reason.code == 1001
            await failed.wait()  # the pending call failed with ConnectionClosed


async def test_unreachable_and_invalid_urls() -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
            port = listeners[0].socket.getsockname()[1]
            await listeners[0].aclose()  # nothing listens there now
            with pytest.raises(ConnectionClosed, match="could not connect"):
                await connect_websocket_stream(nursery, url_of(port))
            with pytest.raises(ValueError, match="ws://"):
                await connect_websocket_stream(nursery, f"http://127.0.0.1:{port}/mcp")
            # A listener that never answers the upgrade: bounded by connect_timeout.
            silent = await trio.open_tcp_listeners(0, host="127.0.0.1")
            silent_port = silent[0].socket.getsockname()[1]
            with pytest.raises(ConnectionClosed, match="within 0.3 s"):
                await connect_websocket_stream(nursery, url_of(silent_port), connect_timeout=0.3)
            await silent[0].aclose()
