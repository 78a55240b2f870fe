"""A host built on the official MCP Python SDK's client, declaring MCP Apps, against a server over stdio, for
test_apps_interop.py. Run with ``.interop/mcp-venv/bin/python``:

    official_apps_client.py COMMAND [ARG...]

Lists the tools, reads the ``ui://`` resource each one names in ``_meta.ui.resourceUri``, calls it, and prints one
JSON line: {"tools": {name: {"ui": ..., "mimeType": ..., "html": ..., "resourceMeta": ..., "text": ...}}}.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.extension import advertise

APPS = [advertise("io.modelcontextprotocol/ui", {"mimeTypes": ["text/html;profile=mcp-app"]})]


async def main(command: list[str]) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:])
    out: dict[str, Any] = {}
    async with Client(params, extensions=APPS) as client:
        out["serverExtensions"] = client.server_capabilities.extensions
        for tool in (await client.list_tools()).tools:
            ui = (tool.meta or {}).get("ui")
            entry: dict[str, Any] = {"ui": ui}
            if isinstance(ui, dict):
                read = await client.read_resource(ui["resourceUri"])
                content = read.contents[0]
                entry["mimeType"] = content.mime_type
                entry["html"] = content.text if isinstance(content, types.TextResourceContents) else None
                entry["resourceMeta"] = content.meta
            result = await client.call_tool(tool.name, {})
            entry["text"] = [block.text for block in result.content if isinstance(block, types.TextContent)]
            out[tool.name] = entry
    print(json.dumps({"tools": out}))


anyio.run(main, sys.argv[1:])
