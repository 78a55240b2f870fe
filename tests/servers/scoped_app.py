"""A server protected by OAuth through ``HttpTransportOptions(auth=...)`` alone, for the worker-process tests
of scopes (``--options scoped_app:options``): the token "reader" holds ``read``, "admin" holds both scopes."""

from __future__ import annotations

from trio_mcp import HttpTransportOptions, Server
from trio_mcp.auth import CallableVerifier, Principal, ResourceServerAuth

GRANTS = {"reader": {"read"}, "admin": {"read", "admin"}}


async def check(token: str) -> Principal | None:
    scopes = GRANTS.get(token)
    return None if scopes is None else Principal(token, scopes=scopes)


def make_server() -> Server:
    server = Server("scoped")

    @server.tool(scopes=["read"])
    def look() -> str:
        """Needs ``read``."""
        return "looked"

    @server.tool(scopes=["admin"])
    def wipe() -> str:
        """Needs ``admin``."""
        return "wiped"

    return server


def make_auth() -> ResourceServerAuth:
    return ResourceServerAuth(CallableVerifier(check), authorization_servers=["http://127.0.0.1:9"])


server = make_server()
options = HttpTransportOptions(auth=make_auth())
