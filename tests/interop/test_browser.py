"""A real browser as an MCP client: headless Chromium loads a page from one origin whose script (the official
TypeScript SDK's client, bundled by tests/browser/setup.sh) connects to our server on another origin, lists
the tools and calls one; a page from an origin not in ``cors_origins`` is refused by the browser itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from browser_pages import CHROMIUM, browse, page_origin
from paths import TESTS

from trio_mcp import Server
from trio_mcp.asgi import McpAsgiApp
from trio_mcp.transports.http import HttpTransportOptions

BUNDLE = TESTS / "browser" / "dist" / "client.js"
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or not BUNDLE.exists(),
    reason="needs Debian's chromium and the bundled TypeScript client: run tests/browser/setup.sh",
)

PAGE = b"""<!doctype html>
<script type="module">
import { run } from "/client.js";
const report = (text) => fetch("/result", { method: "POST", body: text });
try {
  await report("ok " + await run(new URLSearchParams(location.search).get("mcp")));
} catch (error) {
  await report("error " + error);
}
</script>
"""


def make_server() -> Server:
    server = Server("browser")

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    return server


@asynccontextmanager
async def mcp_server(kind: str, nursery: trio.Nursery, options: HttpTransportOptions) -> AsyncIterator[str]:
    """Our server on its own origin: the built-in one, or the ASGI app under Hypercorn; yields its /mcp URL."""
    if kind == "h11":
        port = await nursery.start(
            lambda task_status: make_server().serve_http("127.0.0.1", 0, options=options, task_status=task_status)
        )
        yield f"http://127.0.0.1:{port}/mcp"
    else:
        from asgi_helpers import hypercorn

        async with hypercorn(McpAsgiApp(make_server(), options=options)) as base:
            yield f"{base}/mcp"


@pytest.mark.parametrize("kind", ["h11", "asgi"])
async def test_a_page_on_an_allowed_origin_uses_the_typescript_client(kind: str, tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        async with page_origin(nursery, PAGE, "/client.js", BUNDLE) as (origin, reports):
            async with mcp_server(kind, nursery, HttpTransportOptions(cors_origins=[origin])) as url:
                report = await browse(f"{origin}/?mcp={url}", tmp_path / "profile", reports)
        nursery.cancel_scope.cancel()
    assert report == "ok tools=add add=5 session"


async def test_a_page_on_another_origin_is_refused(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        async with page_origin(nursery, PAGE, "/client.js", BUNDLE) as (origin, reports):
            options = HttpTransportOptions(cors_origins=["http://app.example"])
            async with mcp_server("h11", nursery, options) as url:
                report = await browse(f"{origin}/?mcp={url}", tmp_path / "profile", reports)
        nursery.cancel_scope.cancel()
    assert report.startswith("error ") and "fetch" in report.lower(), report
