"""MCP mounted as an ASGI app (``trio_mcp.asgi``) under a real Hypercorn trio worker, alone and beside a
Quart-Trio app's own routes, reached by our client in every era."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from asgi_helpers import hypercorn  # skips without Hypercorn

import trio_mcp
from trio_mcp import Server
from trio_mcp.asgi import McpAsgiApp
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports.http import HttpTransportOptions

APP = "http://localhost:5173"


def make_server() -> Server:
    server = Server("mounted")

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    return server


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25", "2025-03-26"])
async def test_our_client_reaches_the_mounted_app_in_both_eras(version: str) -> None:
    async with hypercorn(McpAsgiApp(make_server())) as base:
        async with trio_mcp.open_http_client(f"{base}/mcp", protocol_version=version) as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == ["add"]
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result.content[0].text == "5"  # type: ignore[union-attr]


async def test_the_2024_11_05_sse_transport_is_mounted_too() -> None:
    async with hypercorn(McpAsgiApp(make_server())) as base:
        async with trio_mcp.open_http_client(f"{base}/sse", protocol_version="2024-11-05") as client:
            result = await client.call_tool("add", {"a": 1, "b": 1})
            assert result.content[0].text == "2"  # type: ignore[union-attr]


async def test_the_guard_cors_and_probes_are_the_same_as_on_our_server() -> None:
    app = McpAsgiApp(make_server(), options=HttpTransportOptions(cors_origins=[APP]))
    async with hypercorn(app) as base, HttpClient() as http:
        preflight = await http.request(
            "OPTIONS",
            f"{base}/mcp",
            headers={
                "origin": APP,
                "access-control-request-method": "POST",
                "access-control-request-headers": "mcp-session-id",
            },
        )
        assert preflight.status == 204 and preflight.headers["access-control-allow-origin"] == APP
        foreign = await http.request(
            "POST",
            f"{base}/mcp",
            headers={"origin": "http://evil.example", "content-type": "application/json"},
            body=b"{}",
        )
        assert foreign.status == 403
        rebound = await http.request("GET", f"{base}/healthz", headers={"host": "evil.example"})
        assert rebound.status == 421
        ready = await http.request("GET", f"{base}/readyz")
        assert (ready.status, await ready.read()) == (200, b"ok\n")
        missing = await http.request("GET", f"{base}/elsewhere")
        assert missing.status == 404


async def test_mounted_in_a_quart_trio_app_beside_its_own_route() -> None:
    quart_trio = pytest.importorskip("quart_trio", reason="Quart-Trio is a test dependency: pip install quart-trio")
    web = quart_trio.QuartTrio(__name__)

    @web.route("/hello")
    async def hello() -> str:
        return "hello from quart"

    web.asgi_app = McpAsgiApp(make_server(), fallback=web.asgi_app)  # type: ignore[method-assign]
    async with hypercorn(web) as base:
        async with HttpClient() as http:
            page = await http.request("GET", f"{base}/hello")
            assert (page.status, await page.read()) == (200, b"hello from quart")
        for version in ("2026-07-28", "2025-11-25"):
            async with trio_mcp.open_http_client(f"{base}/mcp", protocol_version=version) as client:
                result = await client.call_tool("add", {"a": 20, "b": 22})
                assert result.content[0].text == "42"  # type: ignore[union-attr]


def test_a_drain_is_refused_on_an_asgi_app() -> None:
    with pytest.raises(ValueError, match="drain"):
        McpAsgiApp(make_server(), options=HttpTransportOptions(drain=trio_mcp.transports.http.Drain()))


async def test_closing_a_stateless_stream_cancels_the_handler_under_hypercorn() -> None:
    server = Server("waiting")
    running, cancelled = trio.Event(), trio.Event()

    @server.tool()
    async def wait(ctx: trio_mcp.Context) -> str:
        """Report progress, then wait until cancelled."""
        await ctx.report_progress(0.5)
        running.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()
        return "unreachable"

    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "wait",
            "arguments": {},
            "_meta": {
                "progressToken": 1,
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "wait",
    }
    async with hypercorn(McpAsgiApp(server)) as base, HttpClient() as http:
        with trio.fail_after(10):
            response = await http.request("POST", f"{base}/mcp", headers=headers, body=json.dumps(call).encode())
            assert response.headers["content-type"] == "text/event-stream"
            assert b"notifications/progress" in await response.receive_some()
            await running.wait()
            await response.aclose()
            await cancelled.wait()


async def test_with_a_fallback_the_mcp_path_answers_503_until_the_app_runs() -> None:
    """Under an ASGI server that sends no lifespan, ``/mcp`` says the server is not running (503) rather than
    being handed to the framework, whose 404 would read as a wrong URL; other paths stay the framework's."""
    seen: list[str] = []

    async def framework(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def get(app: McpAsgiApp, path: str) -> tuple[int, bytes]:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": path, "headers": [(b"host", b"localhost")]}
        await app(scope, receive, send)
        return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])

    app = McpAsgiApp(make_server(), fallback=framework)
    status, body = await get(app, "/mcp")
    assert status == 503 and b"not running" in body
    assert await get(app, "/about") == (404, b"") and seen == ["/about"]
