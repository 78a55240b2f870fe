"""The authorization facade end to end with real parts: upstream is oidc-provider (tests/auth_server/oidc_upstream.mjs, dynamic
registration off, one pre-registered client), signed into and consented to over HTTP through its development
interactions; the MCP clients are trio_mcp's own OAuth client, registered dynamically or by a Client ID Metadata
Document, calling a protected tool in both eras."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import trio
from facade_helpers import REDIRECT, UserAgent, serve_with_facade, settable_clock, upstream
from paths import ROOT

import trio_mcp
from trio_mcp.auth.facade import AuthorizationFacade, oidc
from trio_mcp.client._oauth import OAuthClientProvider, code_challenge
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports.http import HttpTransportOptions

pytestmark = pytest.mark.interop  # oidc-provider: a peer nobody here wrote

PATHS = ROOT / ".interop" / "paths.json"
#: The redirect URI of tests/interop/official_oauth_facade_client.py.
SDK_REDIRECT = "http://127.0.0.1:3999/callback"


async def call_whoami(url: str, provider: OAuthClientProvider, version: str) -> str:
    async with trio_mcp.open_http_client(url, auth=provider, protocol_version=version) as client:
        result = await client.call_tool("whoami", {})
    return str(result.content[0].text)


async def test_a_dynamically_registered_client_calls_the_tool_in_both_eras(upstream_issuer: str) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            facade = await serve_with_facade(nursery, upstream(upstream_issuer), server_name="Protected")
            agent = UserAgent(http, login="alice")
            provider = OAuthClientProvider(redirect_uri=REDIRECT, authorization_handler=agent.authorize)
            assert (
                await call_whoami(facade.resource, provider, "2026-07-28")
                == "alice alice@example.test mcp:read mcp:write"
            )
            assert (
                await call_whoami(facade.resource, provider, "2025-11-25")
                == "alice alice@example.test mcp:read mcp:write"
            )
            consent = [page for url, page in agent.pages if url.startswith(facade.issuer)]
            assert len(consent) == 1  # one authorization: the second era reused the token
            assert "Allow access to Protected?" in consent[0] and "127.0.0.1" in consent[0]
            assert any(url.startswith(upstream_issuer) for url, _ in agent.pages)  # signed in upstream
            nursery.cancel_scope.cancel()


async def test_a_client_named_by_its_metadata_document(upstream_issuer: str) -> None:
    documents: dict[str, bytes] = {}

    async def document(request: Any, response: Any) -> None:
        await response.send(200, [("content-type", "application/json")], documents["client"])

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            facade = await serve_with_facade(
                nursery, upstream(upstream_issuer), routes={"/client.json": document}, allow_http_documents=True
            )
            client_id = facade.issuer + "/client.json"
            documents["client"] = json.dumps(
                {"client_id": client_id, "client_name": "Doc Client", "redirect_uris": [REDIRECT]}
            ).encode()
            agent = UserAgent(http, login="bob")
            provider = OAuthClientProvider(
                redirect_uri=REDIRECT, client_metadata_url=client_id, authorization_handler=agent.authorize
            )
            assert (await call_whoami(facade.resource, provider, "2026-07-28")).startswith("bob ")
            consent = next(page for url, page in agent.pages if url.startswith(facade.issuer))
            assert "Doc Client" in consent and client_id in consent
            nursery.cancel_scope.cancel()


async def test_an_expired_token_is_refreshed_and_the_old_refresh_token_is_spent(upstream_issuer: str) -> None:
    clock, advance = settable_clock(1_000_000.0)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            facade = await serve_with_facade(nursery, upstream(upstream_issuer), clock=clock)
            agent = UserAgent(http)
            provider = OAuthClientProvider(redirect_uri=REDIRECT, authorization_handler=agent.authorize)
            await call_whoami(facade.resource, provider, "2026-07-28")
            first = await provider.token_store.get_token(facade.resource)
            assert first is not None
            advance(facade.access_token_lifetime + 1)
            assert (await call_whoami(facade.resource, provider, "2026-07-28")).startswith("alice ")
            second = await provider.token_store.get_token(facade.resource)
            assert second is not None and second["access_token"] != first["access_token"]
            assert len([url for url, _ in agent.pages if url.startswith(facade.issuer)]) == 1  # no new consent
            registration = await provider.token_store.get_client(facade.issuer)
            assert registration is not None
            status, body = await token_request(
                http, facade, {"grant_type": "refresh_token", "refresh_token": first["refresh_token"]}, registration
            )
            assert (status, body["error"]) == (400, "invalid_grant")  # rotated: the old one is spent
            nursery.cancel_scope.cancel()


async def token_request(
    http: HttpClient, facade: AuthorizationFacade, form: dict[str, str], client: dict[str, Any], path: str = "/token"
) -> tuple[int, Any]:
    form = {**form, "client_id": client["client_id"]}
    if client.get("client_secret"):
        form["client_secret"] = client["client_secret"]
    response = await http.request(
        "POST",
        facade.issuer + path,
        headers=[("content-type", "application/x-www-form-urlencoded")],
        body=urlencode(form).encode(),
    )
    async with response:
        raw = await response.read()
    return response.status, (json.loads(raw) if raw else None)


async def register(http: HttpClient, facade: AuthorizationFacade, **metadata: Any) -> dict[str, Any]:
    body = json.dumps({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", **metadata}).encode()
    response = await http.request(
        "POST", facade.issuer + "/register", headers=[("content-type", "application/json")], body=body
    )
    async with response:
        answer = json.loads(await response.read())
    assert response.status == 201, answer
    return answer  # type: ignore[no-any-return]


async def authorize(http: HttpClient, facade: AuthorizationFacade, client_id: str, verifier: str) -> str:
    """An authorization code for ``client_id``, the user consenting."""
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": code_challenge(verifier),
            "code_challenge_method": "S256",
            "state": "s1",
            "resource": facade.resource,
        }
    )
    redirected = await UserAgent(http).authorize(http, f"{facade.issuer}/authorize?{query}", REDIRECT)
    answer = parse_qs(urlsplit(redirected).query)
    assert answer["state"] == ["s1"] and answer["iss"] == [facade.issuer]
    return answer["code"][0]


async def signed_in(http: HttpClient, facade: AuthorizationFacade, verifier: str) -> tuple[dict[str, Any], Any]:
    """A client registered, authorized by the user, and its tokens."""
    client = await register(http, facade)
    code = await authorize(http, facade, client["client_id"], verifier)
    grant = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier}
    status, tokens = await token_request(http, facade, grant, client)
    assert status == 200, tokens
    return client, tokens


async def test_a_code_is_redeemed_once_and_by_its_own_client_only(upstream_issuer: str) -> None:
    verifier = "v" * 64
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            facade = await serve_with_facade(nursery, upstream(upstream_issuer))
            first, second = await register(http, facade), await register(http, facade, client_name="Intruder")
            code = await authorize(http, facade, first["client_id"], verifier)
            grant = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
            status, body = await token_request(http, facade, {**grant, "code_verifier": verifier}, second)
            assert (status, body["error"]) == (400, "invalid_grant")
            assert "another client" in body["error_description"]

            code = await authorize(http, facade, first["client_id"], verifier)
            status, body = await token_request(http, facade, {**grant, "code": code, "code_verifier": "w" * 64}, first)
            assert (status, body["error"]) == (400, "invalid_grant")  # PKCE: the wrong verifier

            code = await authorize(http, facade, first["client_id"], verifier)
            status, tokens = await token_request(
                http, facade, {**grant, "code": code, "code_verifier": verifier}, first
            )
            assert status == 200 and tokens["token_type"] == "Bearer"
            status, body = await token_request(http, facade, {**grant, "code": code, "code_verifier": verifier}, first)
            assert (status, body["error"]) == (400, "invalid_grant")  # single use
            principal = await facade.verify(tokens["access_token"])
            assert principal.subject == "alice" and principal.audience == (facade.resource,)
            assert principal.client_id == first["client_id"]
            assert "upstream_access_token" not in principal.claims  # not exposed unless asked for
            nursery.cancel_scope.cancel()


async def test_revoking_a_refresh_token_ends_the_grant(upstream_issuer: str) -> None:
    verifier = "r" * 64
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            facade = await serve_with_facade(nursery, upstream(upstream_issuer), expose_upstream_token=True)
            client, tokens = await signed_in(http, facade, verifier)
            principal = await facade.verify(tokens["access_token"])
            assert principal.claims["upstream_access_token"]  # exposed when asked for, to handlers only

            status, _ = await token_request(http, facade, {"token": tokens["refresh_token"]}, client, "/revoke")
            assert status == 200
            with pytest.raises(trio_mcp.auth.InvalidToken):
                await facade.verify(tokens["access_token"])
            status, body = await token_request(
                http, facade, {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}, client
            )
            assert (status, body["error"]) == (400, "invalid_grant")
            nursery.cancel_scope.cancel()


async def test_the_upstream_token_handlers_see_is_refreshed_when_it_expires(upstream_issuer: str) -> None:
    clock, advance = settable_clock(1_000_000.0)
    offline = oidc(
        upstream_issuer,
        client_id="facade",
        client_secret="facade-secret",
        scopes=("openid", "email", "offline_access"),
        authorize_params={"prompt": "consent"},  # oidc-provider grants offline_access only with it
    )
    verifier = "u" * 64
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            facade = await serve_with_facade(nursery, offline, expose_upstream_token=True, clock=clock)
            client, tokens = await signed_in(http, facade, verifier)
            before = (await facade.verify(tokens["access_token"])).claims["upstream_access_token"]
            assert (await facade.verify(tokens["access_token"])).claims["upstream_access_token"] == before
            advance(590)  # the provider's token (600 s) is about to expire; the facade's (900 s) is not
            after = (await facade.verify(tokens["access_token"])).claims["upstream_access_token"]
            assert after != before
            response = await http.request(
                "GET", upstream_issuer + "/me", headers=[("authorization", f"Bearer {after}")]
            )  # the provider accepts the refreshed token
            async with response:
                assert response.status == 200, await response.read()
            nursery.cancel_scope.cancel()


ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]


async def official_client(
    python: str, http: HttpClient, facade: AuthorizationFacade, mode: str, *extra: str
) -> dict[str, Any]:
    """Run the official SDK's OAuth client against the facade, as its browser; its one-line report."""
    script = ROOT / "tests" / "interop" / "official_oauth_facade_client.py"
    process = await trio.lowlevel.open_process(
        [python, str(script), "--url", facade.resource, "--mode", mode, *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    lines = LineReader(process.stdout)
    try:
        first = json.loads(await lines.next())
        assert "authorize" in first, first
        redirect_uri = parse_qs(urlsplit(first["authorize"]).query)["redirect_uri"][0]
        landed = await UserAgent(http, login="carol").authorize(http, first["authorize"], redirect_uri)
        await process.stdin.send_all(landed.encode() + b"\n")
        return json.loads(await lines.next())  # type: ignore[no-any-return]
    finally:
        process.kill()
        await process.wait()


@pytest.mark.parametrize(("mode", "protocol"), ERAS)
async def test_the_official_sdk_client_registers_and_authorizes_at_the_facade(
    upstream_issuer: str, mcp_python: str, mode: str, protocol: str
) -> None:
    """The official SDK's OAuth client: discovery, dynamic registration, the user's consent and sign-in (driven
    here, as the browser), then a tool call in the era ``mode`` picks."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            facade = await serve_with_facade(nursery, upstream(upstream_issuer))
            out = await official_client(mcp_python, http, facade, mode)
            assert out.get("tools") == ["whoami"], out
            assert out["texts"] == ["carol carol@example.test mcp:read mcp:write"] and not out["is_error"], out
            assert out["protocol"] == protocol
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(("mode", "protocol"), ERAS)
async def test_the_official_sdk_client_named_by_its_metadata_document(
    upstream_issuer: str, mcp_python: str, mode: str, protocol: str, self_signed_cert: tuple[str, str]
) -> None:
    """The official SDK's client identified by an https Client ID Metadata Document, which the facade fetches
    (trusting the test's certificate) instead of a registration."""
    cert, key = self_signed_cert
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(cert, key)
    documents: dict[str, bytes] = {}

    async def document(request: Any, response: Any) -> None:
        await response.send(200, [("content-type", "application/json")], documents["client"])

    options = HttpTransportOptions(routes={"/client.json": document})
    with trio.fail_after(60):
        async with (
            trio.open_nursery() as nursery,
            HttpClient() as http,
            HttpClient(ssl_context=ssl.create_default_context(cafile=cert)) as trusting,
        ):
            port = await nursery.start(
                lambda task_status: trio_mcp.Server("documents").serve_http(
                    port=0, options=options, ssl_context=serving, task_status=task_status
                )
            )
            client_id = f"https://127.0.0.1:{port}/client.json"
            documents["client"] = json.dumps(
                {"client_id": client_id, "client_name": "official sdk by document", "redirect_uris": [SDK_REDIRECT]}
            ).encode()
            facade = await serve_with_facade(nursery, upstream(upstream_issuer), http=trusting)
            out = await official_client(mcp_python, http, facade, mode, "--client-metadata-url", client_id)
            assert out.get("texts") == ["carol carol@example.test mcp:read mcp:write"], out
            assert out["protocol"] == protocol
            registered = await facade.store.get("client:" + client_id)
            assert registered is not None and registered["client_name"] == "official sdk by document"
            nursery.cancel_scope.cancel()


class LineReader:
    """Lines from a process's stdout."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def next(self) -> str:
        while b"\n" not in self.buffer:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise AssertionError(f"the process ended without a line: {self.buffer!r}")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_conformance_suite_authorization_mode(upstream_issuer: str, tmp_path: Path) -> None:
    """Every scenario of the conformance suite's checks of an authorization server (its metadata, then the
    authorization code grant, which reads that metadata); the user's consent and sign-in driven here."""
    paths = json.loads(PATHS.read_text())
    port = free_port()
    callback = f"http://127.0.0.1:{port}/callback"
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            facade = await serve_with_facade(nursery, upstream(upstream_issuer))
            client = await register(http, facade, redirect_uris=[callback], client_name="conformance suite")
            command = [paths["node"], paths["conformance_0_2"], "authorization", "--url", facade.issuer]
            command += ["--client-id", client["client_id"], "--resource", facade.resource]
            command += ["--port", str(port), "--output-dir", str(tmp_path), "--verbose"]
            process = await trio.lowlevel.open_process(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            assert process.stdout is not None
            lines = LineReader(process.stdout)
            output: list[str] = []
            landed = None
            try:
                while not output or not output[-1].startswith("Total:"):
                    output.append(await lines.next())
                    if output[-1].startswith(facade.issuer + "/authorize?"):
                        landed = await UserAgent(http).authorize(http, output[-1], callback)
                    if landed is not None and any(line.startswith("Callback server started") for line in output):
                        response = await http.request("GET", landed)  # to the suite's callback server
                        async with response:
                            await response.read()
                        landed = None
                await process.wait()
            finally:
                process.kill()
            assert process.returncode == 0 and output[-1] == "Total: 3 passed, 0 failed", "\n".join(output)
            nursery.cancel_scope.cancel()
