"""The official MCP Python SDK's MCP Apps helpers (``mcp.server.apps``) serving one app over stdio, for
test_apps_interop.py. Run with ``.interop/mcp-venv/bin/python``.

    get_time() -> str   bound to ui://clock/app.html (CSP connectDomains, clipboardWrite, prefersBorder); its text
                        says whether the client negotiated apps (``client_supports_apps``)
"""

from __future__ import annotations

import anyio
from mcp.server.apps import Apps, ResourceCsp, ResourcePermissions, client_supports_apps
from mcp.server.mcpserver import Context, MCPServer

HTML = "<!doctype html><html><body><p id=time>official</p></body></html>"

apps = Apps()


@apps.tool(resource_uri="ui://clock/app.html", description="The current time")
def get_time(ctx: Context) -> str:
    return "12:00 (with app)" if client_supports_apps(ctx) else "12:00"


apps.add_html_resource(
    "ui://clock/app.html",
    HTML,
    csp=ResourceCsp(connect_domains=["https://api.example.com"]),
    permissions=ResourcePermissions(clipboard_write={}),
    prefers_border=True,
)

server = MCPServer("official-apps", extensions=[apps])

if __name__ == "__main__":
    anyio.run(server.run_stdio_async)
