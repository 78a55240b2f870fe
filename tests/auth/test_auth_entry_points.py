"""OAuth behaves the same on every way of serving HTTP: a token lacking a tool's scope is answered 403 with the
step-up challenge (``WWW-Authenticate: Bearer error="insufficient_scope", scope="..."``) whether the guard was
given to ``serve_http(auth=)``, to ``HttpTransportOptions(auth=)``, to the ASGI app, or to worker processes; and
a verifier's connections to the authorization server are closed when the server stops."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio
from paths import TESTS

from trio_mcp.asgi import McpAsgiApp
from trio_mcp.auth import parse_www_authenticate
from trio_mcp.server._server import serve_http_many
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports.streamable_http import HttpTransportOptions

sys.path.insert(0, str(TESTS / "servers"))
from scoped_app import make_auth, make_server  # noqa: E402


async def call_tool(http: HttpClient, url: str, token: str, name: str) -> tuple[int, dict[str, str], Any]:
    """One modern (2026-07-28) ``tools/call`` with a bearer token: (status, challenge parameters, body)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "_meta": meta}}
    headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", name),
        ("authorization", f"Bearer {token}"),
    ]
    response = await http.request("POST", url, headers=headers, body=json.dumps(message).encode())
    async with response:
        raw = await response.read()
    challenge = parse_www_authenticate(response.headers.get("www-authenticate"))
    return response.status, challenge, json.loads(raw) if raw.startswith(b"{") else raw


async def assert_step_up_challenge(url: str) -> None:
    async with HttpClient() as http:
        status, _, body = await call_tool(http, url, "reader", "look")
        assert status == 200 and body["result"]["content"][0]["text"] == "looked"
        status, challenge, body = await call_tool(http, url, "reader", "wipe")
        assert status == 403, body
        assert challenge["error"] == "insufficient_scope" and set(challenge["scope"].split()) == {"read", "admin"}
        status, _, body = await call_tool(http, url, "admin", "wipe")
        assert status == 200 and body["result"]["content"][0]["text"] == "wiped"


@asynccontextmanager
async def serving(start: Callable[..., Any]) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(start)
        yield f"http://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


async def test_serve_http_auth_argument() -> None:
    with trio.fail_after(20):
        async with serving(functools.partial(make_server().serve_http, port=0, auth=make_auth())) as url:
            await assert_step_up_challenge(url)


async def test_transport_options_alone() -> None:
    options = HttpTransportOptions(auth=make_auth())
    with trio.fail_after(20):
        async with serving(functools.partial(make_server().serve_http, port=0, options=options)) as url:
            await assert_step_up_challenge(url)


async def test_several_servers_on_one_listener() -> None:
    options = HttpTransportOptions(auth=make_auth())
    with trio.fail_after(20):
        async with serving(functools.partial(serve_http_many, {"/a": make_server()}, port=0, options=options)) as url:
            await assert_step_up_challenge(url.replace("/mcp", "/a/mcp"))


async def test_asgi_app() -> None:
    from asgi_helpers import hypercorn  # skips without Hypercorn

    with trio.fail_after(20):
        async with hypercorn(McpAsgiApp(make_server(), options=HttpTransportOptions(auth=make_auth()))) as base:
            await assert_step_up_challenge(f"{base}/mcp")


async def test_worker_processes() -> None:
    from scale_peers import supervisor

    with trio.fail_after(60):
        async with supervisor("scoped_app:server", "--workers", "1", "--options", "scoped_app:options") as (url, _):
            await assert_step_up_challenge(url)
