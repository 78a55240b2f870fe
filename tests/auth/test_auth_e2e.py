"""Authorization end to end against a real authorization server (oauth2-mock-server on 127.0.0.1, installed by
tests/auth_server/setup.sh): it signs JWTs with its own keys and serves discovery, JWKS, introspection and
refresh tokens. Our protected server verifies its tokens; our client obtains, refreshes and steps up.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import trio
from paths import ROOT

import trio_mcp
from trio_mcp.auth import (
    DpopKey,
    DpopVerifier,
    FileTokenStore,
    IntrospectionVerifier,
    InvalidToken,
    JwtVerifier,
    MemoryTokenStore,
    ResourceServerAuth,
    loopback_authorization,
    parse_www_authenticate,
)
from trio_mcp.client._oauth import OAuthClientProvider, OAuthToken
from trio_mcp.transports._client.h11client import HttpClient

pytest.importorskip("jwt", reason="the auth extra (PyJWT[crypto]) is not installed")
pytestmark = pytest.mark.interop  # a real authorization server and the official SDK: peers nobody here wrote

SERVER_JS = ROOT / "tests" / "auth_server" / "server.mjs"
PATHS = ROOT / ".interop" / "paths.json"


def authorization_server() -> Iterator[str]:
    """Run the authorization server; yield its issuer URL."""
    if not PATHS.exists() or not (SERVER_JS.parent / "node_modules" / "oauth2-mock-server").exists():
        pytest.skip(
            "the authorization server is not installed: run tests/interop/setup.sh and tests/auth_server/setup.sh"
        )
    node = json.loads(PATHS.read_text())["node"]
    process = subprocess.Popen([node, str(SERVER_JS)], cwd=SERVER_JS.parent, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        yield json.loads(line)["issuer"]
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    """The authorization server's issuer URL (one server process for the module)."""
    yield from authorization_server()


@pytest.fixture
def own_issuer() -> Iterator[str]:
    """An authorization server of the test's own (for tests that change its keys)."""
    yield from authorization_server()


def make_server() -> trio_mcp.Server:
    server = trio_mcp.Server("protected")

    @server.tool(scopes=["mcp:read"])
    def whoami(ctx: trio_mcp.Context) -> str:
        """Who the token speaks for, and its scopes."""
        return f"{ctx.principal.subject} {' '.join(sorted(ctx.scopes))}"

    @server.tool(scopes=["mcp:admin"])
    def wipe() -> str:
        """Needs the admin scope."""
        return "wiped"

    return server


class Protected:
    """Our protected MCP server on 127.0.0.1 in front of the real authorization server."""

    def __init__(
        self, issuer: str, *, introspection: bool = False, dpop: DpopVerifier | None = None, whole_origin: bool = False
    ) -> None:
        self.issuer = issuer
        self.introspection = introspection
        self.dpop = dpop
        self.whole_origin = whole_origin  # the resource is the origin (every endpoint), not the /mcp URL
        self.url = ""

    async def start(self, nursery: trio.Nursery) -> str:
        verifier: Any
        # The audience is this server's URL, known once it listens: set it before the first request.
        if self.introspection:
            verifier = IntrospectionVerifier(
                f"{self.issuer}/introspect",
                client_id="rs",
                client_secret="rs-secret",
                audience="pending",
                issuer=self.issuer,
            )
        else:
            verifier = JwtVerifier(issuer=self.issuer, audience="pending")
        auth = ResourceServerAuth(
            verifier,
            authorization_servers=[self.issuer],
            scopes_supported=["mcp:read", "mcp:admin"],
            required_scopes=["mcp:read"],
            dpop=self.dpop,
        )
        port = await nursery.start(
            lambda task_status: make_server().serve_http(port=0, auth=auth, task_status=task_status)
        )
        self.url = f"http://127.0.0.1:{port}/mcp"
        audience = self.url
        if self.whole_origin:
            audience = auth.resource = f"http://127.0.0.1:{port}"
        verifier.audience = {audience} if self.introspection else [audience]
        return self.url


async def get_token(http: HttpClient, issuer: str, *, dpop: DpopKey | None = None, **form: str) -> dict[str, Any]:
    fields = {"grant_type": "client_credentials", "client_id": "test-client", **form}
    headers = [("content-type", "application/x-www-form-urlencoded")]
    if dpop is not None:
        headers.append(("dpop", dpop.proof("POST", f"{issuer}/token")))
    response = await http.request("POST", f"{issuer}/token", headers=headers, body=urlencode(fields).encode())
    async with response:
        body = json.loads(await response.read())
    assert response.status == 200, body
    return body  # type: ignore[no-any-return]


async def post_mcp(
    http: HttpClient,
    url: str,
    token: str | None,
    *,
    method: str = "tools/list",
    params: dict[str, Any] | None = None,
    scheme: str = "Bearer",
    extra: list[tuple[str, str]] = (),
) -> tuple[int, dict[str, str], Any]:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {
            **(params or {}),
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        *extra,
    ]
    if method == "tools/call":
        headers.append(("mcp-name", str((params or {})["name"])))
    if token is not None:
        headers.append(("authorization", f"{scheme} {token}"))
    response = await http.request("POST", url, headers=headers, body=json.dumps(message).encode())
    async with response:
        raw = await response.read()
    www = "; ".join(response.headers.get_all("www-authenticate"))
    return (
        response.status,
        {"www-authenticate": www, "dpop-nonce": response.headers.get("dpop-nonce", "")},
        (json.loads(raw) if raw else None),
    )


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forged(
    token: str, *, header: dict[str, Any] | None = None, claims: dict[str, Any] | None = None, key: bytes | None = None
) -> str:
    """``token`` with its header or claims changed; re-signed with HMAC-SHA256 under ``key``, or unsigned."""
    head, body, signature = token.split(".")
    new_head = b64(json.dumps({**json.loads(base64.urlsafe_b64decode(head + "==")), **(header or {})}).encode())
    new_body = b64(json.dumps({**json.loads(base64.urlsafe_b64decode(body + "==")), **(claims or {})}).encode())
    if key is not None:
        signature = b64(hmac.new(key, f"{new_head}.{new_body}".encode(), hashlib.sha256).digest())
    elif header and header.get("alg") == "none":
        signature = ""
    return f"{new_head}.{new_body}.{signature}"


async def test_protected_server_metadata_challenges_and_bad_tokens(
    issuer: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "trio_mcp.auth")
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            protected = Protected(issuer)
            url = await protected.start(nursery)
            origin = url.removesuffix("/mcp")
            for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
                response = await http.request("GET", origin + path)
                async with response:
                    document = json.loads(await response.read())
                assert response.status == 200
                assert document["resource"] == url and document["authorization_servers"] == [issuer]
                assert document["scopes_supported"] == ["mcp:read", "mcp:admin"]

            status, headers, _ = await post_mcp(http, url, None)
            challenge = parse_www_authenticate(headers["www-authenticate"])
            assert status == 401 and "error" not in challenge
            assert challenge["resource_metadata"] == f"{origin}/.well-known/oauth-protected-resource/mcp"
            assert challenge["scope"] == "mcp:read"

            good = (await get_token(http, issuer, resource=url, scope="mcp:read"))["access_token"]
            status, _, body = await post_mcp(http, url, good)
            assert status == 200 and [tool["name"] for tool in body["result"]["tools"]] == ["whoami"]
            status, _, body = await post_mcp(http, url, good, method="tools/call", params={"name": "whoami"})
            assert status == 200 and body["result"]["content"][0]["text"] == "None mcp:read"

            # A tool needing a scope the token lacks: 403 naming it, so the client can step up.
            status, headers, _ = await post_mcp(http, url, good, method="tools/call", params={"name": "wipe"})
            challenge = parse_www_authenticate(headers["www-authenticate"])
            assert status == 403 and challenge["error"] == "insufficient_scope"
            assert "mcp:admin" in challenge["scope"].split()

            response = await http.request("GET", f"{issuer}/jwks")
            async with response:
                public_key = json.dumps(json.loads(await response.read())["keys"][0]).encode()
            bad = {
                "expired": (await get_token(http, issuer, resource=url, scope="mcp:read", test_exp_offset="-120"))[
                    "access_token"
                ],
                "wrong audience": (await get_token(http, issuer, resource="http://127.0.0.1:1/mcp", scope="mcp:read"))[
                    "access_token"
                ],
                "no audience": (await get_token(http, issuer, scope="mcp:read"))["access_token"],
                "wrong issuer": (
                    await get_token(http, issuer, resource=url, scope="mcp:read", test_iss="http://127.0.0.1:2")
                )["access_token"],
                "alg none": forged(good, header={"alg": "none"}),
                "HS256 with the public key": forged(good, header={"alg": "HS256"}, key=public_key),
                "tampered": forged(good, claims={"scope": "mcp:read mcp:admin"}),
                "garbage": "not-a-jwt",
            }
            for name, token in bad.items():
                caplog.clear()
                status, headers, _ = await post_mcp(http, url, token)
                challenge = parse_www_authenticate(headers["www-authenticate"])
                assert status == 401 and challenge["error"] == "invalid_token", name
                assert challenge["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp"), name
                assert [r for r in caplog.records if "refused POST /mcp" in r.getMessage()], name
                assert token not in caplog.text, name
            nursery.cancel_scope.cancel()


async def test_introspection_verifier(issuer: str) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            url = await Protected(issuer, introspection=True).start(nursery)
            good = (await get_token(http, issuer, resource=url, scope="mcp:read"))["access_token"]
            assert (await post_mcp(http, url, good))[0] == 200
            assert (await post_mcp(http, url, good))[0] == 200  # answered from the cache
            expired = (await get_token(http, issuer, resource=url, scope="mcp:read", test_exp_offset="-120"))[
                "access_token"
            ]
            other = (await get_token(http, issuer, resource="http://127.0.0.1:1/mcp", scope="mcp:read"))["access_token"]
            for token in (expired, other, forged(good, claims={"sub": "mallory"})):
                status, headers, _ = await post_mcp(http, url, token)
                assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]
            nursery.cancel_scope.cancel()


async def test_dpop_bound_tokens(issuer: str) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            url = await Protected(issuer, dpop=DpopVerifier(require_nonce=True)).start(nursery)
            key = DpopKey()
            answer = await get_token(http, issuer, dpop=key, resource=url, scope="mcp:read")
            assert answer["token_type"] == "DPoP"
            token = answer["access_token"]
            # No nonce yet: the server asks for one.
            proof = key.proof("POST", url, access_token=token)
            status, headers, _ = await post_mcp(http, url, token, scheme="DPoP", extra=[("dpop", proof)])
            assert status == 401 and 'error="use_dpop_nonce"' in headers["www-authenticate"]
            nonce = headers["dpop-nonce"]
            proof = key.proof("POST", url, access_token=token, nonce=nonce)
            assert (await post_mcp(http, url, token, scheme="DPoP", extra=[("dpop", proof)]))[0] == 200
            refusals = {
                "replayed": proof,
                "another key": DpopKey().proof("POST", url, access_token=token, nonce=nonce),
                "another method": key.proof("GET", url, access_token=token, nonce=nonce),
                "another URL": key.proof("POST", url + "x", access_token=token, nonce=nonce),
                "another token": key.proof("POST", url, access_token=token + "x", nonce=nonce),
            }
            for name, bad_proof in refusals.items():
                status, headers, _ = await post_mcp(http, url, token, scheme="DPoP", extra=[("dpop", bad_proof)])
                assert status == 401 and 'error="invalid_dpop_proof"' in headers["www-authenticate"], name
            status, headers, _ = await post_mcp(http, url, token)  # a DPoP-bound token presented as Bearer
            assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]
            nursery.cancel_scope.cancel()


class CountingStore(MemoryTokenStore):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[dict[str, Any] | None] = []

    async def set_token(self, resource: str, token: dict[str, Any] | None) -> None:
        self.writes.append(token)
        await super().set_token(resource, token)


@pytest.mark.parametrize("dpop", [False, True], ids=["bearer", "dpop"])
async def test_client_obtains_refreshes_and_steps_up(issuer: str, dpop: bool) -> None:
    """With a server that takes DPoP (its PRM says ES256), the client binds its tokens to a key on its own."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            url = await Protected(issuer, dpop=DpopVerifier() if dpop else None).start(nursery)
            store = CountingStore()
            # refresh_margin = the token lifetime: every request after the first refreshes, so rotation (each
            # refresh token works once at this server) is exercised on every call.
            provider = OAuthClientProvider(client_id="test-client", token_store=store, refresh_margin=3600)
            async with trio_mcp.open_http_client(url, auth=provider) as client:
                assert [tool.name for tool in (await client.list_tools()).tools] == ["whoami"]
                first = store.writes[-1]
                assert first is not None and first["refresh_token"] and (first["dpop_key"] is not None) == dpop
                result = await client.call_tool("whoami", {})
                assert result.content[0].text == "johndoe mcp:read offline_access"  # type: ignore[union-attr]
                before = len(store.writes)
                async with trio.open_nursery() as calls:  # five concurrent calls share one refresh
                    for _ in range(5):
                        calls.start_soon(client.call_tool, "whoami", {})
                assert len(store.writes) == before + 1
                refreshed = store.writes[1:]
                assert refreshed and all(token is not None for token in refreshed)  # no refresh was refused
                assert len({token["refresh_token"] for token in refreshed}) == len(refreshed)  # type: ignore[index]
                # Step up: the admin tool is not listed, but calling it gets 403 insufficient_scope and the
                # provider re-authorizes with the union of the scopes.
                result = await client.call_tool("wipe", {})
                assert result.content[0].text == "wiped"  # type: ignore[union-attr]
                assert set(store.writes[-1]["scope"].split()) >= {"mcp:read", "mcp:admin"}  # type: ignore[index]
            nursery.cancel_scope.cancel()


async def test_file_store_and_loopback_helper(issuer: str, tmp_path: Path) -> None:
    """The interactive helper with a browser stand-in that follows redirects (urllib): the authorization
    server redirects it to our loopback listener. A second run reuses the stored token: no browser."""
    path = tmp_path / "tokens.json"
    opened: list[str] = []

    def browser(url: str) -> None:
        opened.append(url)
        urllib.request.urlopen(url, timeout=10).read()

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            url = await Protected(issuer).start(nursery)
            for run in range(2):
                async with loopback_authorization(open_browser=browser, timeout=20) as loopback:
                    assert loopback.redirect_uri.startswith("http://127.0.0.1:")
                    provider = OAuthClientProvider(
                        client_id="test-client",
                        redirect_uri=loopback.redirect_uri,
                        authorization_handler=loopback.authorize,
                        token_store=FileTokenStore(path),
                    )
                    async with trio_mcp.open_http_client(url, auth=provider) as client:
                        await client.call_tool("whoami", {})
                assert len(opened) == 1, run
                assert os.stat(path).st_mode & 0o777 == 0o600
            assert url in json.loads(path.read_text())["tokens"]
            nursery.cancel_scope.cancel()


def doc_example(page: str) -> str:
    """The first Python code block of a docs page."""
    text = (ROOT / "docs" / page).read_text()
    return text.split("```python\n", 1)[1].split("```", 1)[0]


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_the_docs_examples_run(issuer: str, tmp_path: Path) -> None:
    """docs/protecting-a-server.md's server and docs/authorizing-a-client.md's command-line client, as printed,
    against the real authorization server; the "browser" is a script that follows the redirects."""
    (tmp_path / "server.py").write_text(doc_example("protecting-a-server.md"))
    (tmp_path / "client.py").write_text(doc_example("authorizing-a-client.md"))
    (tmp_path / "browser.py").write_text(
        "import sys, urllib.request\n"
        f"open({str(tmp_path / 'opened')!r}, 'a').write('x')\n"
        "urllib.request.urlopen(sys.argv[1], timeout=10).read()\n"
    )
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ISSUER": issuer,
        "PORT": str(port),
        "TOKENS": str(tmp_path / "tokens.json"),
        "BROWSER": f"{sys.executable} {tmp_path / 'browser.py'} %s",
    }
    server = subprocess.Popen([sys.executable, str(tmp_path / "server.py")], env=env)
    try:
        with trio.fail_after(30):
            while True:
                try:
                    await (await trio.open_tcp_stream("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await trio.sleep(0.05)
            url = f"http://127.0.0.1:{port}/mcp"
            for run in range(2):
                done = await trio.run_process(
                    [sys.executable, str(tmp_path / "client.py"), url], env=env, capture_stdout=True
                )
                output = done.stdout.decode()
                assert f"{run + 1} notes" in output and "hello" in output, output
            assert (tmp_path / "opened").read_text() == "x"  # the browser opened once; the second run reused the token
    finally:
        server.terminate()
        server.wait(timeout=10)


async def test_a_refused_token_is_refreshed_once_before_authorizing_again(issuer: str) -> None:
    from trio_mcp.client._oauth import headless_authorization

    authorizations: list[str] = []

    async def counting(http: HttpClient, url: str, redirect_uri: str) -> str:
        authorizations.append(url)
        return await headless_authorization(http, url, redirect_uri)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            url = await Protected(issuer).start(nursery)
            store = MemoryTokenStore()
            provider = OAuthClientProvider(client_id="test-client", token_store=store, authorization_handler=counting)
            async with trio_mcp.open_http_client(url, auth=provider, protocol_version="2026-07-28") as client:
                await client.call_tool("whoami", {})
                record = await store.get_token(url)
                assert record is not None and len(authorizations) == 1
                # The server now refuses the access token (here: an expired one in its place); the refresh
                # token still works, so one refresh answers the 401 and nobody is asked to authorize again.
                expired = await get_token(http, issuer, resource=url, scope="mcp:read", test_exp_offset="-120")
                await store.set_token(url, {**record, "access_token": expired["access_token"]})
                await client.call_tool("whoami", {})
                assert len(authorizations) == 1
                renewed = await store.get_token(url)
                assert renewed is not None and renewed["refresh_token"] != record["refresh_token"]
                # A refused refresh (the refresh token was revoked: here, replaced by an unknown one) falls back
                # to a new authorization.
                await store.set_token(
                    url, {**renewed, "access_token": expired["access_token"], "refresh_token": "revoked"}
                )
                await client.call_tool("whoami", {})
                assert len(authorizations) == 2
            nursery.cancel_scope.cancel()


async def test_step_up_inside_a_session(issuer: str) -> None:
    """A Streamable HTTP session stays the caller's across the step-up, and from then on its listings and calls
    see the new scopes. The HTTP+SSE transport (2024-11-05) then works with the stored token."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            url = await Protected(issuer).start(nursery)
            store = MemoryTokenStore()
            provider = OAuthClientProvider(client_id="test-client", token_store=store)
            async with trio_mcp.open_http_client(url, auth=provider, protocol_version="2025-11-25") as client:
                assert [tool.name for tool in (await client.list_tools()).tools] == ["whoami"]
                assert (await client.call_tool("wipe", {})).content[0].text == "wiped"  # type: ignore[union-attr]
                assert sorted(tool.name for tool in (await client.list_tools()).tools) == ["whoami", "wipe"]
                text = (await client.call_tool("whoami", {})).content[0].text  # type: ignore[union-attr]
                assert "mcp:admin" in text.split()
            legacy = OAuthClientProvider(client_id="test-client", token_store=store)
            await legacy.auth_headers("GET", url)  # where the stored token is found
            sse_url = url.removesuffix("/mcp") + "/sse"
            async with trio_mcp.open_http_client(sse_url, auth=legacy, protocol_version="2024-11-05") as client:
                assert (await client.call_tool("wipe", {})).content[0].text == "wiped"  # type: ignore[union-attr]
            nursery.cancel_scope.cancel()


# -- the official MCP Python SDK (installed by tests/interop/setup.sh) ------------------------------------------


async def test_the_official_sdk_client_authorizes_against_our_server(issuer: str, mcp_python: str) -> None:
    """The official SDK's client and OAuth provider: it reads our Protected Resource Metadata, authorizes at the
    real authorization server and calls a tool our server guards with a scope."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            url = await Protected(issuer).start(nursery)
            script = ROOT / "tests" / "interop" / "official_oauth_client.py"
            done = await trio.run_process(
                [mcp_python, str(script), "--url", url, "--client-id", "official"], capture_stdout=True
            )
            out = json.loads(done.stdout.decode().strip().splitlines()[-1])
            assert out.get("tools") == ["whoami"], out
            assert out["texts"] == ["johndoe mcp:read offline_access"] and not out["is_error"], out
            nursery.cancel_scope.cancel()


async def test_our_client_authorizes_against_the_official_sdk_server(issuer: str, mcp_python: str) -> None:
    """Our client against the official SDK's protected server (AuthSettings + an introspecting verifier)."""
    script = ROOT / "tests" / "interop" / "official_oauth_server.py"
    process = await trio.lowlevel.open_process([mcp_python, str(script), "--issuer", issuer], stdout=subprocess.PIPE)
    try:
        with trio.fail_after(60):
            assert process.stdout is not None
            line = b""
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive_some(4096)
                assert chunk, "the official server exited before serving"
                line += chunk
            url = line.decode().split("serving ", 1)[1].strip()
            provider = OAuthClientProvider(client_id="test-client")
            async with trio_mcp.open_http_client(url, auth=provider) as client:
                assert [tool.name for tool in (await client.list_tools()).tools] == ["whoami"]
                assert (await client.call_tool("whoami", {})).content[0].text == "authorized"  # type: ignore[union-attr]
            assert provider.last_error is None
    finally:
        process.terminate()
        with trio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()


async def test_http_sse_transport_authorizes_and_steps_up(issuer: str) -> None:
    """The 2024-11-05 HTTP+SSE client authorizes on the GET's 401 and steps up on a POST's 403, with a server
    whose resource is its origin (so its metadata covers /sse as well as /mcp)."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            url = await Protected(issuer, whole_origin=True).start(nursery)
            sse_url = url.removesuffix("/mcp") + "/sse"
            provider = OAuthClientProvider(client_id="test-client")
            async with trio_mcp.open_http_client(sse_url, auth=provider, protocol_version="2024-11-05") as client:
                assert [tool.name for tool in (await client.list_tools()).tools] == ["whoami"]
                assert (await client.call_tool("wipe", {})).content[0].text == "wiped"  # type: ignore[union-attr]
            assert provider.last_error is None
            nursery.cancel_scope.cancel()


async def test_websocket_upgrades_are_protected(issuer: str, caplog: pytest.LogCaptureFixture) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            verifier = JwtVerifier(issuer=issuer, audience="pending")
            auth = ResourceServerAuth(verifier, authorization_servers=[issuer], required_scopes=["mcp:read"])
            port = await nursery.start(
                lambda task_status: make_server().serve_websocket(
                    port=0, path="/mcp", auth=auth, task_status=task_status
                )
            )
            url = f"ws://127.0.0.1:{port}/mcp"
            verifier.audience = [f"http://127.0.0.1:{port}/mcp"]
            with pytest.raises(trio_mcp.ConnectionClosed, match="401"):
                async with trio_mcp.open_websocket_client(url):
                    pass
            assert "refused GET /mcp" in caplog.text and "no access token" in caplog.text
            token = (await get_token(http, issuer, resource=f"http://127.0.0.1:{port}/mcp", scope="mcp:read"))[
                "access_token"
            ]
            async with trio_mcp.open_websocket_client(url, headers={"authorization": f"Bearer {token}"}) as client:
                assert [tool.name for tool in (await client.list_tools()).tools] == ["whoami"]
                with pytest.raises(trio_mcp.McpError, match="Insufficient scope"):
                    await client.call_tool("wipe", {})
            nursery.cancel_scope.cancel()


async def test_websocket_client_refreshes_on_a_refused_upgrade(issuer: str) -> None:
    """``open_websocket_client(auth=provider)``: the stored access token is refused at the upgrade (401), the
    provider answers with one refresh at the authorization server, and the upgrade goes through; a provider
    with nothing to offer ends in ``WebSocketRejected`` (the WebSocket server serves no metadata to authorize
    against)."""
    from urllib.parse import parse_qs, urlsplit

    from trio_mcp.client._oauth import code_challenge, headless_authorization, new_code_verifier
    from trio_mcp.transports.websocket import WebSocketRejected

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            verifier = JwtVerifier(issuer=issuer, audience="pending")
            auth = ResourceServerAuth(verifier, authorization_servers=[issuer], required_scopes=["mcp:read"])
            port = await nursery.start(
                lambda task_status: make_server().serve_websocket(
                    port=0, path="/mcp", auth=auth, task_status=task_status
                )
            )
            url, resource = f"ws://127.0.0.1:{port}/mcp", f"http://127.0.0.1:{port}/mcp"
            verifier.audience = [resource]
            # A grant with a refresh token for this resource (authorization code + PKCE), and an expired access
            # token in the store in place of the one it came with.
            code_verifier, redirect = new_code_verifier(), "http://localhost:3000/callback"
            query = {
                "response_type": "code",
                "client_id": "test-client",
                "redirect_uri": redirect,
                "scope": "mcp:read offline_access",
                "resource": resource,
                "state": "s",
                "code_challenge": code_challenge(code_verifier),
                "code_challenge_method": "S256",
            }
            location = await headless_authorization(http, f"{issuer}/authorize?{urlencode(query)}", redirect)
            code = parse_qs(urlsplit(location).query)["code"][0]
            grant = await get_token(
                http,
                issuer,
                grant_type="authorization_code",
                code=code,
                redirect_uri=redirect,
                code_verifier=code_verifier,
            )
            expired = await get_token(http, issuer, resource=resource, scope="mcp:read", test_exp_offset="-120")
            store = CountingStore()
            stale = OAuthToken(expired["access_token"], refresh_token=grant["refresh_token"], issuer=issuer)
            await store.set_token(resource, stale.to_record())
            provider = OAuthClientProvider(client_id="test-client", token_store=store)
            async with trio_mcp.open_websocket_client(url, auth=provider) as client:
                text = (await client.call_tool("whoami", {})).content[0].text  # type: ignore[union-attr]
                assert text.startswith("johndoe ") and "mcp:read" in text.split()
            refreshed = store.writes[1:]
            assert len(refreshed) == 1 and refreshed[0] is not None
            assert refreshed[0]["refresh_token"] not in (None, grant["refresh_token"])  # rotated
            assert provider.last_error is None
            with pytest.raises(WebSocketRejected) as refused:
                async with trio_mcp.open_websocket_client(url, auth=OAuthClientProvider(client_id="test-client")):
                    pass
            assert refused.value.status_code == 401
            nursery.cancel_scope.cancel()


async def test_jwks_refetched_on_an_unknown_kid(own_issuer: str) -> None:
    """The issuer rotates its keys: a token signed with the new key makes the verifier fetch the keys again
    (once per refetch_interval at most); a kid the issuer does not publish is refused."""
    issuer = own_issuer
    with trio.fail_after(30):
        async with HttpClient() as http:

            async def post(path: str, form: dict[str, str]) -> dict[str, Any]:
                response = await http.request(
                    "POST",
                    issuer + path,
                    body=urlencode(form).encode(),
                    headers=[("content-type", "application/x-www-form-urlencoded")],
                )
                async with response:
                    return json.loads(await response.read())  # type: ignore[no-any-return]

            audience = "http://127.0.0.1:1/mcp"
            verifier = JwtVerifier(issuer=issuer, audience=audience, refetch_interval=0.0, http=http)
            first = (await get_token(http, issuer, resource=audience, scope="mcp:read"))["access_token"]
            assert (await verifier.verify(first)).scopes == {"mcp:read"}
            await post("/test/rotate", {"kid": "rotated-key"})
            rotated = (await post("/test/token", {"kid": "rotated-key", "aud": audience, "scope": "r"}))["access_token"]
            assert json.loads(base64.urlsafe_b64decode(rotated.split(".")[0] + "=="))["kid"] == "rotated-key"
            assert (await verifier.verify(rotated)).subject == "rotated"
            verifier.refetch_interval = 3600.0
            with pytest.raises(InvalidToken, match="does not publish"):
                await verifier.verify(forged(rotated, header={"kid": "unknown-key"}))
