"""A real MCP Apps host in a real browser: headless Chromium loads a host page whose script (the TypeScript SDK v2
client with the official ``@modelcontextprotocol/ext-apps`` AppBridge, bundled by tests/browser/setup.sh) talks
to a trio_mcp server over Streamable HTTP, finds the tool's app, renders its HTML in a sandboxed frame, and the
app (written with the official ext-apps ``App``) calls the tool through the host and shows the result in its DOM,
which the page reads back. A host that does not declare the extension is shown plain tools."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from browser_pages import CHROMIUM, browse, page_origin
from paths import TESTS

from trio_mcp import Server
from trio_mcp.transports.http import HttpTransportOptions

DIST = TESTS / "browser" / "apps" / "dist"
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or not (DIST / "host.js").exists(),
    reason="needs Debian's chromium and the bundled ext-apps host and app: run tests/browser/setup.sh",
)

PAGE = b"""<!doctype html>
<script type="module">
import { host } from "/host.js";
const report = (text) => fetch("/result", { method: "POST", body: text });
const query = new URLSearchParams(location.search);
try {
  await report("ok " + await host(query.get("mcp"), query.has("plain")));
} catch (error) {
  await report("error " + error);
}
</script>
"""


def clock_server() -> Server:
    server = Server("clock")

    @server.tool()
    async def get_time() -> str:
        """The time, as text for clients without apps."""
        return "12:00 from trio_mcp"

    # The app: its HTML with the official App bundle inlined (an app's page is one document).
    script = (DIST / "app.js").read_text(encoding="utf-8").replace("</script", "<\\/script")
    html = f'<!doctype html><html><body><p id="out"></p><script type="module">{script}</script></body></html>'
    server.add_app("ui://clock/app.html", html, tools=["get_time"])
    return server


@pytest.mark.parametrize("plain", [False, True], ids=["apps-host", "plain-host"])
async def test_a_browser_host_renders_the_app_which_calls_the_tool(plain: bool, tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        async with page_origin(nursery, PAGE, "/host.js", DIST / "host.js") as (origin, reports):
            options = HttpTransportOptions(cors_origins=[origin])
            port = await nursery.start(
                lambda task_status: clock_server().serve_http("127.0.0.1", 0, options=options, task_status=task_status)
            )
            query = f"mcp=http://127.0.0.1:{port}/mcp" + ("&plain" if plain else "")
            report = await browse(f"{origin}/?{query}", tmp_path / "profile", reports)
        nursery.cancel_scope.cancel()
    if plain:  # no extension declared: the tool is listed without its app
        assert report == "ok no app; tools=get_time"
    else:
        assert report == "ok get_time text/html;profile=mcp-app app shows: 12:00 from trio_mcp"
