"""Server DPoP nonces (RFC 9449 §8) over real HTTP: every response to a DPoP request carries the current
``DPoP-Nonce``, and our client uses the latest one it saw, so a client that keeps calling crosses any number of
nonce rotations without a ``use_dpop_nonce`` refusal after its first request."""

from __future__ import annotations

import functools
import logging
import time

import pytest
import trio

import trio_mcp
from trio_mcp.auth import (
    CallableVerifier,
    DpopKey,
    DpopVerifier,
    InvalidDpopProof,
    MemoryTokenStore,
    Principal,
    ResourceServerAuth,
)
from trio_mcp.client._oauth import OAuthClientProvider, OAuthToken

pytest.importorskip("jwt", reason="the auth extra (PyJWT[crypto]) is not installed")

NONCE_LIFETIME = 0.4  # seconds: calls for several lifetimes take a couple of seconds


def protected(key: DpopKey) -> tuple[trio_mcp.Server, ResourceServerAuth]:
    """A server taking the token "bound", which is bound to ``key`` (cnf.jkt), with short-lived nonces."""

    async def check(token: str) -> Principal | None:
        return Principal("alice", key_thumbprint=key.thumbprint) if token == "bound" else None

    server = trio_mcp.Server("dpop")

    @server.tool()
    def hello() -> str:
        return "hello"

    auth = ResourceServerAuth(
        CallableVerifier(check),
        authorization_servers=["http://127.0.0.1:9"],
        dpop=DpopVerifier(require_nonce=True, nonce_lifetime=NONCE_LIFETIME),
        dpop_required=True,
    )
    return server, auth


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_calls_across_nonce_rotations_need_no_extra_round_trip(
    version: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="trio_mcp.auth")
    key = DpopKey()
    server, auth = protected(key)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(functools.partial(server.serve_http, port=0, auth=auth))
            url = f"http://127.0.0.1:{port}/mcp"
            store = MemoryTokenStore()
            token = OAuthToken("bound", "DPoP", dpop_key=key.private_key_pem().decode("ascii"))
            await store.set_token(url, token.to_record())
            provider = OAuthClientProvider(client_id="c", token_store=store)
            async with trio_mcp.open_http_client(url, auth=provider, protocol_version=version) as client:
                started = trio.current_time()
                calls = 0
                while trio.current_time() - started < 4 * NONCE_LIFETIME:
                    result = await client.call_tool("hello", {})
                    assert result.content[0].text == "hello"  # type: ignore[union-attr]
                    calls += 1
                    await trio.sleep(NONCE_LIFETIME / 8)
            nursery.cancel_scope.cancel()
    refusals = [record for record in caplog.records if "server nonce" in record.getMessage()]
    # The very first request has no nonce yet: that one refusal is the protocol; any other is a round trip lost.
    assert len(refusals) == 1, [record.getMessage() for record in refusals]
    assert calls >= 16


def test_a_nonce_is_accepted_for_its_lifetime_only() -> None:
    """Rotation at half the lifetime; the replaced nonce stays good until its own lifetime ends, not longer, even
    when nobody asked for a nonce in between."""
    now = [time.time()]
    verifier = DpopVerifier(require_nonce=True, nonce_lifetime=10.0, clock=lambda: now[0])
    key = DpopKey()
    principal = Principal("alice", key_thumbprint=key.thumbprint)
    url = "http://127.0.0.1/mcp"

    def accepted(nonce: str | None) -> bool:
        proof = key.proof("POST", url, access_token="t", nonce=nonce)
        try:
            verifier.check(proof, method="POST", url=url, access_token="t", principal=principal)
        except InvalidDpopProof as exc:
            assert exc.use_nonce
            return False
        return True

    first = verifier.nonce()
    now[0] += 4.9
    assert verifier.nonce() == first
    now[0] += 0.2  # 5.1 s old: replaced, still accepted
    second = verifier.nonce()
    assert second != first and accepted(first)
    now[0] += 4.8  # first is 9.9 s old
    assert accepted(first)
    now[0] += 0.2  # 10.1 s
    assert not accepted(first) and accepted(second)
    now[0] += 60.0  # a long quiet spell: nothing issued long ago is accepted, whatever was asked since
    assert not accepted(second) and not accepted("\u00e9") and not accepted(None)
    with pytest.raises(ValueError, match="nonce_lifetime"):
        DpopVerifier(nonce_lifetime=0)
