"""The authorization facade with a GitHub-shaped upstream (not OpenID Connect: opaque tokens, the user from a
user API), a small fixture server here because the real one cannot be reached from the tests; and what the
facade refuses before any redirect or token."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import trio
from facade_helpers import REDIRECT, GitHubShaped, UserAgent, serve_with_facade

import trio_mcp
from trio_mcp.auth.facade import AuthorizationFacade, MemoryFacadeStore, Upstream, entra_id, github, google, oidc
from trio_mcp.client._oauth import OAuthClientProvider, code_challenge
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports.http import HttpTransportOptions


async def started(nursery: trio.Nursery, **options: Any) -> tuple[GitHubShaped, AuthorizationFacade]:
    upstream = GitHubShaped()
    await upstream.start(nursery)
    preset = github(client_id="gh-app", client_secret="gh-secret", base_url=upstream.url)
    return upstream, await serve_with_facade(nursery, preset, **options)


async def test_a_github_user_calls_the_tool_through_the_facade() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            upstream, facade = await started(nursery)
            agent = UserAgent(http)
            provider = OAuthClientProvider(redirect_uri=REDIRECT, authorization_handler=agent.authorize)
            async with trio_mcp.open_http_client(facade.resource, auth=provider) as client:
                result = await client.call_tool("whoami", {})
            assert result.content[0].text == "583231 - mcp:read mcp:write"  # GitHub's numeric id is the subject
            assert len(upstream.token_requests) == 1
            stored = await provider.token_store.get_token(facade.resource)
            assert stored is not None and not stored["access_token"].startswith("gho_")  # never passed through
            nursery.cancel_scope.cancel()


async def get(http: HttpClient, url: str) -> tuple[int, Any, bytes]:
    response = await http.request("GET", url)
    async with response:
        body = await response.read()
    return response.status, response.headers, body


async def test_discovery_points_clients_at_the_facade() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            _, facade = await started(nursery)
            status, _, body = await get(http, facade.issuer + "/.well-known/oauth-protected-resource/mcp")
            prm = json.loads(body)
            assert status == 200 and prm["authorization_servers"] == [facade.issuer]
            assert prm["resource"] == facade.resource
            status, _, body = await get(http, facade.issuer + "/.well-known/oauth-authorization-server")
            metadata = json.loads(body)
            assert metadata["issuer"] == facade.issuer and metadata["code_challenge_methods_supported"] == ["S256"]
            assert metadata["client_id_metadata_document_supported"] is True
            assert metadata["registration_endpoint"] == facade.issuer + "/register"
            nursery.cancel_scope.cancel()


async def register(http: HttpClient, facade: AuthorizationFacade, **metadata: Any) -> tuple[int, Any]:
    body = json.dumps({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", **metadata}).encode()
    response = await http.request(
        "POST", facade.issuer + "/register", headers=[("content-type", "application/json")], body=body
    )
    async with response:
        return response.status, json.loads(await response.read())


def authorize_url(facade: AuthorizationFacade, client_id: str, **changes: str) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": code_challenge("x" * 50),
        "code_challenge_method": "S256",
        "state": "st",
        **changes,
    }
    return f"{facade.issuer}/authorize?{urlencode({k: v for k, v in query.items() if v})}"


async def test_what_is_refused_before_any_redirect() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            _, facade = await started(nursery)
            _, client = await register(http, facade)
            for url in (
                authorize_url(facade, client["client_id"], redirect_uri="https://attacker.example/cb"),
                authorize_url(facade, "no-such-client"),
                authorize_url(facade, "https://unreachable.invalid/client.json"),  # not fetched: https only here
            ):
                status, headers, body = await get(http, url)
                assert status == 400 and headers.get("location") is None, url
                assert b"Authorization refused" in body
            for metadata, error in (
                ({"redirect_uris": ["http://attacker.example/cb"]}, "invalid_redirect_uri"),  # http off loopback
                ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri"),
                ({"token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"),
            ):
                status, answer = await register(http, facade, **metadata)
                assert (status, answer["error"]) == (400, error)
            nursery.cancel_scope.cancel()


async def test_a_bad_request_from_a_known_client_is_answered_at_its_redirect_uri() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            _, facade = await started(nursery)
            _, client = await register(http, facade)
            for changes, error in (
                ({"code_challenge": ""}, "invalid_request"),  # PKCE is required
                ({"code_challenge_method": "plain"}, "invalid_request"),
                ({"resource": "https://other.example/mcp"}, "invalid_target"),
                ({"scope": "admin"}, "invalid_scope"),
                ({"response_type": "token"}, "unsupported_response_type"),
            ):
                status, headers, _ = await get(http, authorize_url(facade, client["client_id"], **changes))
                assert status == 302
                answer = parse_qs(urlsplit(headers["location"]).query)
                assert headers["location"].startswith(REDIRECT) and answer["error"] == [error], changes
                assert answer["state"] == ["st"]
            nursery.cancel_scope.cancel()


async def test_consent_must_come_from_the_page_shown_to_the_user() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            upstream, facade = await started(nursery)
            _, client = await register(http, facade, client_name="<b>Evil</b>")
            status, headers, page = await get(http, authorize_url(facade, client["client_id"]))
            assert status == 200 and headers["x-frame-options"] == "DENY"
            assert b"&lt;b&gt;Evil&lt;/b&gt;" in page and b"127.0.0.1:9/callback" in page  # named, escaped
            transaction = page.split(b'name="transaction" value="')[1].split(b'"')[0].decode()
            csrf = page.split(b'name="csrf" value="')[1].split(b'"')[0].decode()
            # A cross-site form post carries the page's fields but not its cookie (SameSite=Lax).
            form = urlencode({"transaction": transaction, "csrf": csrf, "decision": "allow"}).encode()
            response = await http.request(
                "POST",
                facade.issuer + "/consent",
                headers=[("content-type", "application/x-www-form-urlencoded")],
                body=form,
            )
            async with response:
                await response.read()
            assert response.status == 400 and response.headers.get("location") is None
            assert upstream.codes == {}  # nobody was sent upstream
            nursery.cancel_scope.cancel()


async def test_a_user_who_denies_sends_the_client_access_denied() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            upstream, facade = await started(nursery)
            _, client = await register(http, facade)
            agent = UserAgent(http, decision="deny")
            redirected = await agent.authorize(http, authorize_url(facade, client["client_id"]), REDIRECT)
            assert parse_qs(urlsplit(redirected).query)["error"] == ["access_denied"]
            assert upstream.codes == {} and upstream.token_requests == []
            nursery.cancel_scope.cancel()


async def test_memory_store_records_expire_and_are_taken_once() -> None:
    now = [0.0]
    store = MemoryFacadeStore(clock=lambda: now[0])
    await store.put("code:a", {"v": 1}, 10)
    assert await store.take("code:a") == {"v": 1}
    assert await store.take("code:a") is None
    await store.put("code:b", {"v": 2}, 10)
    now[0] = 10.0
    assert await store.get("code:b") is None


def test_presets_are_data() -> None:
    entra = entra_id("contoso", client_id="app", client_secret="s")
    assert entra.discovery == "https://login.microsoftonline.com/contoso/v2.0" and entra.send_resource is False
    assert "offline_access" in entra.scopes
    assert google(client_id="g").authorize_params["access_type"] == "offline"
    assert google(client_id="g").issuer_aliases == ("accounts.google.com",)
    hub = github(client_id="gh")
    assert hub.identity_endpoint == "https://api.github.com/user" and hub.subject_field == "id"
    assert "hidden" not in repr(oidc("https://idp.example", client_id="c", client_secret="hidden"))
    with pytest.raises(ValueError, match="discovery"):
        Upstream(name="x", client_id="c")
    with pytest.raises(ValueError, match="resource"):
        AuthorizationFacade(hub, resource="not a url")
    with pytest.raises(ValueError, match="access_token_lifetime"):
        AuthorizationFacade(hub, resource="http://127.0.0.1:1/mcp", access_token_lifetime=0)


class EntraShaped:
    """Entra ID's multi-tenant v2 endpoints as they answer: discovery names an issuer template
    (``.../{tenantid}/v2.0``), the ID token names the user's tenant, and ``resource`` is refused."""

    def __init__(self) -> None:
        self.url = ""

    async def discovery(self, request: Any, response: Any) -> None:
        document = {
            "issuer": self.url + "/{tenantid}/v2.0",
            "authorization_endpoint": self.url + "/organizations/oauth2/v2.0/authorize",
            "token_endpoint": self.url + "/organizations/oauth2/v2.0/token",
        }
        await response.send(200, [("content-type", "application/json")], json.dumps(document).encode())

    async def authorize(self, request: Any, response: Any) -> None:
        query = {name: values[0] for name, values in request.query_params.items()}
        if "resource" in query:  # AADSTS901002
            await response.send(
                400, [("content-type", "text/plain")], b"the 'resource' request parameter is not supported"
            )
            return
        target = f"{query['redirect_uri']}?{urlencode({'code': 'entra-code', 'state': query['state']})}"
        await response.send(302, [("location", target)])

    async def token(self, request: Any, response: Any) -> None:
        tenant = "9188040d-6c67-4c5b-b112-36a304b66dad"
        claims = {"iss": f"{self.url}/{tenant}/v2.0", "tid": tenant, "aud": "entra-app", "sub": "AAAAentra"}
        claims |= {"exp": 4102444800, "preferred_username": "dana@contoso.example"}
        encoded = [
            base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=").decode()
            for part in ({"alg": "RS256"}, claims)
        ]
        body = {
            "access_token": "opaque",
            "token_type": "Bearer",
            "expires_in": 3600,
            "id_token": ".".join([*encoded, "sig"]),
        }
        await response.send(200, [("content-type", "application/json")], json.dumps(body).encode())

    async def start(self, nursery: trio.Nursery) -> None:
        routes = {
            "/organizations/v2.0/.well-known/openid-configuration": self.discovery,
            "/organizations/oauth2/v2.0/authorize": self.authorize,
            "/organizations/oauth2/v2.0/token": self.token,
        }
        options = HttpTransportOptions(routes=routes)
        port = await nursery.start(
            lambda task_status: trio_mcp.Server("entra").serve_http(port=0, options=options, task_status=task_status)
        )
        self.url = f"http://127.0.0.1:{port}"


async def test_an_entra_multi_tenant_sign_in() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            entra = EntraShaped()
            await entra.start(nursery)
            upstream = oidc(entra.url + "/organizations/v2.0", client_id="entra-app", client_secret="s", name="Entra")
            facade = await serve_with_facade(nursery, upstream)
            provider = OAuthClientProvider(redirect_uri=REDIRECT, authorization_handler=UserAgent(http).authorize)
            async with trio_mcp.open_http_client(facade.resource, auth=provider) as client:
                result = await client.call_tool("whoami", {})
            assert result.content[0].text.startswith("AAAAentra ")
            nursery.cancel_scope.cancel()


async def test_the_facade_beside_an_asgi_app() -> None:
    """The same facade under an ASGI server (Hypercorn), on a socket bound first so its URL is known."""
    import socket
    from functools import partial

    from hypercorn.config import Config
    from hypercorn.trio import serve

    from trio_mcp.asgi import McpAsgiApp

    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    port = listening.getsockname()[1]
    descriptor = listening.detach()  # Hypercorn serves it, and closes it
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            upstream = GitHubShaped()
            await upstream.start(nursery)
            facade = AuthorizationFacade(
                github(client_id="gh-app", client_secret="gh-secret", base_url=upstream.url),
                resource=f"http://127.0.0.1:{port}/mcp",
                scopes=["mcp:read"],
            )
            server = trio_mcp.Server("asgi")

            @server.tool(scopes=["mcp:read"])
            def whoami(ctx: trio_mcp.Context) -> str:
                """Who signed in."""
                return str(ctx.principal.claims["upstream"]["login"])

            config = Config()
            config.bind = [f"fd://{descriptor}"]
            config.accesslog = None
            app = McpAsgiApp(server, options=HttpTransportOptions(auth=facade.resource_server()))
            await nursery.start(partial(serve, app, config, shutdown_trigger=trio.sleep_forever))
            provider = OAuthClientProvider(redirect_uri=REDIRECT, authorization_handler=UserAgent(http).authorize)
            async with trio_mcp.open_http_client(facade.resource, auth=provider) as client:
                result = await client.call_tool("whoami", {})
            assert result.content[0].text == "octocat"
            nursery.cancel_scope.cancel()


async def test_a_full_store_answers_503_and_the_server_stays_up() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            _, facade = await started(nursery, store=MemoryFacadeStore(max_records=2))
            assert [(await register(http, facade))[0] for _ in range(2)] == [201, 201]
            status, answer = await register(http, facade)
            assert (status, answer["error"]) == (503, "temporarily_unavailable")
            status, _, _ = await get(http, facade.issuer + "/.well-known/oauth-authorization-server")
            assert status == 200
            nursery.cancel_scope.cancel()


async def test_offline_access_may_be_asked_for() -> None:
    """Hosts that always ask for ``offline_access`` are not refused: the facade issues refresh tokens anyway."""
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, HttpClient() as http:
            _, facade = await started(nursery)
            _, client = await register(http, facade)
            url = authorize_url(facade, client["client_id"], scope="mcp:read offline_access")
            status, _, page = await get(http, url)
            assert status == 200 and b"offline_access" in page  # the consent page lists it
            nursery.cancel_scope.cancel()
