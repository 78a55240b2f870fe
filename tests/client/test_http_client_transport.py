"""The client-side HTTP transports over real sockets on 127.0.0.1: Streamable HTTP sessions (2025-03-26 ..
2025-11-25) and stateless requests (2026-07-28) against our own server and against small raw servers that
misbehave on purpose, HTTP+SSE (2024-11-05), and the signal to fall back to it."""

from __future__ import annotations

import base64
import json
import socket
from contextlib import asynccontextmanager
from functools import partial
from typing import Annotated, Any, AsyncIterator, Awaitable, Callable

import attrs
import pytest
import trio
import trio.testing

from trio_mcp import Client, ConnectionClosed, Context, Field, McpError, RemoteProtocolError, Server
from trio_mcp._core.sse import encode_event
from trio_mcp._session import InboundRequest, Session
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports._client.sse import SseClientStream
from trio_mcp.transports._h11server import HttpLimits, HttpRequest, HttpResponse, serve_http
from trio_mcp.transports.streamable_http import HttpTransportOptions
from trio_mcp.transports.streamable_http_client import (
    HTTP_ERROR,
    LegacyTransportRequired,
    StatelessHttpStream,
    StreamableHttpSessionStream,
)
from trio_mcp.types import Root

from transport_helpers import initialize_result  # isort: skip
from waiting import wait_until  # isort: skip

MODERN = "2026-07-28"
LIMITS = HttpLimits(graceful_shutdown_timeout=0.2)

Handler = Callable[[HttpRequest, HttpResponse], Awaitable[None]]


@attrs.define
class Probe:
    started: trio.Event = attrs.field(factory=trio.Event)
    cancelled: trio.Event = attrs.field(factory=trio.Event)


def make_server(probe: Probe | None = None) -> Server:
    server = Server("client-transport-test", version="1.0.0")
    probe = probe or Probe()

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    @server.tool()
    async def nap(seconds: float) -> str:
        """Sleep, then answer."""
        await trio.sleep(seconds)
        return "rested"

    @server.tool()
    async def steps(count: int, ctx: Context) -> str:
        """Report progress ``count`` times."""
        for step in range(count):
            await ctx.report_progress(step + 1, total=count)
        return "done"

    @server.tool()
    async def roots(ctx: Context) -> str:
        """Ask the client for its roots."""
        return ",".join(root.uri for root in await ctx.list_roots())

    @server.tool()
    async def regional(
        region: Annotated[str, Field(header="Region")], count: Annotated[int, Field(header="Count")] = 1
    ) -> str:
        """A tool whose arguments are mirrored into headers."""
        return f"{region}:{count}"

    @server.tool()
    async def block() -> str:
        """Wait until cancelled."""
        probe.started.set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            probe.cancelled.set()
            raise
        return "never"

    @server.tool()
    async def flaky(ctx: Context) -> str:
        """Make the server drop this request's SSE stream (after its priming event), then finish."""
        session = ctx._connection.session.stream  # the transport's HttpSession
        stream = session.owner[ctx.request_id]
        PRIMED.append(stream.last_id)  # nothing but the priming event has been sent on it
        await stream.writer.response.finish()  # the client sees a clean end without the response
        await trio.sleep(0.05)
        await ctx.report_progress(1, total=1)
        return "survived"

    return server


#: The priming event ids of the streams ``flaky`` dropped.
PRIMED: list[str | None] = []


@asynccontextmanager
async def serving(server: Server, **options: Any) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        opts = HttpTransportOptions(limits=LIMITS, **options)
        port = await nursery.start(partial(server.serve_http, "127.0.0.1", 0, options=opts))
        yield f"http://127.0.0.1:{port}"
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def serving_raw(handler: Handler) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(serve_http, handler, limits=LIMITS))
        yield f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def session_client(url: str, **options: Any) -> AsyncIterator[tuple[Client, StreamableHttpSessionStream]]:
    async with trio.open_nursery() as nursery:
        stream = await StreamableHttpSessionStream.connect(nursery, url)
        client = Client(stream, **options)
        await client.start(nursery)
        try:
            yield client, stream
        finally:
            await client.aclose()


class RecordingHttpClient(HttpClient):
    """An ``HttpClient`` that notes the method and headers of every request it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, dict[str, str]]] = []

    async def request(self, method: str, url: str, **options: Any) -> Any:
        self.sent.append((method, {name.lower(): value for name, value in options.get("headers", ())}))
        return await super().request(method, url, **options)


class NoRequests:
    """The smallest handler for a hand-run ``Session``: the server never asks us anything here."""

    inline_methods = frozenset[str]()

    async def handle_request(self, request: InboundRequest) -> Any:
        raise McpError(-32601, f"Method not found: {request.method}")

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        pass


@asynccontextmanager
async def stateless_session(url: str, **options: Any) -> AsyncIterator[tuple[Session, StatelessHttpStream]]:
    async with trio.open_nursery() as nursery:
        stream = await StatelessHttpStream.connect(nursery, url, **options)
        session = Session(stream, NoRequests(), request_timeout=10)
        await nursery.start(session.run)
        try:
            yield session, stream
        finally:
            await session.aclose()


def modern_params(params: dict[str, Any]) -> dict[str, Any]:
    return {
        **params,
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}},
    }


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


async def send_json(response: HttpResponse, message: Any, status: int = 200, headers: Any = ()) -> None:
    await response.send(status, [("content-type", "application/json"), *headers], json.dumps(message).encode())


# -- the legacy era against our server -------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
async def test_handshake_and_calls_on_each_revision(version: str) -> None:
    with trio.fail_after(10):
        async with (
            serving(make_server()) as base,
            session_client(base + "/mcp", protocol_version=version) as (client, stream),
        ):
            assert client.protocol_version == version == stream.protocol_version
            assert stream.session_id and len(stream.session_id) >= 32
            tools = await client.list_tools()
            assert "echo" in [tool.name for tool in tools.tools]
            result = await client.call_tool("echo", {"text": "hello"})
            assert result.content[0].text == "hello"  # type: ignore[union-attr]


async def test_concurrent_calls_progress_and_server_requests() -> None:
    updates: list[float] = []

    async def my_roots() -> list[Root]:
        return [Root(uri="file:///work", name="work")]

    with trio.fail_after(10):
        async with serving(make_server()) as base, session_client(base + "/mcp", roots=my_roots) as (client, _):
            results: list[str] = []

            async def call() -> None:
                result = await client.call_tool("nap", {"seconds": 0.3})
                results.append(result.content[0].text)  # type: ignore[union-attr]

            started = trio.current_time()
            async with trio.open_nursery() as nursery:
                for _ in range(4):
                    nursery.start_soon(call)
            assert results == ["rested"] * 4
            assert trio.current_time() - started < 1.0  # one POST (and connection) each, side by side

            result = await client.call_tool("steps", {"count": 3}, on_progress=lambda p: updates.append(p.progress))
            assert result.content[0].text == "done" and updates == [1, 2, 3]  # type: ignore[union-attr]

            # The server's roots/list arrives on the call's SSE stream; our answer is POSTed back.
            result = await client.call_tool("roots")
            assert result.content[0].text == "file:///work"  # type: ignore[union-attr]


async def test_list_changed_arrives_on_the_get_stream() -> None:
    server = make_server()
    changed = trio.Event()

    def on_list_changed(kind: str) -> None:
        if kind == "tools":
            changed.set()

    with trio.fail_after(10):
        async with (
            serving(server) as base,
            session_client(base + "/mcp", on_list_changed=on_list_changed) as (_, stream),
        ):
            await stream.standalone_connected.wait()
            await trio.testing.wait_all_tasks_blocked()  # the server has attached the stream it just answered

            async def extra() -> str:
                """Added later."""
                return "x"

            server.add_tool(extra)
            await changed.wait()


async def test_resumption_against_our_server_after_it_drops_the_stream() -> None:
    updates: list[float] = []
    http = RecordingHttpClient()
    with trio.fail_after(10):
        async with serving(make_server(), retry_ms=200) as base, trio.open_nursery() as nursery:
            stream = await StreamableHttpSessionStream.connect(nursery, base + "/mcp", http=http)
            client = Client(stream)
            await client.start(nursery)
            started = trio.current_time()
            result = await client.call_tool("flaky", on_progress=lambda p: updates.append(p.progress))
            assert result.content[0].text == "survived"  # type: ignore[union-attr]
            assert updates == [1]  # replayed from the event store after Last-Event-ID
            assert trio.current_time() - started >= 0.2  # waited the server's retry before reconnecting
            resumes = [headers for method, headers in http.sent if method == "GET" and "last-event-id" in headers]
            assert len(resumes) == 1 and resumes[0]["last-event-id"] == PRIMED[-1]  # the priming event's id
            assert resumes[0]["mcp-protocol-version"] == "2025-11-25"
            await client.aclose()
        await http.aclose()


async def test_cancelling_a_call_sends_cancelled_and_stops_reading() -> None:
    probe = Probe()
    with trio.fail_after(10):
        async with serving(make_server(probe)) as base, session_client(base + "/mcp") as (client, stream):
            with trio.move_on_after(5) as scope:

                async def cancel_when_started() -> None:
                    await probe.started.wait()
                    scope.cancel()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(cancel_when_started)
                    await client.call_tool("block")
            assert scope.cancelled_caught
            await probe.cancelled.wait()  # notifications/cancelled reached the server
            await wait_until(lambda: not stream._calls)  # the abandoned call's reader is gone
            assert (await client.call_tool("echo", {"text": "still here"})).content[0].text == "still here"  # type: ignore[union-attr]


async def test_json_response_mode_and_server_requests_on_the_get_stream() -> None:
    async def my_roots() -> list[Root]:
        return [Root(uri="file:///json")]

    with trio.fail_after(10):
        async with (
            serving(make_server(), json_response=True) as base,
            session_client(base + "/mcp", roots=my_roots) as (client, stream),
        ):
            assert (await client.call_tool("echo", {"text": "j"})).content[0].text == "j"  # type: ignore[union-attr]
            await stream.standalone_connected.wait()
            await trio.testing.wait_all_tasks_blocked()  # the server has attached the stream it just answered
            # With JSON answers, the server's roots/list can only travel on the GET stream.
            assert (await client.call_tool("roots")).content[0].text == "file:///json"  # type: ignore[union-attr]


async def test_close_deletes_the_session() -> None:
    server = make_server()
    with trio.fail_after(10):
        async with serving(server) as base:
            async with session_client(base + "/mcp") as (client, stream):
                await client.list_tools()
                session_id = stream.session_id
                assert server.connections
            assert session_id is not None
            await wait_until(lambda: not server.connections)
            async with HttpClient() as http:
                response = await http.request(
                    "POST",
                    base + "/mcp",
                    body=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                    headers=[
                        ("content-type", "application/json"),
                        ("accept", "application/json, text/event-stream"),
                        ("mcp-session-id", session_id),
                    ],
                )
                assert response.status == 404
                await response.aclose()


async def test_expired_session_closes_the_stream() -> None:
    with trio.fail_after(10):
        async with serving(make_server()) as base, session_client(base + "/mcp") as (client, stream):
            assert stream.session_id is not None
            async with HttpClient() as http:  # the server ends the session behind the client's back
                deleted = await http.request("DELETE", base + "/mcp", headers=[("mcp-session-id", stream.session_id)])
                assert deleted.status == 200
                await deleted.aclose()
            with pytest.raises(ConnectionClosed, match="ended the HTTP session"):
                await client.list_tools()
            assert stream.session_expired


async def test_unreachable_server_closes_the_stream() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            stream = await StreamableHttpSessionStream.connect(
                nursery, f"http://127.0.0.1:{port}/mcp", connect_attempts=2
            )
            with pytest.raises(ConnectionClosed, match="cannot reach"):
                await Client(stream).start(nursery)


# -- the legacy era against raw servers ------------------------------------------------------------------


@attrs.define
class RawLog:
    requests: list[tuple[float, str, dict[str, str], Any]] = attrs.field(factory=list)
    closed_at: float | None = None


async def test_sse_retry_scenario() -> None:
    """The conformance ``sse-retry`` scenario: priming event with ``retry: 300``, the stream closes, the client
    resumes with GET + Last-Event-ID no earlier than 300 ms later and reads the result there."""
    log = RawLog()

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        body = json.loads(await request.read_body() or b"null")
        log.requests.append((trio.current_time(), request.method, dict(request.headers), body))
        if request.method == "GET" and "last-event-id" not in request.headers:
            await send_json(response, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no"}}, 400)
        elif request.method == "GET":
            await response.start(200, [("content-type", "text/event-stream")])
            await response.write(
                encode_event(json.dumps({"jsonrpc": "2.0", "id": 2, "result": text_result("ok")}), id="p2")
            )
            await response.finish()
        elif request.method == "DELETE":
            await response.send(200)
        elif body.get("method") == "initialize":
            await send_json(
                response,
                {
                    "jsonrpc": "2.0",
                    "id": body["id"],
                    "result": initialize_result("2025-03-26", capabilities={"tools": {}}),
                },
                headers=[("mcp-session-id", "raw-session-1")],
            )
        elif "id" not in body:
            await response.send(202)
        else:
            await response.start(200, [("content-type", "text/event-stream")])
            await response.write(b"id: p1\nretry: 300\ndata:\n\n")
            await trio.sleep(0.05)
            await response.finish()
            log.closed_at = trio.current_time()

    with trio.fail_after(10):
        async with (
            serving_raw(handler) as base,
            session_client(base + "/mcp", protocol_version="2025-06-18") as (client, stream),
        ):
            assert client.protocol_version == "2025-03-26"  # accepted from the server
            result = await client.call_tool("test_reconnection")
            assert result.content[0].text == "ok"  # type: ignore[union-attr]
        resumes = [entry for entry in log.requests if entry[1] == "GET" and "last-event-id" in entry[2]]
        assert len(resumes) == 1
        at, _, headers, _ = resumes[0]
        assert headers["last-event-id"] == "p1" and headers["mcp-session-id"] == "raw-session-1"
        assert headers["mcp-protocol-version"] == "2025-03-26"
        assert log.closed_at is not None and 0.29 <= at - log.closed_at < 0.7
        # The standalone GET got 400, which is not fatal; DELETE went out on close.
        assert any(entry[1] == "GET" and "last-event-id" not in entry[2] for entry in log.requests)
        assert log.requests[-1][1] == "DELETE"
        init = log.requests[0][2]
        assert "mcp-protocol-version" not in init and "mcp-session-id" not in init
        assert "application/json" in init["accept"] and "text/event-stream" in init["accept"]


async def test_http_errors_fail_the_request_not_the_session() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        if request.method != "POST":
            await response.send(405, [("allow", "POST")])
            return
        body = json.loads(await request.read_body())
        name = (body.get("params") or {}).get("name")
        if body.get("method") == "initialize":
            await send_json(
                response,
                {
                    "jsonrpc": "2.0",
                    "id": body["id"],
                    "result": initialize_result("2025-06-18", capabilities={"tools": {}}),
                },
                headers=[("mcp-session-id", "s-1")],
            )
        elif "id" not in body:
            await response.send(202)
        elif name == "e401":
            await response.send(401, [("www-authenticate", 'Bearer resource_metadata="x"')], b"")
        elif name == "e500":
            await response.send(500, [("content-type", "text/plain")], b"boom" * 2000)
        elif name == "html":
            await response.send(200, [("content-type", "text/html")], b"<html><body>login</body></html>")
        elif name == "short":
            await response.start(200, [("content-type", "text/event-stream")])
            await response.finish()  # ends without the response and without an event id
        else:
            await send_json(response, {"jsonrpc": "2.0", "id": body["id"], "result": text_result("fine")})

    with trio.fail_after(10):
        async with serving_raw(handler) as base, session_client(base + "/mcp") as (client, _):
            with pytest.raises(McpError) as info:
                await client.call_tool("e401")
            assert info.value.code == HTTP_ERROR and "401" in info.value.message and "tools/call" in info.value.message
            assert info.value.data["status"] == 401 and "resource_metadata" in info.value.data["wwwAuthenticate"]
            with pytest.raises(McpError) as info:
                await client.call_tool("e500")
            assert "500" in info.value.message and info.value.data["body"].startswith("boom")
            assert len(info.value.data["body"]) <= 2048
            with pytest.raises(McpError, match="HTML page"):
                await client.call_tool("html")
            # A stream that ends without the answer and cannot be resumed lost the request, not the session.
            with pytest.raises(ConnectionClosed, match="before the response"):
                await client.call_tool("short")
            result = await client.call_tool("ok")
            assert result.content[0].text == "fine"  # type: ignore[union-attr]


async def test_initialize_refused_with_405_asks_for_the_legacy_transport() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        if request.method == "POST":
            await response.send(405, [("allow", "GET")])
        else:
            await response.send(404)

    with trio.fail_after(10):
        async with serving_raw(handler) as base, trio.open_nursery() as nursery:
            stream = await StreamableHttpSessionStream.connect(nursery, base + "/mcp")
            with pytest.raises(LegacyTransportRequired) as info:
                await Client(stream).start(nursery)
            assert info.value.status == 405


async def test_a_modern_error_on_initialize_is_not_a_fallback() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        body = json.loads(await request.read_body())
        await send_json(
            response,
            {
                "jsonrpc": "2.0",
                "id": body["id"],
                "error": {
                    "code": -32022,
                    "message": "Unsupported protocol version",
                    "data": {"supported": [MODERN], "requested": "2025-11-25"},
                },
            },
            400,
        )

    with trio.fail_after(10):
        async with serving_raw(handler) as base, trio.open_nursery() as nursery:
            stream = await StreamableHttpSessionStream.connect(nursery, base + "/mcp")
            with pytest.raises(McpError) as info:
                await Client(stream).start(nursery)
            assert info.value.code == -32022 and info.value.data["supported"] == [MODERN]


async def test_fallback_to_http_sse_against_our_server() -> None:
    """What the client layer does: POST initialize; on ``LegacyTransportRequired``, HTTP+SSE at the same URL."""
    with trio.fail_after(10):
        async with serving(make_server()) as base, trio.open_nursery() as nursery:
            url = base + "/sse"  # a URL that only speaks the old transport: POST there is 405
            stream = await StreamableHttpSessionStream.connect(nursery, url)
            with pytest.raises(LegacyTransportRequired):
                await Client(stream, protocol_version="2024-11-05").start(nursery)
            legacy = await SseClientStream.connect(nursery, url)
            client = Client(legacy, protocol_version="2024-11-05")
            await client.start(nursery)
            assert client.protocol_version == "2024-11-05"
            assert (await client.call_tool("echo", {"text": "old"})).content[0].text == "old"  # type: ignore[union-attr]
            await client.aclose()


# -- HTTP+SSE (2024-11-05) ---------------------------------------------------------------------------------


async def test_http_sse_transport_against_our_server() -> None:
    server = make_server()
    updates: list[float] = []

    async def my_roots() -> list[Root]:
        return [Root(uri="file:///old")]

    with trio.fail_after(10):
        async with serving(server) as base, trio.open_nursery() as nursery:
            stream = await SseClientStream.connect(nursery, base + "/sse")
            assert stream.endpoint_url is not None and stream.endpoint_url.startswith(base + "/messages?session_id=")
            client = Client(stream, protocol_version="2024-11-05", roots=my_roots)
            await client.start(nursery)
            assert [tool.name for tool in (await client.list_tools()).tools][:2] == ["echo", "nap"]
            result = await client.call_tool("steps", {"count": 2}, on_progress=lambda p: updates.append(p.progress))
            assert result.content[0].text == "done" and updates == [1, 2]  # type: ignore[union-attr]
            assert (await client.call_tool("roots")).content[0].text == "file:///old"  # type: ignore[union-attr]
            await client.aclose()
            await wait_until(lambda: not server.connections)  # the session lived as long as the SSE stream


async def test_http_sse_refuses_an_endpoint_on_another_origin() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200, [("content-type", "text/event-stream")])
        await response.write(encode_event("http://elsewhere.invalid/messages", event="endpoint"))
        await trio.sleep(5)

    with trio.fail_after(10):
        async with serving_raw(handler) as base, trio.open_nursery() as nursery:
            with pytest.raises(RemoteProtocolError, match="origin"):
                await SseClientStream.connect(nursery, base + "/sse")


# -- modern (2026-07-28) -----------------------------------------------------------------------------------


async def test_stateless_headers_and_answers_from_a_raw_server() -> None:
    seen: list[dict[str, str]] = []

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        assert request.method == "POST"
        body = json.loads(await request.read_body())
        seen.append(dict(request.headers))
        params = body["params"]
        if body["method"] == "no/such":
            await send_json(
                response,
                {"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "Method not found"}},
                404,
            )
        elif params.get("name") == "mismatch":
            await send_json(
                response, {"jsonrpc": "2.0", "id": None, "error": {"code": -32020, "message": "Header mismatch"}}, 400
            )
        elif params.get("name") == "streamy":
            await response.start(200, [("content-type", "text/event-stream")])
            token = params["_meta"]["progressToken"]
            await response.write(
                b": keep-alive\n\n"
                + encode_event(
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/progress",
                            "params": {"progressToken": token, "progress": 1},
                        }
                    )
                )
            )
            await response.write(
                encode_event(
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": body["id"],
                            "result": {**text_result("streamed"), "resultType": "complete"},
                        }
                    )
                )
            )
            await response.finish()
        else:
            await send_json(response, {"jsonrpc": "2.0", "id": body["id"], "result": {"resultType": "complete"}})

    def header_paths_for(tool: str) -> dict[str, tuple[str, ...]] | None:
        if tool != "wetter-Zürich":
            return None
        return {
            "Region": ("region",),
            "Count": ("count",),
            "Flag": ("flag",),
            "Missing": ("missing",),
            "Deep": ("nested", "inner"),
        }

    updates: list[Any] = []
    with trio.fail_after(10):
        async with (
            serving_raw(handler) as base,
            stateless_session(base + "/mcp", header_paths_for=header_paths_for) as (session, _),
        ):
            arguments = {"region": " padded ", "count": 3, "flag": True, "missing": None, "nested": {"inner": 7}}
            await session.request("tools/call", modern_params({"name": "wetter-Zürich", "arguments": arguments}))
            headers = seen[-1]
            assert headers["mcp-protocol-version"] == MODERN and headers["mcp-method"] == "tools/call"
            assert headers["mcp-name"] == b64("wetter-Zürich")
            assert headers["mcp-param-region"] == b64(" padded ")
            assert headers["mcp-param-count"] == "3" and headers["mcp-param-flag"] == "true"
            assert headers["mcp-param-deep"] == "7" and "mcp-param-missing" not in headers
            assert "mcp-session-id" not in headers and "text/event-stream" in headers["accept"]

            await session.request("resources/read", modern_params({"uri": "file:///a b.txt"}))
            assert seen[-1]["mcp-name"] == "file:///a b.txt" and seen[-1]["mcp-method"] == "resources/read"
            await session.request("tools/list", modern_params({}))
            assert "mcp-name" not in seen[-1]

            result = await session.request("tools/call", modern_params({"name": "streamy"}), on_progress=updates.append)
            assert result["content"][0]["text"] == "streamed" and updates[0]["progress"] == 1

            with pytest.raises(McpError) as info:
                await session.request("tools/call", modern_params({"name": "mismatch"}))
            assert info.value.code == -32020  # the 400 body, as it is
            with pytest.raises(McpError) as info:
                await session.request("no/such", modern_params({}))
            assert info.value.code == -32601

            count = len(seen)
            await session.notify("notifications/roots/list_changed")  # nothing to send on this revision
            await session.request("tools/list", modern_params({}))
            assert [headers["mcp-method"] for headers in seen[count:]] == ["tools/list"]


async def test_stateless_against_our_server_and_cancellation_by_closing() -> None:
    probe = Probe()
    server = make_server(probe)
    with trio.fail_after(10):
        async with (
            serving(server) as base,
            stateless_session(base + "/mcp", header_paths_for=server.tool_header_paths) as (session, _),
        ):
            # Our server checks Mcp-Name and Mcp-Param-* against the body: a wrong header would be a -32020.
            result = await session.request(
                "tools/call", modern_params({"name": "regional", "arguments": {"region": "Zürich", "count": 3}})
            )
            assert result["content"][0]["text"] == "Zürich:3" and result["resultType"] == "complete"
            result = await session.request(
                "tools/call", modern_params({"name": "regional", "arguments": {"region": "x"}})
            )
            assert result["content"][0]["text"] == "x:1"

            with trio.CancelScope() as scope:

                async def cancel_when_started() -> None:
                    await probe.started.wait()
                    scope.cancel()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(cancel_when_started)
                    await session.request("tools/call", modern_params({"name": "block"}))
            assert scope.cancelled_caught
            await probe.cancelled.wait()  # the server saw the stream close and cancelled the tool

            with pytest.raises(McpError) as info:
                await session.request("ping", modern_params({}))
            assert info.value.code == -32601  # 404 + -32601: ping is gone in 2026-07-28
