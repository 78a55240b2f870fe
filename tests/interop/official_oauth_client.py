"""The official MCP Python SDK's client with its own OAuth provider (`mcp.client.auth.OAuthClientProvider`).

Usage (with the interop virtualenv's python, `.interop/mcp-venv/bin/python`):

    official_oauth_client.py --url URL --client-id ID [--tool NAME]

Connects to the protected MCP server at URL over Streamable HTTP. On its 401 the SDK discovers the server's
Protected Resource Metadata and the authorization server, and runs the authorization code flow with the
pre-registered ``ID``; the "browser" here reads the authorization server's redirect without following it. Then
it lists the tools and calls NAME (default ``whoami``), and prints ONE JSON line: ``{"tools": [...], "texts":
[...]}`` or ``{"error": "..."}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

warnings.simplefilter("ignore")
REDIRECT_URI = "http://127.0.0.1:3999/callback"


class MemoryStorage(TokenStorage):
    """Tokens and the client's registration in memory (also used by official_oauth_facade_client.py)."""

    def __init__(self, client: OAuthClientInformationFull | None = None) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = client

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def run(url: str, client_id: str, tool: str) -> dict[str, Any]:
    redirected: list[str] = []

    async def open_browser(authorization_url: str) -> None:
        async with httpx2.AsyncClient() as http:
            response = await http.get(authorization_url)
            redirected.append(response.headers["location"])

    async def receive_callback() -> AuthorizationCodeResult:
        query = {name: values[0] for name, values in parse_qs(urlsplit(redirected[-1]).query).items()}
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    metadata = OAuthClientMetadata(
        client_name="official sdk", redirect_uris=[REDIRECT_URI], token_endpoint_auth_method="none"
    )
    client_info = OAuthClientInformationFull(
        client_id=client_id, redirect_uris=[REDIRECT_URI], token_endpoint_auth_method="none"
    )
    provider = OAuthClientProvider(url, metadata, MemoryStorage(client_info), open_browser, receive_callback)
    async with create_mcp_http_client(auth=provider) as http:
        async with Client(
            streamable_http_client(url, http_client=http), mode="legacy", read_timeout_seconds=15
        ) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            result = await client.call_tool(tool, {})
            texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
            return {"tools": tools, "texts": texts, "is_error": result.is_error}


async def bounded(url: str, client_id: str, tool: str) -> dict[str, Any]:
    with anyio.fail_after(40):
        return await run(url, client_id, tool)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--tool", default="whoami")
    args = parser.parse_args()
    try:
        out = anyio.run(bounded, args.url, args.client_id, args.tool)
    except BaseException as exc:  # noqa: BLE001 - reported on the one line
        while getattr(exc, "exceptions", None):
            exc = exc.exceptions[0]  # type: ignore[attr-defined]
        out = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
