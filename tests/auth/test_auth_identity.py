"""A caller stays the same caller across renewed tokens: tasks and input rounds survive a token whose scopes and
expiry differ, over real HTTP with tokens from a real authorization server (tests/auth_server) checked by our
``JwtVerifier``. Every request below carries a freshly issued token, alternating between two sets of scopes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import trio
from test_auth_e2e import get_token, issuer

import trio_mcp
from trio_mcp.auth import JwtVerifier, ResourceServerAuth
from trio_mcp.server import TaskManager
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.types import ElicitResult

pytest.importorskip("jwt", reason="the auth extra (PyJWT[crypto]) is not installed")
pytestmark = pytest.mark.interop

__all__ = ["issuer"]  # the fixture, used by name

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class RenewingAuth:
    """An ``HttpAuth`` that fetches a new token for every request, its scopes and expiry alternating (a refresh,
    a step-up)."""

    def __init__(self, http: HttpClient, issuer: str) -> None:
        self.http = http
        self.issuer = issuer
        self.tokens: list[str] = []

    async def auth_headers(
        self, method: str = "POST", url: str | None = None, *, http: HttpClient | None = None
    ) -> Mapping[str, str]:
        scope, lifetime = (("mcp:read", "60"), ("mcp:read mcp:admin", "600"))[len(self.tokens) % 2]
        fields = {"scope": scope, "test_exp_offset": lifetime, "resource": str(url)}
        token = (await get_token(self.http, self.issuer, **fields))["access_token"]
        self.tokens.append(token)
        return {"authorization": f"Bearer {token}"}

    async def handle_challenge(self, *args: Any, **kwargs: Any) -> bool:
        return False

    def note_success(self) -> None:
        pass

    def note_dpop_nonce(self, url: str, nonce: str) -> None:
        pass


def make_server() -> trio_mcp.Server:
    server = trio_mcp.Server("renewed", tasks=TaskManager(poll_interval=0.05))

    @server.tool(task_support="optional")
    async def slow_greeting(ctx: trio_mcp.Context) -> str:
        """Asks twice (two input rounds on 2026-07-28), with time for several polls between."""
        first = await ctx.elicit("First name?", NAME)
        await trio.sleep(0.3)
        last = await ctx.elicit("Last name?", NAME)
        return f"Hello, {(first.content or {})['name']} {(last.content or {})['name']}"

    return server


async def start(nursery: trio.Nursery, issuer: str) -> str:
    verifier = JwtVerifier(issuer=issuer, audience="pending")
    auth = ResourceServerAuth(verifier, authorization_servers=[issuer], required_scopes=["mcp:read"])
    port = await nursery.start(lambda task_status: make_server().serve_http(port=0, auth=auth, task_status=task_status))
    url = f"http://127.0.0.1:{port}/mcp"
    verifier.audience = [url]
    return url


async def answer(request: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada" if "First" in request.message else "Lovelace"})


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_a_task_and_its_input_rounds_survive_renewed_tokens(issuer: str, version: str) -> None:
    """As a task (both eras: polled, answered and awaited with other tokens than the one that created it), and on
    2026-07-28 also inline, where each input round's ``requestState`` comes back under another token."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            url = await start(nursery, issuer)
            auth = RenewingAuth(http, issuer)
            async with trio_mcp.open_http_client(
                url, auth=auth, protocol_version=version, elicitation=answer
            ) as client:
                result = await client.call_tool_as_task("slow_greeting")
                assert result.content[0].text == "Hello, Ada Lovelace"  # type: ignore[union-attr]
                if version == "2026-07-28":
                    inline = await client.call_tool("slow_greeting")
                    assert inline.content[0].text == "Hello, Ada Lovelace"  # type: ignore[union-attr]
            assert len(set(auth.tokens)) >= 2  # tokens of both scopes and lifetimes took turns
            nursery.cancel_scope.cancel()
