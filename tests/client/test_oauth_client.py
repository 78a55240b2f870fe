"""The OAuth client (trio_mcp.client._oauth): PKCE, challenge parsing, discovery order, scope selection, and
whole flows against a small raw HTTP mock on 127.0.0.1 that is both the MCP server and its authorization
server (and checks PKCE, resource, iss and the Bearer token itself)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from functools import partial
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import attrs
import pytest
import trio

import trio_mcp
from trio_mcp import McpError
from trio_mcp.client._oauth import (
    AuthorizationServer,
    OAuthClientProvider,
    OAuthError,
    authorization_server_metadata_urls,
    code_challenge,
    new_code_verifier,
    parse_www_authenticate,
    protected_resource_metadata_urls,
    resource_matches,
    select_scopes,
)

from transport_helpers import initialize_result  # isort: skip

# -- pure functions -------------------------------------------------------------------------------------------


def test_pkce_s256() -> None:
    verifier = new_code_verifier()
    assert 43 <= len(verifier) <= 128 and re.fullmatch(r"[A-Za-z0-9\-._~]+", verifier)
    challenge = code_challenge(verifier)
    assert len(challenge) == 43 and "=" not in challenge and re.fullmatch(r"[A-Za-z0-9\-_]+", challenge)
    digest = base64.urlsafe_b64decode(challenge + "=")
    assert digest == hashlib.sha256(verifier.encode()).digest()
    assert new_code_verifier() != verifier


def test_parse_www_authenticate() -> None:
    header = 'Bearer error="insufficient_scope", scope="a b", resource_metadata="http://x/.well-known/p", realm=r1'
    assert parse_www_authenticate(header) == {
        "scheme": "bearer",
        "error": "insufficient_scope",
        "scope": "a b",
        "resource_metadata": "http://x/.well-known/p",
        "realm": "r1",
    }
    assert parse_www_authenticate(None) == {}
    assert parse_www_authenticate('Basic realm="x"') == {}


def test_discovery_urls_in_spec_order() -> None:
    assert protected_resource_metadata_urls("http://h:1/mcp") == [
        "http://h:1/.well-known/oauth-protected-resource/mcp",
        "http://h:1/.well-known/oauth-protected-resource",
    ]
    assert protected_resource_metadata_urls("http://h:1/mcp", "/custom.json")[0] == "http://h:1/custom.json"
    assert authorization_server_metadata_urls("http://a:2/tenant1") == [
        "http://a:2/.well-known/oauth-authorization-server/tenant1",
        "http://a:2/.well-known/openid-configuration/tenant1",
        "http://a:2/tenant1/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls("http://a:2") == [
        "http://a:2/.well-known/oauth-authorization-server",
        "http://a:2/.well-known/openid-configuration",
    ]


def test_resource_matching() -> None:
    assert resource_matches("http://h:1/mcp", "http://h:1/mcp")
    assert resource_matches("http://h:1/mcp", "http://h:1")
    assert resource_matches("http://H:1/mcp/", "http://h:1/mcp")
    assert not resource_matches("http://h:1/mcp", "https://evil.example.com/mcp")
    assert not resource_matches("http://h:1/mcp", "http://h:1/mcpx")
    assert not resource_matches("http://h:1/mcp", "http://h:2/mcp")


def test_scope_selection() -> None:
    assert select_scopes("a b", ["c"], None, want_refresh=True) == ["a", "b"]
    assert select_scopes(None, ["c", "d"], None, want_refresh=True) == ["c", "d"]
    assert select_scopes(None, None, ["offline_access"], want_refresh=True) == []
    assert select_scopes(None, ["c"], ["c", "offline_access"], want_refresh=True) == ["c", "offline_access"]
    assert select_scopes(None, ["c"], ["c", "offline_access"], want_refresh=False) == ["c"]


def test_iss_is_compared_without_normalisation() -> None:
    server = AuthorizationServer("http://a:1", "http://a:1/authorize", "http://a:1/token", iss_parameter_supported=True)
    OAuthClientProvider.check_authorization_response({"state": "s", "code": "c", "iss": "http://a:1"}, "s", server)
    for answer in (
        {"state": "s", "code": "c", "iss": "http://a:1/"},
        {"state": "s", "code": "c"},
        {"state": "t", "code": "c", "iss": "http://a:1"},
    ):
        with pytest.raises(OAuthError):
            OAuthClientProvider.check_authorization_response(answer, "s", server)


# -- a raw mock: MCP endpoint + protected resource metadata + authorization server -------------------------------


@attrs.define
class Mock:
    prm_path: str | None = "/.well-known/oauth-protected-resource/mcp"
    prm_resource: str | None = None  # default: the MCP endpoint
    prm_in_challenge: bool = True
    prm_scopes: list[str] | None = None
    challenge_scope: str | None = None
    as_path: str = ""  # the issuer's path
    metadata_issuer: str | None = None  # default: the real issuer
    auth_methods: list[str] = attrs.Factory(lambda: ["client_secret_basic"])
    iss_in_redirect: str | None = "correct"
    step_up_scope: str | None = None  # tools/call needs this scope too (403 insufficient_scope)
    port: int = 0
    requests: list[tuple[str, str]] = attrs.Factory(list)
    authorize_queries: list[dict[str, str]] = attrs.Factory(list)
    token_forms: list[dict[str, str]] = attrs.Factory(list)
    token_auth: list[str | None] = attrs.Factory(list)
    challenge: str | None = None
    tokens: dict[str, list[str]] = attrs.Factory(dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def issuer(self) -> str:
        return self.base + self.as_path

    async def serve(self, nursery: trio.Nursery) -> str:
        listeners = await nursery.start(partial(trio.serve_tcp, self.handle, 0, host="127.0.0.1"))
        self.port = listeners[0].socket.getsockname()[1]
        return f"{self.base}/mcp"

    async def handle(self, stream: trio.SocketStream) -> None:
        async with stream:
            with trio.move_on_after(10):
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = await stream.receive_some(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
                length = int(headers.get("content-length", "0"))
                while len(body) < length:
                    body += await stream.receive_some(65536)
                status, extra, payload = self.route(method, target, headers, body)
                raw = json.dumps(payload).encode() if payload is not None else b""
                head_lines = [f"HTTP/1.1 {status} X", "connection: close", f"content-length: {len(raw)}"]
                if payload is not None:
                    head_lines.append("content-type: application/json")
                head_lines += [f"{k}: {v}" for k, v in extra.items()]
                await stream.send_all(("\r\n".join(head_lines) + "\r\n\r\n").encode() + raw)

    def route(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], Any]:
        path = urlsplit(target).path
        self.requests.append((method, path))
        if path == "/mcp":
            return self.mcp(method, headers, body)
        if self.prm_path is not None and path == self.prm_path and method == "GET":
            prm: dict[str, Any] = {
                "resource": self.prm_resource or f"{self.base}/mcp",
                "authorization_servers": [self.issuer],
            }
            if self.prm_scopes is not None:
                prm["scopes_supported"] = self.prm_scopes
            return 200, {}, prm
        if path == f"/.well-known/oauth-authorization-server{self.as_path}" and method == "GET":
            return (
                200,
                {},
                {
                    "issuer": self.metadata_issuer or self.issuer,
                    "authorization_endpoint": f"{self.base}/authorize",
                    "token_endpoint": f"{self.base}/token",
                    "registration_endpoint": f"{self.base}/register",
                    "token_endpoint_auth_methods_supported": self.auth_methods,
                    "authorization_response_iss_parameter_supported": self.iss_in_redirect is not None,
                    "code_challenge_methods_supported": ["S256"],
                },
            )
        if path == "/register" and method == "POST":
            return 201, {}, {"client_id": "cid", "client_secret": "sec"}
        if path == "/authorize":
            query = {k: v[0] for k, v in parse_qs(urlsplit(target).query).items()}
            self.authorize_queries.append(query)
            answer = {"code": "the-code", "state": query.get("state", "")}
            if self.iss_in_redirect == "correct":
                answer["iss"] = self.issuer
            elif self.iss_in_redirect == "wrong":
                answer["iss"] = "https://evil.example.com"
            return 302, {"location": f"{query['redirect_uri']}?{urlencode(answer)}"}, None
        if path == "/token" and method == "POST":
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            self.token_forms.append(form)
            self.token_auth.append(headers.get("authorization"))
            challenge = self.authorize_queries[-1]["code_challenge"] if self.authorize_queries else None
            if challenge != code_challenge(form.get("code_verifier", "")):
                return 400, {}, {"error": "invalid_grant"}
            token = f"tok{len(self.token_forms)}"
            self.tokens[token] = (self.authorize_queries[-1].get("scope") or "").split()
            return 200, {}, {"access_token": token, "token_type": "Bearer", "expires_in": 3600}
        return 404, {}, {"error": "not_found"}

    def mcp(self, method: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], Any]:
        if method != "POST":
            return 405, {}, None
        metadata = f"{self.base}{self.prm_path}" if self.prm_path and self.prm_in_challenge else None
        params = [f'resource_metadata="{metadata}"'] if metadata else []
        if self.challenge_scope:
            params.append(f'scope="{self.challenge_scope}"')
        auth = headers.get("authorization", "")
        scopes = self.tokens.get(auth[7:]) if auth.startswith("Bearer ") else None
        if scopes is None:
            return 401, {"www-authenticate": "Bearer " + ", ".join(params)}, {"error": "invalid_token"}
        message = json.loads(body)
        if message.get("method") == "tools/call" and self.step_up_scope and self.step_up_scope not in scopes:
            challenge = f'Bearer error="insufficient_scope", scope="{self.step_up_scope}"'
            if metadata:
                challenge += f', resource_metadata="{metadata}"'
            return 403, {"www-authenticate": challenge}, {"error": "insufficient_scope"}
        if "id" not in message:
            return 202, {}, None
        results: dict[str, Any] = {
            "initialize": initialize_result(capabilities={"tools": {}}, server="mock"),
            "tools/list": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]},
            "tools/call": {"content": [{"type": "text", "text": "ok"}]},
        }
        return 200, {}, {"jsonrpc": "2.0", "id": message["id"], "result": results.get(message["method"], {})}


async def run_client(url: str, provider: OAuthClientProvider, *, call: bool = False) -> None:
    with trio.fail_after(15):
        async with trio_mcp.open_http_client(
            url, protocol_version="2025-11-25", auth=provider, request_timeout=5
        ) as client:
            await client.list_tools()
            if call:
                await client.call_tool("t", {})


async def test_full_flow_discovery_pkce_resource_and_basic_auth(nursery: trio.Nursery) -> None:
    mock = Mock(as_path="/tenant1", challenge_scope="mcp:basic", prm_scopes=["mcp:other"])
    url = await mock.serve(nursery)
    provider = OAuthClientProvider()
    await run_client(url, provider)
    gets = [path for method, path in mock.requests if method == "GET"]
    # PRM at the path-based URL from the challenge; AS metadata at the path-inserted RFC 8414 URL, never the root.
    assert gets[:2] == ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server/tenant1"]
    assert "/.well-known/oauth-authorization-server" not in gets
    query = mock.authorize_queries[0]
    assert query["code_challenge_method"] == "S256" and query["client_id"] == "cid"
    assert query["resource"] == url and query["scope"] == "mcp:basic"
    form = mock.token_forms[0]
    assert form["resource"] == url and form["grant_type"] == "authorization_code" and "client_secret" not in form
    assert mock.token_auth[0] == "Basic " + base64.b64encode(b"cid:sec").decode()
    assert provider.last_error is None


async def test_scopes_from_prm_and_omitted(nursery: trio.Nursery) -> None:
    mock = Mock(prm_scopes=["a", "b"], auth_methods=["client_secret_post"])
    url = await mock.serve(nursery)
    await run_client(url, OAuthClientProvider())
    assert mock.authorize_queries[0]["scope"] == "a b"
    assert mock.token_forms[0]["client_secret"] == "sec" and mock.token_auth[0] is None

    bare = Mock(prm_path="/.well-known/oauth-protected-resource", prm_in_challenge=False, auth_methods=["none"])
    bare_url = await bare.serve(nursery)
    await run_client(bare_url, OAuthClientProvider())
    assert "scope" not in bare.authorize_queries[0]
    # no resource_metadata in the challenge: the path-based URL first (404), then the root
    gets = [path for method, path in bare.requests if method == "GET"]
    assert gets[:2] == ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]


async def test_step_up_on_insufficient_scope(nursery: trio.Nursery) -> None:
    mock = Mock(challenge_scope="mcp:basic", step_up_scope="mcp:write")
    url = await mock.serve(nursery)
    await run_client(url, OAuthClientProvider(), call=True)
    assert [q.get("scope") for q in mock.authorize_queries] == ["mcp:basic", "mcp:basic mcp:write"]


@pytest.mark.parametrize(
    ("options", "stops_before"),
    [
        ({"prm_resource": "https://evil.example.com/mcp"}, "/authorize"),
        ({"iss_in_redirect": "wrong"}, "/token"),
        ({"metadata_issuer": "https://attacker.example.com"}, "/register"),
    ],
)
async def test_refusals(nursery: trio.Nursery, options: dict[str, Any], stops_before: str) -> None:
    mock = Mock(**options)
    url = await mock.serve(nursery)
    provider = OAuthClientProvider()
    with pytest.raises(McpError):  # the 401 stands: the request fails
        await run_client(url, provider)
    assert isinstance(provider.last_error, OAuthError)
    assert stops_before not in [path for _, path in mock.requests]


@pytest.mark.parametrize(
    "endpoint", ["javascript:alert(1)", "file:///etc/passwd", "http://169.254.169.254/authorize", "ftp://x/authorize"]
)
def test_unsafe_authorization_endpoints_are_refused(endpoint: str) -> None:
    from trio_mcp.client._oauth import OAuthClientProvider, OAuthError

    document = {
        "issuer": "https://as.example",
        "authorization_endpoint": endpoint,
        "token_endpoint": "https://as.example/t",
    }
    with pytest.raises(OAuthError, match="refusing the endpoint"):
        OAuthClientProvider._server_from(document, "https://as.example")
