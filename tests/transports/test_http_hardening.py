"""The HTTP server transport under the faults that used to hurt it, over real sockets on 127.0.0.1: log
records racing a call's answer, requests smuggled behind conflicting framing, forged Host values, stopping
with calls in flight, a port in use, and dropped stateless streams."""

from __future__ import annotations

import json
import logging
import socket
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup
import trio.testing

import trio_mcp
from trio_mcp import Context, McpLogHandler, Server
from trio_mcp._core.sse import SSEDecoder
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports.http import Drain, HttpTransportOptions

from transport_helpers import initialize_request  # isort: skip
from waiting import Arrivals, task_count, wait_until  # isort: skip

MODERN = "2026-07-28"
ACCEPT = "application/json, text/event-stream"


def chatty_server(waiting: Arrivals | None = None) -> Server:
    """A server whose ``chatty`` logs before answering and whose ``wait`` stays in flight (counted in
    ``waiting``) until cancelled."""
    server = Server("chatty")
    stdlib_logger = logging.getLogger("tests.http_hardening")
    stdlib_logger.setLevel(logging.INFO)
    if not any(isinstance(handler, McpLogHandler) for handler in stdlib_logger.handlers):
        stdlib_logger.addHandler(McpLogHandler())

    @server.tool()
    async def chatty(n: int, ctx: Context) -> str:
        """Log through the stdlib bridge, several times, right before answering."""
        for i in range(3):
            stdlib_logger.info("step %d of call %d", i, n)
        await ctx.report_progress(1, total=1)
        return f"done {n}"

    @server.tool()
    async def wait(ctx: Context) -> str:
        """Stay in flight until cancelled."""
        if waiting is not None:
            waiting.arrive()
        await trio.sleep_forever()
        return "never"

    return server


@pytest.fixture
async def chatty_port(nursery: trio.Nursery) -> AsyncIterator[int]:
    yield await nursery.start(chatty_server().serve_http, "127.0.0.1", 0)


async def test_log_records_racing_the_answers_never_break_the_server(chatty_port: int) -> None:
    """Stdlib records queued during a call go out after its answer has ended the stream: they must go to the
    GET stream (or nowhere), never onto the finished response, and the server keeps serving."""
    url = f"http://127.0.0.1:{chatty_port}/mcp"
    logs: list[Any] = []
    with trio.fail_after(30):
        async with trio_mcp.open_http_client(url, protocol_version="2025-11-25", on_log=logs.append) as client:
            await client.set_logging_level("info")
            for n in range(60):
                result = await client.call_tool("chatty", {"n": n})
                assert result.content[0].text == f"done {n}"  # type: ignore[union-attr]
        async with trio_mcp.open_http_client(url, protocol_version="2025-11-25") as again:
            assert (await again.call_tool("chatty", {"n": 99})).content[0].text == "done 99"  # type: ignore[union-attr]


async def test_concurrent_chatty_calls_on_one_session(chatty_port: int) -> None:
    url = f"http://127.0.0.1:{chatty_port}/mcp"
    with trio.fail_after(30):
        async with trio_mcp.open_http_client(url, protocol_version="2025-06-18", on_log=lambda _: None) as client:
            await client.set_logging_level("info")

            async def calls(base: int) -> None:
                for n in range(base, base + 15):
                    assert (await client.call_tool("chatty", {"n": n})).content[0].text == f"done {n}"  # type: ignore[union-attr]

            async with trio.open_nursery() as nursery:
                for base in (0, 100, 200, 300):
                    nursery.start_soon(calls, base)


# -- framing and Host ------------------------------------------------------------------------------------


async def raw_exchange(port: int, data: bytes) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(data)
    received = b""
    with trio.move_on_after(3):
        while chunk := await stream.receive_some(65536):
            received += chunk
    await stream.aclose()
    return received


async def test_a_request_smuggled_behind_conflicting_framing_is_not_served(chatty_port: int) -> None:
    smuggled = b"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
    body = b"0\r\n\r\n" + smuggled
    data = (
        b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\ntransfer-encoding: chunked\r\n\r\n" + body
    )
    with trio.fail_after(10):
        received = await raw_exchange(chatty_port, data)
    assert received.startswith(b"HTTP/1.1 400 ")
    assert b"connection: close" in received.lower()
    assert received.count(b"HTTP/1.1 ") == 1  # the request behind it got no answer: the connection closed


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("[::1].evil.example", 400),
        ("[::1]evil.example", 400),
        ("localhost:{port}.evil.example", 400),
        ("localhost:80:80", 400),
        ("evil.example", 421),
        ("localhost.evil.example", 421),
        ("127.0.0.1:{port}", 200),
        ("[::1]:{port}", 200),
        ("LOCALHOST", 200),
    ],
)
async def test_host_is_parsed_strictly(chatty_port: int, host: str, status: int) -> None:
    message = json.dumps(initialize_request(id=1)).encode()
    data = (
        f"POST /mcp HTTP/1.1\r\nhost: {host.format(port=chatty_port)}\r\ncontent-type: application/json\r\n"
        f"accept: {ACCEPT}\r\ncontent-length: {len(message)}\r\nconnection: close\r\n\r\n"
    ).encode() + message
    with trio.fail_after(10):
        received = await raw_exchange(chatty_port, data)
    assert received.startswith(f"HTTP/1.1 {status} ".encode()), received[:200]


async def test_two_host_headers_are_refused(chatty_port: int) -> None:
    data = b"GET /mcp HTTP/1.1\r\nhost: localhost\r\nhost: evil.example\r\n\r\n"
    with trio.fail_after(10):
        assert (await raw_exchange(chatty_port, data)).startswith(b"HTTP/1.1 400 ")


# -- stopping ----------------------------------------------------------------------------------------------


def stateless_call(name: str) -> tuple[bytes, list[tuple[str, str]]]:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = [
        ("content-type", "application/json"),
        ("accept", ACCEPT),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", name),
    ]
    return json.dumps(message).encode(), headers


async def test_cancelling_serve_http_with_calls_in_flight_returns_at_once() -> None:
    """Calls in flight in every era (stateless, session, HTTP+SSE): the server returns at once, and every
    client sees ConnectionClosed, never an HTTP state-machine message."""
    waiting = Arrivals()
    server = chatty_server(waiting)
    outcomes: dict[str, str] = {}
    with trio.fail_after(15):
        async with trio.open_nursery() as clients:
            async with trio.open_nursery() as serving:
                port = await serving.start(server.serve_http, "127.0.0.1", 0)

                async def call(version: str) -> None:
                    path = "/sse" if version == "2024-11-05" else "/mcp"
                    try:
                        async with trio_mcp.open_http_client(
                            f"http://127.0.0.1:{port}{path}", protocol_version=version
                        ) as client:
                            await client.call_tool("wait")
                    except trio_mcp.ConnectionClosed:
                        outcomes[version] = "ConnectionClosed"
                    except Exception as exc:
                        outcomes[version] = repr(exc)

                for version in (MODERN, "2025-11-25", "2024-11-05"):
                    clients.start_soon(call, version)
                await waiting.wait_for(3)  # every call reaches its handler
                start = trio.current_time()
                serving.cancel_scope.cancel()
            elapsed = trio.current_time() - start
    assert elapsed < 0.1, f"serve_http took {elapsed:.3f} s to stop"
    assert outcomes == dict.fromkeys((MODERN, "2025-11-25", "2024-11-05"), "ConnectionClosed")


async def test_cancelling_serve_websocket_with_calls_in_flight_returns_at_once() -> None:
    waiting = Arrivals()
    server = chatty_server(waiting)
    with trio.fail_after(15):
        async with trio.open_nursery() as clients:
            async with trio.open_nursery() as serving:
                port = await serving.start(server.serve_websocket, "127.0.0.1", 0)

                async def call() -> None:
                    try:
                        async with trio_mcp.open_websocket_client(f"ws://127.0.0.1:{port}") as client:
                            await client.call_tool("wait")
                    except trio_mcp.ConnectionClosed:
                        pass

                clients.start_soon(call)
                await waiting.wait_for(1)  # the call is in its handler
                start = trio.current_time()
                serving.cancel_scope.cancel()
            elapsed = trio.current_time() - start
            clients.cancel_scope.cancel()
    assert elapsed < 0.1, f"serve_websocket took {elapsed:.3f} s to stop"


async def test_a_drain_refuses_new_work_and_lets_a_short_call_finish() -> None:
    server = Server("drained")
    running = Arrivals()

    @server.tool()
    async def short() -> str:
        """Finish shortly after the drain began."""
        running.arrive()
        await trio.sleep(0.3)
        return "finished"

    drain = Drain()
    options = HttpTransportOptions(drain=drain)
    with trio.fail_after(15):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: server.serve_http("127.0.0.1", 0, options=options, task_status=task_status)
            )
            answer: list[Any] = []

            async def call() -> None:
                body, headers = stateless_call("short")
                async with HttpClient() as http:
                    response = await http.request("POST", f"http://127.0.0.1:{port}/mcp", headers=headers, body=body)
                    answer.append(json.loads(await response.read()))

            nursery.start_soon(call)
            await running.wait_for(1)
            assert await drain(5)
            assert answer and answer[0]["result"]["content"][0]["text"] == "finished"
            with pytest.raises(OSError):
                await trio.open_tcp_stream("127.0.0.1", port)
            nursery.cancel_scope.cancel()


async def test_a_port_in_use_raises_oserror() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with trio.fail_after(5), pytest.raises(OSError) as info:
            await Server("busy").serve_http("127.0.0.1", port)
        assert type(info.value) is not BaseExceptionGroup and info.value.errno is not None


# -- what a stateless request owns ------------------------------------------------------------------------


async def test_a_dropped_stateless_stream_ends_everything_its_request_started(nursery: trio.Nursery) -> None:
    """Keep-alive ticks included: 5 dropped streams leave no task behind (they used to live 15 s)."""
    server = chatty_server()

    @server.tool()
    async def stream_then_wait(ctx: Context) -> str:
        """Turn the answer into an SSE stream, then stay in flight."""
        await ctx.report_progress(1)
        await trio.sleep_forever()
        return "never"

    options = HttpTransportOptions(keepalive_interval=60)
    port = await nursery.start(
        lambda task_status: server.serve_http("127.0.0.1", 0, options=options, task_status=task_status)
    )
    body, headers = stateless_call("stream_then_wait")
    body = body.replace(b'"_meta": {', b'"_meta": {"progressToken": 1, ')
    headers = [(name, "stream_then_wait" if name == "mcp-name" else value) for name, value in headers]
    with trio.fail_after(10):
        await trio.testing.wait_all_tasks_blocked()
        tasks_before = task_count()
        for _ in range(5):
            async with HttpClient() as http:
                response = await http.request("POST", f"http://127.0.0.1:{port}/mcp", headers=headers, body=body)
                assert response.headers["content-type"] == "text/event-stream"
                await response.receive_some()  # the progress event: the handler is running
                await response.aclose()
        await wait_until(lambda: task_count() <= tasks_before)


async def test_a_stateless_log_record_arrives_before_the_answer(chatty_port: int) -> None:
    body, headers = stateless_call("chatty")
    message = json.loads(body)
    message["params"]["arguments"] = {"n": 7}
    message["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = "info"
    headers = [(name, "chatty" if name == "mcp-name" else value) for name, value in headers]
    with trio.fail_after(10):
        async with HttpClient() as http:
            response = await http.request(
                "POST", f"http://127.0.0.1:{chatty_port}/mcp", headers=headers, body=json.dumps(message).encode()
            )
            assert response.headers["content-type"] == "text/event-stream"
            decoder = SSEDecoder()
            received = []
            while chunk := await response.receive_some():
                received += [json.loads(event.data) for event in decoder.receive_data(chunk) if event.data]
    logs = [m["params"]["data"] for m in received if m.get("method") == "notifications/message"]
    assert logs == [f"step {i} of call 7" for i in range(3)]
    assert received[-1]["id"] == 1 and received[-1]["result"]["content"][0]["text"] == "done 7"


async def test_the_in_flight_refusal_names_its_limit_and_setting(nursery: trio.Nursery) -> None:
    server = Server("small", max_in_flight=1)
    holding = Arrivals()

    @server.tool()
    async def hold() -> str:
        """Stay in flight until cancelled."""
        holding.arrive()
        await trio.sleep_forever()
        return "never"

    port = await nursery.start(server.serve_http, "127.0.0.1", 0)
    with trio.fail_after(10):
        async with trio_mcp.open_http_client(f"http://127.0.0.1:{port}/mcp", protocol_version="2025-11-25") as client:
            async with trio.open_nursery() as calls:
                calls.start_soon(client.call_tool, "hold")
                await holding.wait_for(1)
                with pytest.raises(trio_mcp.McpError) as info:
                    await client.call_tool("hold")
                calls.cancel_scope.cancel()
    assert "1 requests are already in flight" in str(info.value) and "max_in_flight" in str(info.value)


class Custom(BaseException):
    """A BaseException that is neither an Exception nor trio's."""


@pytest.mark.parametrize("version", [MODERN, "2025-11-25"])
async def test_a_handler_raising_a_base_exception_fails_its_request_only(nursery: trio.Nursery, version: str) -> None:
    server = chatty_server()

    @server.tool()
    async def explode(kind: str) -> str:
        """Raise something that is not an Exception."""
        if kind == "exit":
            raise SystemExit(3)
        if kind == "stray-cancel":
            with trio.CancelScope() as scope:
                scope.cancel()
                try:
                    await trio.sleep(1)
                except trio.Cancelled as cancelled:
                    caught = cancelled
            raise caught  # a Cancelled escaping the scope it belongs to
        raise Custom("boom")

    port = await nursery.start(server.serve_http, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{port}/mcp"
    with trio.fail_after(20):
        for kind in ("exit", "custom", "stray-cancel"):
            try:
                async with trio_mcp.open_http_client(url, protocol_version=version) as client:
                    await client.call_tool("explode", {"kind": kind})
            except (trio_mcp.McpError, trio_mcp.ConnectionClosed):
                pass  # that request failed; the server did not
            async with trio_mcp.open_http_client(url, protocol_version=version) as client:
                assert (await client.call_tool("chatty", {"n": 1})).content[0].text == "done 1"  # type: ignore[union-attr]


async def test_a_websocket_handler_raising_a_base_exception_ends_its_connection_only(nursery: trio.Nursery) -> None:
    server = chatty_server()

    @server.tool()
    async def explode() -> str:
        """Raise something that is not an Exception."""
        raise Custom("boom")

    port = await nursery.start(server.serve_websocket, "127.0.0.1", 0)
    with trio.fail_after(20):
        try:
            async with trio_mcp.open_websocket_client(f"ws://127.0.0.1:{port}") as client:
                await client.call_tool("explode")
        except (trio_mcp.McpError, trio_mcp.ConnectionClosed):
            pass
        async with trio_mcp.open_websocket_client(f"ws://127.0.0.1:{port}") as client:
            assert (await client.call_tool("chatty", {"n": 2})).content[0].text == "done 2"  # type: ignore[union-attr]


async def test_a_websocket_port_in_use_raises_oserror() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with trio.fail_after(5), pytest.raises(OSError) as info:
            await Server("busy").serve_websocket("127.0.0.1", port)
        assert type(info.value) is not BaseExceptionGroup and info.value.errno is not None
