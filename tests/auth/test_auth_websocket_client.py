"""The WebSocket client takes an authorization provider (``auth=``) as the HTTP clients do, against our own
WebSocket server protected by a verifier: the provider's headers go with the upgrade, a 401 refusal goes to its
challenge handling and the upgrade is tried again, and a refusal it cannot resolve is a ``WebSocketRejected``.
(With a real authorization server and ``OAuthClientProvider``: tests/auth/test_auth_e2e.py.)"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import pytest
import trio

import trio_mcp
from trio_mcp.auth import CallableVerifier, Principal, ResourceServerAuth, parse_www_authenticate
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports.websocket import WebSocketRejected


class Provider:
    """A provider holding one token; a challenge swaps in ``renewed`` (if any) and says whether it did."""

    def __init__(self, token: str | None, renewed: str | None, *, always_resolves: bool = False) -> None:
        self.token = token
        self.renewed = renewed
        self.always_resolves = always_resolves
        self.challenges: list[tuple[str, int, dict[str, str]]] = []
        self.requests: list[tuple[str, str | None]] = []
        self.successes = 0

    async def auth_headers(
        self, method: str = "POST", url: str | None = None, *, http: HttpClient | None = None
    ) -> Mapping[str, str]:
        self.requests.append((method, url))
        return {"authorization": f"Bearer {self.token}"} if self.token else {}

    async def handle_challenge(
        self,
        http: HttpClient,
        url: str,
        status: int,
        www_authenticate: str | None,
        sent: Mapping[str, str],
        dpop_nonce: str | None = None,
    ) -> bool:
        self.challenges.append((url, status, parse_www_authenticate(www_authenticate)))
        if self.renewed is not None:
            self.token, self.renewed = self.renewed, None
            return True
        return self.always_resolves

    def note_success(self) -> None:
        self.successes += 1

    def note_dpop_nonce(self, url: str, nonce: str) -> None:
        pass


async def serve(nursery: trio.Nursery) -> str:
    """Our WebSocket server, taking the token "fresh" only."""

    async def check(token: str) -> Principal | None:
        return Principal("alice") if token == "fresh" else None

    server = trio_mcp.Server("ws")

    @server.tool()
    def whoami(ctx: trio_mcp.Context) -> str:
        return str(ctx.principal.subject)

    auth = ResourceServerAuth(CallableVerifier(check), authorization_servers=["http://127.0.0.1:9"])
    port = await nursery.start(functools.partial(server.serve_websocket, port=0, path="/mcp", auth=auth))
    return f"ws://127.0.0.1:{port}/mcp"


async def test_a_refused_upgrade_is_answered_by_the_provider_and_tried_again() -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            url = await serve(nursery)
            provider = Provider("stale", "fresh")
            async with trio_mcp.open_websocket_client(url, auth=provider) as client:
                assert (await client.call_tool("whoami", {})).content[0].text == "alice"  # type: ignore[union-attr]
            http_url = url.replace("ws://", "http://")
            assert provider.requests == [("GET", http_url), ("GET", http_url)]
            [(challenged_url, status, challenge)] = provider.challenges
            assert challenged_url == http_url and status == 401 and challenge["error"] == "invalid_token"
            assert challenge["resource_metadata"] == url.replace("ws://", "http://").replace(
                "/mcp", "/.well-known/oauth-protected-resource/mcp"
            )
            assert provider.successes == 1
            nursery.cancel_scope.cancel()


async def test_a_refusal_the_provider_cannot_resolve_is_a_typed_error() -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            url = await serve(nursery)
            provider = Provider(None, None)
            with pytest.raises(WebSocketRejected) as refused:
                async with trio_mcp.open_websocket_client(url, auth=provider):
                    pass
            assert refused.value.status_code == 401 and "resource_metadata" in refused.value.headers["www-authenticate"]
            assert len(provider.challenges) == 1 and provider.successes == 0
            # A provider that always claims to have new credentials is not believed forever: three upgrades.
            looping = Provider("stale", None, always_resolves=True)
            with pytest.raises(WebSocketRejected, match="401"):
                async with trio_mcp.open_websocket_client(url, auth=looping):
                    pass
            assert len(looping.requests) == 3 and len(looping.challenges) == 2
            nursery.cancel_scope.cancel()


async def test_auth_is_checked_before_connecting() -> None:
    with pytest.raises(TypeError, match="auth must be an authorization provider"):
        async with trio_mcp.open_websocket_client("ws://127.0.0.1:1/mcp", auth="token"):  # type: ignore[arg-type]
            pass
