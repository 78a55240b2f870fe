"""The examples of docs/web.md, run as printed: the built-in server with a route, probes and CORS; the same
server mounted under Hypercorn's trio worker, and inside a Quart-Trio app."""

from __future__ import annotations

import re
from typing import Any

import pytest
import trio
from asgi_helpers import hypercorn
from paths import ROOT

import trio_mcp
from trio_mcp.transports._client.h11client import HttpClient

pytest.importorskip("quart_trio", reason="Quart-Trio is a test dependency: pip install quart-trio")

DOC = ROOT / "docs" / "web.md"


def load_examples() -> dict[str, Any]:
    """Every Python block of the page, in order, as one module (not run as ``__main__``)."""
    code = "\n".join(re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL))
    namespace: dict[str, Any] = {"__name__": "web_docs"}
    exec(compile(code, str(DOC), "exec"), namespace)
    return namespace


async def call_forecast(url: str) -> str:
    async with trio_mcp.open_http_client(url) as client:
        result = await client.call_tool("forecast", {"city": "Paris"})
        return result.content[0].text  # type: ignore[union-attr,no-any-return]


async def test_the_built_in_server_serves_the_route_probes_and_cors() -> None:
    examples = load_examples()
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: examples["server"].serve_http(
                    "127.0.0.1", 0, options=examples["options"], task_status=task_status
                )
            )
            base = f"http://127.0.0.1:{port}"
            async with HttpClient() as http:
                route = await http.request("GET", f"{base}/version")
                assert (route.status, await route.read()) == (200, b"weather 1.0\n")
                assert (await http.request("GET", f"{base}/healthz")).status == 200
                preflight = await http.request(
                    "OPTIONS",
                    f"{base}/mcp",
                    headers={"origin": "http://localhost:5173", "access-control-request-method": "POST"},
                )
                assert preflight.status == 204
            assert await call_forecast(f"{base}/mcp") == "Sunny in Paris"
            nursery.cancel_scope.cancel()


async def test_the_hypercorn_and_quart_trio_examples_serve_mcp() -> None:
    examples = load_examples()
    async with hypercorn(examples["app"]) as base:
        assert await call_forecast(f"{base}/mcp") == "Sunny in Paris"
    async with hypercorn(examples["web"]) as base:
        async with HttpClient() as http:
            page = await http.request("GET", f"{base}/")
            assert (page.status, await page.read()) == (200, b"my app, with an MCP server at /mcp")
        assert await call_forecast(f"{base}/mcp") == "Sunny in Paris"


async def test_the_app_continuing_the_file_keeps_its_route_and_cors() -> None:
    examples = load_examples()
    async with hypercorn(examples["app"]) as base, HttpClient() as http:
        route = await http.request("GET", f"{base}/version")
        assert (route.status, await route.read()) == (200, b"weather 1.0\n")
        preflight = await http.request(
            "OPTIONS",
            f"{base}/mcp",
            headers={"origin": "http://localhost:5173", "access-control-request-method": "POST"},
        )
        assert preflight.status == 204
        assert preflight.headers.get("access-control-allow-origin") == "http://localhost:5173"
