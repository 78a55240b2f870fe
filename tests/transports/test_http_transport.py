"""The HTTP transport of the server over real sockets on 127.0.0.1, spoken by hand: sessions and their
streams (2025-03-26 .. 2025-11-25), resumption with Last-Event-ID, stateless requests and their header
checks (2026-07-28), HTTP+SSE (2024-11-05), and the safety defaults (Host/Origin, body size, session cap)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, AsyncIterator

import attrs
import pytest
import trio
import trio.testing
from paths import TESTS

import trio_mcp
from trio_mcp import Context, Field, Server
from trio_mcp._core.sse import SSEDecoder
from trio_mcp.transports._client.h11client import ClientResponse, HttpClient
from trio_mcp.transports._h11server import HttpLimits
from trio_mcp.transports.streamable_http import HttpTransportOptions

from transport_helpers import INITIALIZED, initialize_request  # isort: skip

MODERN = "2026-07-28"
ACCEPT = "application/json, text/event-stream"


def make_server() -> Server:
    server = Server("http-test", version="1.0.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    @server.tool()
    async def slow(seconds: float, marker: str, ctx: Context) -> str:
        """Report progress, then sleep, noting start and cancellation in a file."""
        await ctx.report_progress(1, total=2)
        Path(marker).write_text("start\n")
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            Path(marker).write_text("start\ncancelled\n")
            raise
        return "slept"

    @server.tool()
    async def regional(
        region: Annotated[str, Field(header="Region")], count: Annotated[int, Field(header="Count")] = 1
    ) -> str:
        """A tool whose arguments are mirrored into headers."""
        return f"{region}:{count}"

    return server


@attrs.define
class Endpoint:
    http: HttpClient
    port: int
    server: Server

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def post(self, message: Any, headers: dict[str, str] | None = None, *, path: str = "/mcp") -> ClientResponse:
        all_headers = {"content-type": "application/json", "accept": ACCEPT, **(headers or {})}
        return await self.http.request(
            "POST",
            f"http://127.0.0.1:{self.port}{path}",
            headers=list(all_headers.items()),
            body=json.dumps(message).encode(),
        )

    async def get(self, headers: dict[str, str], path: str = "/mcp") -> ClientResponse:
        return await self.http.request("GET", f"http://127.0.0.1:{self.port}{path}", headers=list(headers.items()))


async def read_messages(response: ClientResponse, count: int | None = None) -> list[Any]:
    """Every JSON-RPC message in a JSON or SSE body (stop after ``count`` messages, if given)."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return [json.loads(await response.read())]
    decoder = SSEDecoder()
    messages: list[Any] = []
    while count is None or len(messages) < count:
        chunk = await response.receive_some()
        events = decoder.receive_data(chunk) if chunk else decoder.receive_eof()
        messages += [json.loads(event.data) for event in events if event.data]
        if not chunk:
            break
    return messages


@pytest.fixture
async def endpoint(nursery: trio.Nursery) -> AsyncIterator[Endpoint]:
    server = make_server()
    port = await nursery.start(server.serve_http, "127.0.0.1", 0)
    async with HttpClient() as http:
        yield Endpoint(http, port, server)


async def endpoint_with(nursery: trio.Nursery, http: HttpClient, **options: Any) -> Endpoint:
    server = make_server()
    port = await nursery.start(
        lambda task_status: server.serve_http(
            "127.0.0.1", 0, options=HttpTransportOptions(**options), task_status=task_status
        )
    )
    return Endpoint(http, port, server)


async def open_session(endpoint: Endpoint, version: str = "2025-11-25") -> dict[str, str]:
    response = await endpoint.post(initialize_request(version, id=1))
    assert response.status == 200
    session_id = response.headers["mcp-session-id"]
    (result,) = await read_messages(response)
    assert result["result"]["protocolVersion"] == version
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": version}
    accepted = await endpoint.post(INITIALIZED, headers)
    assert accepted.status == 202
    await accepted.aclose()
    return headers


def modern(
    id: int, method: str, params: dict[str, Any] | None = None, capabilities: dict[str, Any] | None = None
) -> dict[str, Any]:
    params = dict(params or {})
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def modern_headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    headers = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    headers.update(extra)
    return headers


# -- sessions ------------------------------------------------------------------------------------------------


async def test_session_lifecycle(endpoint: Endpoint) -> None:
    with trio.fail_after(10):
        headers = await open_session(endpoint)
        assert len(headers["mcp-session-id"]) >= 32
        response = await endpoint.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers)
        assert response.headers["content-type"] == "text/event-stream"
        (listed,) = await read_messages(response)
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["echo", "slow", "regional"]
        deleted = await endpoint.http.request("DELETE", endpoint.url, headers=list(headers.items()))
        assert deleted.status == 200
        await deleted.aclose()
        gone = await endpoint.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, headers)
        assert gone.status == 404
        await gone.aclose()


async def test_session_errors(endpoint: Endpoint) -> None:
    with trio.fail_after(10):
        no_session = await endpoint.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert no_session.status == 400
        assert json.loads(await no_session.read())["error"]["code"] == -32600
        unknown = await endpoint.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"mcp-session-id": "nope"})
        assert unknown.status == 404
        await unknown.aclose()
        headers = await open_session(endpoint)
        bad_version = await endpoint.post(
            {"jsonrpc": "2.0", "id": 2, "method": "ping"}, {**headers, "mcp-protocol-version": "1999-01-01"}
        )
        assert bad_version.status == 400
        await bad_version.aclose()
        # Any supported revision in the header is accepted, and a missing header means 2025-03-26.
        for version_header in ({"mcp-protocol-version": "2025-03-26"}, {}):
            ok = await endpoint.post(
                {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                {"mcp-session-id": headers["mcp-session-id"], **version_header},
            )
            assert ok.status == 200
            assert (await read_messages(ok))[0]["result"] == {}
        garbage = await endpoint.http.request(
            "POST",
            endpoint.url,
            body=b"{not json",
            headers=[("content-type", "application/json"), ("accept", ACCEPT), *headers.items()],
        )
        assert garbage.status == 400
        assert json.loads(await garbage.read())["error"]["code"] == -32700
        text = await endpoint.http.request("POST", endpoint.url, body=b"{}", headers=[("content-type", "text/plain")])
        assert text.status == 415
        await text.aclose()
        patch = await endpoint.http.request("PATCH", endpoint.url)
        assert patch.status == 405 and "POST" in patch.headers["allow"]
        await patch.aclose()


async def test_progress_goes_on_the_request_stream_and_changes_on_the_get_stream(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    with trio.fail_after(10):
        headers = await open_session(endpoint)
        get = await endpoint.get({**headers, "accept": "text/event-stream"})
        assert get.status == 200
        second = await endpoint.get({**headers, "accept": "text/event-stream"})
        assert second.status == 409
        await second.aclose()
        call = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {
                "name": "slow",
                "arguments": {"seconds": 0.01, "marker": str(tmp_path / "m")},
                "_meta": {"progressToken": 77},
            },
        }
        response = await endpoint.post(call, headers)
        assert response.headers["content-type"] == "text/event-stream"
        assert response.headers["x-accel-buffering"] == "no"
        progress, result = await read_messages(response)
        assert progress["method"] == "notifications/progress" and progress["params"]["progressToken"] == 77
        assert result["id"] == 5 and result["result"]["content"][0]["text"] == "slept"

        async def extra() -> str:
            """Added later."""
            return "x"

        endpoint.server.add_tool(extra)
        (changed,) = await read_messages(get, 1)
        assert changed == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        await get.aclose()


async def test_priming_event_and_resumption_with_last_event_id(endpoint: Endpoint, tmp_path: Path) -> None:
    marker = tmp_path / "m"
    with trio.fail_after(10):
        headers = await open_session(endpoint, "2025-11-25")
        call = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"seconds": 0.5, "marker": str(marker)}},
        }
        response = await endpoint.post(call, headers)
        decoder = SSEDecoder()
        events = []
        while not events:
            events += decoder.receive_data(await response.receive_some())
        priming = events[0]
        assert priming.data == "" and priming.id and priming.retry == 1000
        await response.aclose()  # the stream breaks mid-call; in this era that is not a cancellation
        resumed = await endpoint.get({**headers, "accept": "text/event-stream", "last-event-id": priming.id})
        assert resumed.status == 200
        messages = await read_messages(resumed)
        assert messages[-1]["id"] == 9 and messages[-1]["result"]["content"][0]["text"] == "slept"
        assert "cancelled" not in marker.read_text()


async def test_json_response_mode(nursery: trio.Nursery) -> None:
    async with HttpClient() as http:
        endpoint = await endpoint_with(nursery, http, json_response=True)
        with trio.fail_after(10):
            response = await endpoint.post(initialize_request(id=1))
            assert response.headers["content-type"] == "application/json"
            headers = {"mcp-session-id": response.headers["mcp-session-id"]}
            await response.aclose()
            echoed = await endpoint.post(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "hi"}},
                },
                headers,
            )
            assert json.loads(await echoed.read())["result"]["content"][0]["text"] == "hi"


async def test_batches_on_2025_03_26(endpoint: Endpoint) -> None:
    with trio.fail_after(10):
        headers = await open_session(endpoint, "2025-03-26")
        batch = [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "b"}}},
        ]
        response = await endpoint.post(batch, headers)
        (answers,) = await read_messages(response)
        assert sorted(item["id"] for item in answers) == [1, 2]
        newer = await open_session(endpoint, "2025-06-18")
        refused = await endpoint.post(batch, newer)
        assert refused.status == 400
        await refused.aclose()


async def test_session_cap_and_idle_reaping(nursery: trio.Nursery, autojump_clock: trio.testing.MockClock) -> None:
    async with HttpClient() as http:
        endpoint = await endpoint_with(nursery, http, max_sessions=2, session_idle_timeout=0.3)
        with trio.fail_after(10):
            first = await open_session(endpoint)
            await open_session(endpoint)
            full = await endpoint.post(initialize_request(id=1))
            assert full.status == 503
            await full.aclose()
            await trio.sleep(0.8)  # both sessions idle past the timeout: reaped
            assert endpoint.server.connections == set()
            gone = await endpoint.post({"jsonrpc": "2.0", "id": 2, "method": "ping"}, first)
            assert gone.status == 404
            await gone.aclose()
            await open_session(endpoint)


# -- stateless requests ---------------------------------------------------------------------------------------


async def test_stateless_request_gets_json_or_sse(endpoint: Endpoint, tmp_path: Path) -> None:
    with trio.fail_after(10):
        call = modern(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        response = await endpoint.post(call, modern_headers("tools/call", "echo"))
        assert response.status == 200 and response.headers["content-type"] == "application/json"
        assert "mcp-session-id" not in response.headers
        (answer,) = await read_messages(response)
        assert answer["result"]["resultType"] == "complete"
        params = {
            "name": "slow",
            "arguments": {"seconds": 0.01, "marker": str(tmp_path / "m")},
            "_meta": {"progressToken": "t"},
        }
        streamed = modern(2, "tools/call", params)
        streamed["params"]["_meta"]["progressToken"] = "t"
        response = await endpoint.post(streamed, modern_headers("tools/call", "slow"))
        assert response.headers["content-type"] == "text/event-stream"
        progress, final = await read_messages(response)
        assert progress["method"] == "notifications/progress" and final["id"] == 2


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (modern_headers("tools/list", "echo"), "does not match body method"),
        ({"mcp-method": "tools/call", "mcp-name": "echo"}, "MCP-Protocol-Version"),
        (modern_headers("tools/call"), "Mcp-Name header is required"),
        (modern_headers("tools/call", "other"), "does not match body name"),
        ({**modern_headers("tools/call", "echo"), "mcp-protocol-version": "2025-11-25"}, "does not match _meta"),
    ],
)
async def test_stateless_header_mismatch(endpoint: Endpoint, headers: dict[str, str], expected: str) -> None:
    with trio.fail_after(10):
        response = await endpoint.post(modern(4, "tools/call", {"name": "echo", "arguments": {"text": "x"}}), headers)
        assert response.status == 400
        error = json.loads(await response.read())["error"]
        assert error["code"] == -32020 and expected in error["message"]


async def test_param_headers_are_checked_against_arguments(endpoint: Endpoint) -> None:
    call = modern(1, "tools/call", {"name": "regional", "arguments": {"region": "Zürich", "count": 3}})
    base = modern_headers("tools/call", "regional")
    with trio.fail_after(10):
        ok = await endpoint.post(
            call, {**base, "mcp-param-region": "=?base64?WsO8cmljaA==?=", "mcp-param-count": "3.0"}
        )
        assert ok.status == 200
        assert (await read_messages(ok))[0]["result"]["content"][0]["text"] == "Zürich:3"
        for bad in (
            {"mcp-param-region": "Zurich", "mcp-param-count": "3"},
            {"mcp-param-count": "3"},
            {"mcp-param-region": "=?base64?WsO8cmljaA==?=", "mcp-param-count": "4"},
        ):
            refused = await endpoint.post(call, {**base, **bad})
            assert refused.status == 400, bad
            assert json.loads(await refused.read())["error"]["code"] == -32020


@pytest.mark.parametrize(
    ("message", "headers", "status", "code"),
    [
        (modern(1, "no/such"), modern_headers("no/such"), 404, -32601),
        (modern(1, "ping"), modern_headers("ping"), 404, -32601),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/list",
                "params": {
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
                        "io.modelcontextprotocol/clientCapabilities": {},
                    }
                },
            },
            {"mcp-protocol-version": "2099-01-01", "mcp-method": "tools/list"},
            400,
            -32022,
        ),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, modern_headers("tools/list"), 400, -32602),
    ],
)
async def test_stateless_errors_carry_http_status(
    endpoint: Endpoint, message: dict[str, Any], headers: dict[str, str], status: int, code: int
) -> None:
    with trio.fail_after(10):
        response = await endpoint.post(message, headers)
        assert response.status == status
        body = json.loads(await response.read())
        assert body["id"] == 1 and body["error"]["code"] == code


async def test_get_and_delete_without_a_session_are_405(endpoint: Endpoint) -> None:
    with trio.fail_after(10):
        for method in ("GET", "DELETE"):
            response = await endpoint.http.request(method, endpoint.url, headers=[("accept", "text/event-stream")])
            assert response.status == 405 and "POST" in response.headers["allow"]
            await response.aclose()


async def test_closing_a_stateless_stream_cancels_the_handler(endpoint: Endpoint, tmp_path: Path) -> None:
    marker = tmp_path / "m"
    call = modern(
        3,
        "tools/call",
        {"name": "slow", "arguments": {"seconds": 30, "marker": str(marker)}, "_meta": {"progressToken": 1}},
    )
    call["params"]["_meta"]["progressToken"] = 1
    with trio.fail_after(10):
        response = await endpoint.post(call, modern_headers("tools/call", "slow"))
        await read_messages(response, 1)  # the progress notification: the handler is running
        while not marker.exists():
            await trio.sleep(0.01)
        await response.aclose()
        while "cancelled" not in marker.read_text():
            await trio.sleep(0.01)


# -- HTTP+SSE (2024-11-05) ------------------------------------------------------------------------------------


async def test_legacy_http_sse_transport(endpoint: Endpoint) -> None:
    with trio.fail_after(10):
        stream = await endpoint.get({"accept": "text/event-stream"}, path="/sse")
        assert stream.status == 200
        decoder = SSEDecoder()
        events: list[Any] = []
        while not events:
            events += decoder.receive_data(await stream.receive_some())
        assert events[0].event == "endpoint"
        post_path = events[0].data
        assert post_path.startswith("/messages?session_id=")
        accepted = await endpoint.post(initialize_request("2024-11-05", id=1), path=post_path)
        assert accepted.status == 202
        await accepted.aclose()
        while len(events) < 2:
            events += decoder.receive_data(await stream.receive_some())
        assert events[1].event == "message"
        assert json.loads(events[1].data)["result"]["protocolVersion"] == "2024-11-05"
        missing = await endpoint.post(initialize_request(id=1), path="/messages?session_id=unknown")
        assert missing.status == 404
        await missing.aclose()
        await stream.aclose()
        await trio.testing.wait_all_tasks_blocked()  # the server has seen the stream end
        gone = await endpoint.post(INITIALIZED, path=post_path)
        assert gone.status == 404  # the session lived exactly as long as its stream
        await gone.aclose()


# -- safety ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"origin": "http://evil.example.com"}, 403),
        ({"origin": "null"}, 403),
        ({"host": "evil.example.com"}, 421),
        ({"host": "localhost.evil.com"}, 421),
        ({"origin": "http://localhost:3000"}, 200),
        ({"host": "localhost:1234"}, 200),
    ],
)
async def test_host_and_origin_are_validated(endpoint: Endpoint, headers: dict[str, str], status: int) -> None:
    with trio.fail_after(10):
        response = await endpoint.post(initialize_request(id=1), headers)
        assert response.status == status
        await response.aclose()


async def test_oversized_body_is_refused(nursery: trio.Nursery) -> None:
    async with HttpClient() as http:
        endpoint = await endpoint_with(nursery, http, limits=HttpLimits(max_body_bytes=1024))
        with trio.fail_after(10):
            message = modern(1, "tools/call", {"name": "echo", "arguments": {"text": "x" * 5000}})
            response = await endpoint.post(message, modern_headers("tools/call", "echo"))
            assert response.status == 413
            await response.aclose()


# -- authentication, TLS, several servers on one port ---------------------------------------------------------


async def test_bearer_tokens_and_sessions_bound_to_their_principal(nursery: trio.Nursery) -> None:
    tokens = {"alice-token": "alice", "bob-token": "bob"}

    async def authenticate(token: str) -> str | None:
        return tokens.get(token)

    server = make_server()

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """Say who the transport authenticated."""
        return str(ctx.principal)

    port = await nursery.start(
        lambda task_status: server.serve_http(
            "127.0.0.1", 0, options=HttpTransportOptions(authenticate=authenticate), task_status=task_status
        )
    )
    async with HttpClient() as http:
        endpoint = Endpoint(http, port, server)
        with trio.fail_after(10):
            for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "Basic YWxpY2U6eA=="}):
                refused = await endpoint.post(initialize_request(id=1), headers)
                assert refused.status == 401 and refused.headers["www-authenticate"].startswith("Bearer")
                await refused.aclose()
            alice = {"authorization": "Bearer alice-token"}
            response = await endpoint.post(initialize_request(id=1), alice)
            assert response.status == 200
            session_headers = {**alice, "mcp-session-id": response.headers["mcp-session-id"]}
            await response.aclose()
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}}
            mine = await endpoint.post(call, session_headers)
            assert (await read_messages(mine))[0]["result"]["content"][0]["text"] == "alice"
            stolen = await endpoint.post(call, {**session_headers, "authorization": "Bearer bob-token"})
            assert stolen.status == 404  # bob cannot use alice's session
            await stolen.aclose()
            stateless = await endpoint.post(
                modern(3, "tools/call", {"name": "whoami"}),
                {**modern_headers("tools/call", "whoami"), "authorization": "Bearer bob-token"},
            )
            assert (await read_messages(stateless))[0]["result"]["content"][0]["text"] == "bob"


async def test_https(nursery: trio.Nursery, self_signed_cert: tuple[str, str]) -> None:
    import ssl

    cert, key = self_signed_cert
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = make_server()
    port = await nursery.start(
        lambda task_status: server.serve_http("127.0.0.1", 0, ssl_context=context, task_status=task_status)
    )
    async with HttpClient(ssl_context=ssl.create_default_context(cafile=cert)) as http:
        with trio.fail_after(10):
            response = await http.request(
                "POST",
                f"https://127.0.0.1:{port}/mcp",
                body=json.dumps(modern(1, "tools/list")).encode(),
                headers=[
                    ("content-type", "application/json"),
                    ("accept", ACCEPT),
                    *modern_headers("tools/list").items(),
                ],
            )
            assert response.status == 200
            assert [t["name"] for t in (await read_messages(response))[0]["result"]["tools"]][0] == "echo"


async def test_several_servers_on_one_port(nursery: trio.Nursery) -> None:
    from trio_mcp.server import serve_http_many

    weather, news = Server("weather"), Server("news")

    @weather.tool()
    async def forecast() -> str:
        """Tomorrow's weather."""
        return "sunny"

    @news.tool()
    async def headlines() -> str:
        """Today's news."""
        return "nothing happened"

    port = await nursery.start(
        lambda task_status: serve_http_many(
            {"/weather": weather, "/news": news}, "127.0.0.1", 0, task_status=task_status
        )
    )
    async with HttpClient() as http:
        with trio.fail_after(10):
            for path, tool, text in (
                ("/weather/mcp", "forecast", "sunny"),
                ("/news/mcp", "headlines", "nothing happened"),
            ):
                response = await http.request(
                    "POST",
                    f"http://127.0.0.1:{port}{path}",
                    body=json.dumps(modern(1, "tools/call", {"name": tool})).encode(),
                    headers=[
                        ("content-type", "application/json"),
                        ("accept", ACCEPT),
                        *modern_headers("tools/call", tool).items(),
                    ],
                )
                assert (await read_messages(response))[0]["result"]["content"][0]["text"] == text
            missing = await http.request(
                "POST", f"http://127.0.0.1:{port}/mcp", body=b"{}", headers=[("content-type", "application/json")]
            )
            assert missing.status == 404
            await missing.aclose()
            sse = await http.request(
                "GET", f"http://127.0.0.1:{port}/news/sse", headers=[("accept", "text/event-stream")]
            )
            decoder = SSEDecoder()
            events: list[Any] = []
            while not events:
                events += decoder.receive_data(await sse.receive_some())
            assert events[0].data.startswith("/news/messages?session_id=")
            await sse.aclose()


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
async def test_a_signal_stops_a_server_with_open_streams_within_its_grace_period(signum: str) -> None:
    import signal
    import subprocess
    import sys

    script = TESTS / "servers" / "http_server.py"
    process = await trio.lowlevel.open_process([sys.executable, str(script)], stdout=subprocess.PIPE)
    try:
        with trio.fail_after(20):
            assert process.stdout is not None
            line = b""
            while not line.endswith(b"\n"):
                line += await process.stdout.receive_some(64)
            port = int(line)
            async with HttpClient() as http:
                endpoint = Endpoint(http, port, Server("unused"))
                headers = await open_session(endpoint)
                get = await endpoint.get({**headers, "accept": "text/event-stream"})
                assert get.status == 200
                call = {
                    "jsonrpc": "2.0",
                    "id": 7,
                    "method": "tools/call",
                    "params": {"name": "wait", "arguments": {"seconds": 60}},
                }
                in_flight = await endpoint.post(call, headers)
                assert in_flight.status == 200
                started = trio.current_time()
                process.send_signal(getattr(signal, signum))
                assert await process.wait() == 0
                assert trio.current_time() - started < 6  # the 2 s grace period, then everything is cancelled
                assert await get.receive_some() == b""  # the streams were ended, not left hanging
                await get.aclose()
                await in_flight.aclose()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_handler_can_end_its_stream_and_the_client_resumes(nursery: trio.Nursery) -> None:
    server = make_server()

    @server.tool()
    async def poll(ctx: Context) -> str:
        """Close this call's SSE stream mid-call (SEP-1699), then answer."""
        assert await ctx.close_sse_stream()
        await trio.sleep(0.3)
        return "answered after the stream was closed"

    port = await nursery.start(
        lambda task_status: server.serve_http(
            "127.0.0.1", 0, options=HttpTransportOptions(retry_ms=100), task_status=task_status
        )
    )
    async with HttpClient() as http:
        endpoint = Endpoint(http, port, server)
        with trio.fail_after(10):
            headers = await open_session(endpoint, "2025-11-25")
            call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "poll"}}
            response = await endpoint.post(call, headers)
            decoder = SSEDecoder()
            events = []
            while chunk := await response.receive_some():
                events += decoder.receive_data(chunk)
            assert [e.data for e in events] == ["", ""] and events[-1].retry == 100  # priming, then the close
            resumed = await endpoint.get({**headers, "accept": "text/event-stream", "last-event-id": events[-1].id})
            (answer,) = await read_messages(resumed)
            assert answer["id"] == 3 and answer["result"]["content"][0]["text"].startswith("answered after")
        with trio.fail_after(10):
            async with trio_mcp.open_http_client(endpoint.url, protocol_version="2025-11-25") as client:
                result = await client.call_tool("poll")
                assert result.content[0].text == "answered after the stream was closed"  # type: ignore[union-attr]
