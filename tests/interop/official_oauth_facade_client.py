"""The official MCP Python SDK's client and OAuth provider against an authorization server that needs a user.

Usage (with the interop virtualenv's python, `.interop/mcp-venv/bin/python`):

    official_oauth_facade_client.py --url URL [--mode auto|legacy] [--client-metadata-url URL]

Connects to the protected MCP server at URL over Streamable HTTP; on its 401 the SDK discovers the Protected
Resource Metadata and the authorization server, registers dynamically (RFC 7591), or presents the https URL of its
Client ID Metadata Document when one is given, and runs the authorization code flow. The "browser" is the parent process: the authorization URL is printed as one JSON line
``{"authorize": URL}``, and the URL the user was finally sent to is read back from stdin. Then it calls
``whoami`` and prints ONE JSON line: ``{"tools": [...], "texts": [...], "protocol": ...}`` or ``{"error": ...}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from official_oauth_client import MemoryStorage

warnings.simplefilter("ignore")
REDIRECT_URI = "http://127.0.0.1:3999/callback"


async def run(url: str, mode: str, document: str | None) -> dict[str, Any]:
    redirected: list[str] = []

    async def open_browser(authorization_url: str) -> None:
        print(json.dumps({"authorize": authorization_url}), flush=True)
        redirected.append((await anyio.to_thread.run_sync(sys.stdin.readline)).strip())

    async def receive_callback() -> AuthorizationCodeResult:
        query = {name: values[0] for name, values in parse_qs(urlsplit(redirected[-1]).query).items()}
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    metadata = OAuthClientMetadata(
        client_name="official sdk", redirect_uris=[REDIRECT_URI], token_endpoint_auth_method="none"
    )
    provider = OAuthClientProvider(
        url, metadata, MemoryStorage(), open_browser, receive_callback, client_metadata_url=document
    )
    async with create_mcp_http_client(auth=provider) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=15) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            result = await client.call_tool("whoami", {})
            texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
            return {"tools": tools, "texts": texts, "is_error": result.is_error, "protocol": client.protocol_version}


async def bounded(url: str, mode: str, document: str | None) -> dict[str, Any]:
    with anyio.fail_after(40):
        return await run(url, mode, document)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--mode", default="auto")
    parser.add_argument("--client-metadata-url")
    args = parser.parse_args()
    try:
        out = anyio.run(bounded, args.url, args.mode, args.client_metadata_url)
    except BaseException as exc:  # noqa: BLE001 - reported on the one line
        while getattr(exc, "exceptions", None):
            exc = exc.exceptions[0]  # type: ignore[attr-defined]
        out = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
