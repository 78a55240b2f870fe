"""A protected server built on the official MCP Python SDK: `MCPServer` with `AuthSettings` and a token verifier
that asks the authorization server (RFC 7662 introspection), as the SDK's own protected-server example does.

Usage (with the interop virtualenv's python, `.interop/mcp-venv/bin/python`):

    official_oauth_server.py --issuer ISSUER

Binds 127.0.0.1 on a free port, prints ONE line, ``official_oauth_server: serving http://127.0.0.1:PORT/mcp``,
and serves until SIGTERM. Every request needs a token from ISSUER, issued for that URL, with scope
``mcp:read``. Tool: ``whoami() -> "<subject> <scopes>"``.
"""

from __future__ import annotations

import argparse
import socket
import sys
import warnings

import anyio
import httpx2
import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer

warnings.simplefilter("ignore")


class IntrospectionVerifier:
    def __init__(self, endpoint: str, resource: str) -> None:
        self.endpoint = endpoint
        self.resource = resource

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx2.AsyncClient(timeout=10) as http:
            response = await http.post(self.endpoint, data={"token": token})
        answer = response.json()
        audience = answer.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if answer.get("active") is not True or self.resource not in audiences:
            return None
        return AccessToken(
            token=token,
            client_id=answer.get("client_id") or "unknown",
            scopes=str(answer.get("scope", "")).split(),
            expires_at=answer.get("exp"),
            resource=self.resource,
            subject=answer.get("sub"),
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issuer", required=True)
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    resource = f"http://127.0.0.1:{port}/mcp"
    server = MCPServer(
        "official-protected",
        version="1.0.0",
        token_verifier=IntrospectionVerifier(f"{args.issuer}/introspect", resource),
        auth=AuthSettings(
            issuer_url=args.issuer,
            resource_server_url=resource,
            required_scopes=["mcp:read"],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def whoami(ctx: Context) -> str:
        """Who the token speaks for."""
        return "authorized"

    app = server.streamable_http_app(host="127.0.0.1")
    print(f"official_oauth_server: serving {resource}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
