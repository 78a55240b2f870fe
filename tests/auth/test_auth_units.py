"""trio_mcp.auth without an authorization server: stores, challenges, scopes on the engine, the guard in front
of the legacy HTTP+SSE endpoints, DPoP proof checks, and what happens without the ``auth`` extra."""

from __future__ import annotations

import base64
import builtins
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp.auth import (
    AuthExtraMissing,
    CallableVerifier,
    DpopKey,
    DpopVerifier,
    FileTokenStore,
    InvalidDpopProof,
    InvalidToken,
    JwtVerifier,
    Principal,
    ResourceServerAuth,
    jwk_thumbprint,
    parse_www_authenticate,
    protected_resource_metadata,
)
from trio_mcp.auth._metadata import challenge, protected_resource_metadata_paths
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports.streamable_http import HttpTransportOptions


def test_challenges_round_trip() -> None:
    header = challenge(
        "Bearer",
        [
            ("resource_metadata", "http://h/.well-known/x"),
            ("scope", "a b"),
            ("error", None),
            ("error_description", 'say "no"'),
        ],
    )
    assert header == 'Bearer resource_metadata="http://h/.well-known/x", scope="a b", error_description="say \\"no\\""'
    assert parse_www_authenticate(header) == {
        "scheme": "bearer",
        "resource_metadata": "http://h/.well-known/x",
        "scope": "a b",
        "error_description": 'say "no"',
    }
    dpop = parse_www_authenticate('DPoP error="use_dpop_nonce", algs="ES256"')
    assert dpop == {"scheme": "dpop", "error": "use_dpop_nonce", "algs": "ES256"}
    assert parse_www_authenticate('Basic realm="x"') == {}


def test_metadata_paths_and_document() -> None:
    assert protected_resource_metadata_paths("/mcp") == (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    )
    assert protected_resource_metadata_paths("/") == ("/.well-known/oauth-protected-resource",) * 2
    document = protected_resource_metadata(
        "https://m.example/mcp",
        ["https://as.example"],
        scopes_supported=["r"],
        dpop_algorithms=["ES256"],
        dpop_bound_only=True,
    )
    assert document == {
        "resource": "https://m.example/mcp",
        "authorization_servers": ["https://as.example"],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["r"],
        "dpop_signing_alg_values_supported": ["ES256"],
        "dpop_bound_access_tokens_required": True,
    }


async def test_file_store_is_private_atomic_and_reloads(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "tokens.json"
    store = FileTokenStore(path)
    assert await store.get_token("http://h/mcp") is None
    await store.set_token("http://h/mcp", {"access_token": "a", "refresh_token": "r"})
    await store.set_client("http://as", {"client_id": "c"})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(os.listdir(path.parent)) == ["tokens.json"]  # no temporary file left behind
    again = FileTokenStore(path)
    assert await again.get_token("http://h/mcp") == {"access_token": "a", "refresh_token": "r"}
    assert await again.get_client("http://as") == {"client_id": "c"}
    await again.set_token("http://h/mcp", None)
    assert json.loads(path.read_text())["tokens"] == {}
    path.write_text("[1]")
    with pytest.raises(ValueError, match="not a token store"):
        await FileTokenStore(path).get_token("x")


def test_options_are_checked_at_the_call() -> None:
    with pytest.raises(ValueError, match="algorithms"):
        JwtVerifier(issuer="http://as", audience="http://rs/mcp", algorithms=["HS256"])
    with pytest.raises(ValueError, match="algorithms"):
        JwtVerifier(issuer="http://as", audience="http://rs/mcp", algorithms=["none"])
    with pytest.raises(ValueError, match="authorization_servers"):
        ResourceServerAuth(CallableVerifier(_nobody), authorization_servers=[])
    with pytest.raises(ValueError, match="resource"):
        ResourceServerAuth(CallableVerifier(_nobody), authorization_servers=["http://as"], resource="http://x/#f")
    with pytest.raises(ValueError, match="dpop_required"):
        ResourceServerAuth(CallableVerifier(_nobody), authorization_servers=["http://as"], dpop_required=True)
    with pytest.raises(ValueError, match="scopes"):
        trio_mcp.Server("s").tool(scopes=["two words"])(lambda: None)


async def _nobody(token: str) -> Principal | None:
    return None


async def test_callable_verifier_binds_the_audience() -> None:
    async def check(token: str) -> Principal | None:
        return Principal("alice", audience=[token]) if token != "none" else None

    verifier = CallableVerifier(check, audience="http://rs/mcp")
    assert (await verifier.verify("http://rs/mcp")).subject == "alice"
    for token in ("http://other/mcp", "none"):
        with pytest.raises(InvalidToken):
            await verifier.verify(token)


def test_principal_equality_is_identity_only() -> None:
    a = Principal("alice", "c", "http://as", scopes={"r"}, expires_at=1.0)
    b = Principal("alice", "c", "http://as", scopes={"r", "w"}, expires_at=2.0)
    assert a == b and hash(a) == hash(b) and a != Principal("bob", "c", "http://as")


def test_dpop_proofs_checked() -> None:
    key, principal_key = DpopKey(), DpopKey()
    verifier = DpopVerifier()
    principal = Principal("alice", key_thumbprint=key.thumbprint)
    url = "http://127.0.0.1:1/mcp"
    proof = key.proof("POST", url + "?x=1", access_token="tok")  # the query is not part of htu
    verifier.check(proof, method="POST", url=url, access_token="tok", principal=principal)
    with pytest.raises(InvalidDpopProof, match="replayed"):
        verifier.check(proof, method="POST", url=url, access_token="tok", principal=principal)
    with pytest.raises(InvalidDpopProof, match="cnf.jkt"):
        verifier.check(
            principal_key.proof("POST", url, access_token="tok"),
            method="POST",
            url=url,
            access_token="tok",
            principal=principal,
        )
    assert key.thumbprint == jwk_thumbprint(key.public_jwk) != principal_key.thumbprint
    restored = DpopKey(key.private_key_pem())
    assert restored.thumbprint == key.thumbprint
    with pytest.raises(InvalidDpopProof, match="no DPoP proof"):
        verifier.check(None, method="POST", url=url, access_token="tok", principal=principal)


async def test_scopes_on_the_engine_without_http() -> None:
    """Over a transport without a step-up challenge, a tool needing a scope the principal lacks is neither
    listed nor callable; handlers see the principal and its scopes."""
    server = trio_mcp.Server("s")

    @server.tool(scopes=["read"])
    def mine(ctx: trio_mcp.Context) -> str:
        return " ".join(sorted(ctx.scopes))

    @server.tool(scopes=["admin"])
    def admin() -> str:
        return "admin"

    @server.tool()
    def free() -> str:
        return "free"

    from trio_mcp.testing import open_in_memory

    principal = Principal("alice", scopes={"read"})
    original = server.serve_connection

    async def as_alice(stream: Any, **options: Any) -> None:
        await original(stream, **{**options, "principal": principal})

    server.serve_connection = as_alice  # type: ignore[method-assign]
    with trio.fail_after(10):
        async with open_in_memory(server) as client:
            assert sorted(tool.name for tool in (await client.list_tools()).tools) == ["free", "mine"]
            assert (await client.call_tool("mine", {})).content[0].text == "read"  # type: ignore[union-attr]
            with pytest.raises(trio_mcp.McpError, match="Insufficient scope: requires admin"):
                await client.call_tool("admin", {})
    assert server.required_scopes("tools/call", {"name": "admin"}) == {"admin"}


async def test_the_guard_covers_the_legacy_sse_endpoints() -> None:
    async def check(token: str) -> Principal | None:
        return Principal("alice", audience=["http://127.0.0.1/mcp"]) if token == "good" else None

    auth = ResourceServerAuth(CallableVerifier(check), authorization_servers=["http://127.0.0.1:9"])
    options = HttpTransportOptions(auth=auth)
    server = trio_mcp.Server("s")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            port = await nursery.start(
                lambda task_status: server.serve_http(port=0, options=options, task_status=task_status)
            )
            for method, path in (("GET", "/sse"), ("POST", "/messages?session_id=x"), ("DELETE", "/mcp")):
                response = await http.request(method, f"http://127.0.0.1:{port}{path}")
                async with response:
                    await response.read()
                params = parse_www_authenticate(response.headers.get("www-authenticate"))
                assert response.status == 401, path
                assert (
                    params["resource_metadata"] == f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
                )
            nursery.cancel_scope.cancel()


def test_without_the_extra_signatures_fail_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_jwt(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "jwt" or name.startswith("jwt."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jwt)
    for make in (lambda: JwtVerifier(issuer="http://as", audience="x"), DpopKey, DpopVerifier):
        with pytest.raises(AuthExtraMissing, match=r"pip install 'trio-mcp\[auth\]'"):
            make()
    # What needs no signature still works.
    from trio_mcp.auth import IntrospectionVerifier
    from trio_mcp.client._oauth import OAuthClientProvider

    IntrospectionVerifier("http://as/introspect", client_id="c", client_secret="s", audience="x")
    assert OAuthClientProvider(client_id="c").dpop is None
    with pytest.raises(AuthExtraMissing):
        OAuthClientProvider(client_id="c", dpop=True)


async def test_an_unreachable_authorization_server_is_503_not_401(caplog: pytest.LogCaptureFixture) -> None:
    """When the keys or the introspection endpoint cannot be reached, the token is not the client's fault:
    503 with Retry-After, no challenge (a client must not re-authorize for it)."""
    import base64
    import socket

    from trio_mcp.auth import IntrospectionVerifier

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"  # nothing listens there once closed
    header = base64.urlsafe_b64encode(b'{"alg":"RS256","kid":"k"}').rstrip(b"=").decode()
    token = f"{header}.e30.c2ln"
    verifiers = [
        JwtVerifier(issuer=dead, audience="http://127.0.0.1/mcp"),
        IntrospectionVerifier(f"{dead}/introspect", client_id="c", client_secret="s", audience="x"),
    ]
    with trio.fail_after(20):
        for verifier in verifiers:
            auth = ResourceServerAuth(verifier, authorization_servers=[dead])
            server = trio_mcp.Server("s")
            async with trio.open_nursery() as nursery, HttpClient() as http:
                port = await nursery.start(
                    lambda task_status: server.serve_http(  # noqa: B023 (started at once)
                        port=0,
                        auth=auth,  # noqa: B023 (started at once)
                        task_status=task_status,
                    )
                )
                response = await http.request(
                    "POST", f"http://127.0.0.1:{port}/mcp", headers=[("authorization", f"Bearer {token}")], body=b"{}"
                )
                async with response:
                    await response.read()
                assert response.status == 503 and response.headers.get("retry-after") == "5"
                assert "www-authenticate" not in response.headers
                nursery.cancel_scope.cancel()
    assert "cannot check access tokens" in caplog.text and token not in caplog.text


def test_dpop_keys_with_short_coordinates_still_verify() -> None:
    """A P-256 coordinate below 2**248 (about one key in a hundred) keeps its leading zero byte in the JWK,
    so every key's proofs verify, not only most keys'."""
    verifier = DpopVerifier()
    url = "http://127.0.0.1:1/mcp"
    short = 0
    for _ in range(2000):
        key = DpopKey()
        coordinates = [base64.urlsafe_b64decode(key.public_jwk[name] + "==") for name in ("x", "y")]
        assert [len(value) for value in coordinates] == [32, 32]
        if any(value[0] == 0 for value in coordinates):
            short += 1
            principal = Principal("alice", key_thumbprint=key.thumbprint)
            proof = key.proof("POST", url, access_token="tok")
            verifier.check(proof, method="POST", url=url, access_token="tok", principal=principal)
    assert short > 0, "no key with a short coordinate in 2,000 tries (expected about 16)"


async def test_a_stateless_call_is_admitted_by_the_scopes_of_its_body() -> None:
    """The guard reads a POST's body for the scopes its tool needs (403 without them), and the endpoint serves the
    same message; a body that is not JSON is the endpoint's parse error, with or without the scopes."""

    async def check(token: str) -> Principal | None:
        scopes = {"admin"} if token == "admin" else set()
        return Principal(token, scopes=scopes, audience=["http://127.0.0.1/mcp"])

    auth = ResourceServerAuth(CallableVerifier(check), authorization_servers=["http://127.0.0.1:9"])
    server = trio_mcp.Server("s")

    @server.tool(scopes=["admin"])
    def admin() -> str:
        return "admitted"

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "admin", "_meta": meta}}
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "admin",
    }
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            port = await nursery.start(
                lambda task_status: server.serve_http(
                    port=0, options=HttpTransportOptions(auth=auth), task_status=task_status
                )
            )

            async def post(token: str, body: bytes) -> tuple[int, bytes]:
                sent = {**headers, "authorization": f"Bearer {token}"}
                response = await http.request("POST", f"http://127.0.0.1:{port}/mcp", headers=sent, body=body)
                async with response:
                    return response.status, await response.read()

            status, _ = await post("user", json.dumps(call).encode())
            assert status == 403
            status, body = await post("admin", json.dumps(call).encode())
            assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == "admitted"
            for token in ("user", "admin"):
                status, body = await post(token, b"{not json")
                assert status == 400 and json.loads(body)["error"]["code"] == -32700
            nursery.cancel_scope.cancel()
