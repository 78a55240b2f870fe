"""MCP Apps with the official MCP Python SDK's apps helpers (``mcp.server.apps``) as the peer, both ways over stdio:
their server's app is found, read (HTML, CSP, permissions) and its tool called by trio_mcp's client, in both eras,
and their client, declaring the extension, reads trio_mcp's app the same way. Needs the interop set-up."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trio
from test_interop_stdio import PATHS, texts

import trio_mcp
from trio_mcp.apps import APP_MIME_TYPE, AppCsp, AppLink, AppPermissions, apps_capability

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent
OFFICIAL_SERVER = [PATHS["mcp_python"], str(HERE / "official_apps_server.py")]

OUR_SERVER = """
import trio, trio_mcp
from trio_mcp.apps import AppCsp, AppPermissions

server = trio_mcp.Server("trio-apps")

@server.tool()
async def get_time() -> str:
    return "12:00"

server.add_app(
    "ui://clock/app.html",
    "<!doctype html><p>trio</p>",
    tools=["get_time"],
    csp=AppCsp(connect_domains=("https://api.example.com",)),
    permissions=AppPermissions(clipboard_write=True),
    prefers_border=True,
)
trio.run(server.serve_stdio)
"""


@pytest.mark.parametrize("version", ["auto", "2025-11-25"])
async def test_our_client_hosts_the_official_sdks_app(version: str) -> None:
    with trio.fail_after(60):
        async with trio_mcp.open_stdio_client(
            OFFICIAL_SERVER, stderr="capture", protocol_version=version, extensions=apps_capability()
        ) as client:
            # The official server declares extensions in server/discover only, not in initialize.
            declared = "io.modelcontextprotocol/ui" in (client.server_capabilities.extensions or {})
            assert declared == (client.era == "modern")
            (tool,) = (await client.list_tools()).tools
            assert client.tool_app(tool) == AppLink(resource_uri="ui://clock/app.html")
            app = await client.read_app("ui://clock/app.html")
            assert "official" in app.html
            assert app.csp == AppCsp(connect_domains=("https://api.example.com",))
            assert app.permissions == AppPermissions(clipboard_write=True)
            assert app.prefers_border is True
            # their client_supports_apps() saw our declaration, on either era
            assert texts(await client.call_tool("get_time", {})) == ["12:00 (with app)"]


async def test_the_official_sdks_server_sees_a_client_without_apps() -> None:
    with trio.fail_after(60):
        async with trio_mcp.open_stdio_client(OFFICIAL_SERVER, stderr="capture") as client:
            assert texts(await client.call_tool("get_time", {})) == ["12:00"]


async def test_the_official_sdks_client_hosts_our_app(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(OUR_SERVER, encoding="utf-8")
    command = [PATHS["mcp_python"], str(HERE / "official_apps_client.py"), sys.executable, str(script)]
    with trio.fail_after(60):
        done = await trio.run_process(command, capture_stdout=True, capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    seen = json.loads(done.stdout.decode().splitlines()[-1])["tools"]
    assert "io.modelcontextprotocol/ui" in seen["serverExtensions"]
    assert seen["get_time"] == {
        "ui": {"resourceUri": "ui://clock/app.html"},
        "mimeType": APP_MIME_TYPE,
        "html": "<!doctype html><p>trio</p>",
        "resourceMeta": {
            "ui": {
                "csp": {"connectDomains": ["https://api.example.com"]},
                "permissions": {"clipboardWrite": {}},
                "prefersBorder": True,
            }
        },
        "text": ["12:00"],
    }
