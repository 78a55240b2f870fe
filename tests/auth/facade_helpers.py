"""What the authorization facade's tests share: a user agent that signs in and consents over HTTP, a GitHub-shaped
upstream (a small fixture server, because the real one cannot be reached from the tests), and a protected MCP server with the facade beside it on a listener bound before it starts (so its URL, the
tokens' audience, is known to the facade)."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Mapping
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import trio

import trio_mcp
from trio_mcp.auth.facade import AuthorizationFacade, Upstream, oidc
from trio_mcp.client._oauth import code_challenge
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports.http import HttpTransportOptions, RouteHandler
from trio_mcp.transports.streamable_http import serve_mounts

#: The MCP clients' redirect URI: never reached, the user agent stops at it.
REDIRECT = "http://127.0.0.1:9/callback"

_FORM = re.compile(r"<form[^>]*action=\"([^\"]*)\"[^>]*>(.*?)</form>", re.S | re.I)
_INPUT = re.compile(r"<(?:input|button)\b([^>]*)>", re.I)
_ATTR = re.compile(r"(\w+)=\"([^\"]*)\"")


class UserAgent:
    """A browser without a screen: follows redirects, keeps cookies, fills the upstream's login form (any
    login name, any password), approves both consent pages, and stops at the client's redirect URI."""

    def __init__(self, http: HttpClient, *, login: str = "alice", decision: str = "allow") -> None:
        self.http = http
        self.login = login
        self.decision = decision
        self.cookies: dict[str, dict[str, str]] = {}
        #: Every page the user saw, in order (URL, HTML).
        self.pages: list[tuple[str, str]] = []

    async def authorize(self, http: HttpClient, url: str, redirect_uri: str) -> str:
        """``OAuthClientProvider(authorization_handler=...)``: the URL the user is finally sent to."""
        method, body = "GET", b""
        for _ in range(20):
            status, headers, page = await self._request(method, url, body)
            location = headers.get("location")
            if 300 <= status < 400 and location:
                url, method, body = urljoin(url, location), "GET", b""
                if url.startswith(redirect_uri):
                    return url
                continue
            if status != 200:
                raise AssertionError(f"{url} answered HTTP {status}: {page[:300]}")
            self.pages.append((url, page))
            action, fields = self._fill(page)
            url, method, body = urljoin(url, action), "POST", urlencode(fields).encode()
        raise AssertionError("too many steps")

    def _fill(self, page: str) -> tuple[str, dict[str, str]]:
        found = _FORM.search(page)
        assert found is not None, page[:500]
        fields: dict[str, str] = {}
        for tag in _INPUT.finditer(found.group(2)):
            attributes = {name.lower(): unescape(value) for name, value in _ATTR.findall(tag.group(1))}
            name = attributes.get("name")
            if name == "decision":
                fields[name] = self.decision
            elif name == "login":
                fields[name] = self.login
            elif name == "password":
                fields[name] = "any password"
            elif name is not None:
                fields.setdefault(name, attributes.get("value", ""))
        return unescape(found.group(1)), fields

    async def _request(self, method: str, url: str, body: bytes) -> tuple[int, Any, str]:
        origin = urlsplit(url).netloc
        headers = [("accept", "text/html")]
        jar = self.cookies.setdefault(origin, {})
        if jar:
            headers.append(("cookie", "; ".join(f"{name}={value}" for name, value in jar.items())))
        if method == "POST":
            headers += [("content-type", "application/x-www-form-urlencoded"), ("origin", f"http://{origin}")]
        response = await self.http.request(method, url, headers=headers, body=body or None)
        async with response:
            raw = await response.read(1 << 20)
        for cookie in response.headers.get_all("set-cookie"):
            name, _, rest = cookie.partition("=")
            jar[name.strip()] = rest.split(";", 1)[0]
        return response.status, response.headers, raw.decode("utf-8", "replace")


def upstream(issuer: str) -> Upstream:
    """The facade's client at the upstream oidc-provider (tests/auth_server/oidc_upstream.mjs)."""
    return oidc(issuer, client_id="facade", client_secret="facade-secret", name="Test OIDC")


def protected_server() -> trio_mcp.Server:
    server = trio_mcp.Server("protected")

    @server.tool(scopes=["mcp:read"])
    def whoami(ctx: trio_mcp.Context) -> str:
        """Who signed in upstream, through which client, with which scopes."""
        principal = ctx.principal
        return f"{principal.subject} {principal.claims['upstream'].get('email', '-')} {' '.join(sorted(ctx.scopes))}"

    return server


async def serve_with_facade(
    nursery: trio.Nursery,
    upstream: Upstream,
    *,
    routes: Mapping[str, RouteHandler] | None = None,
    **facade_options: Any,
) -> AuthorizationFacade:
    """A protected server with its facade, serving in ``nursery``; the facade's ``resource`` is its URL."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    facade = AuthorizationFacade(
        upstream, resource=f"http://127.0.0.1:{port}/mcp", scopes=["mcp:read", "mcp:write"], **facade_options
    )
    server = protected_server()
    options = HttpTransportOptions(auth=facade.resource_server(), routes=routes or {})

    async def serve(task_status: trio.TaskStatus[int]) -> None:
        async with server.running():
            await serve_mounts({"": server.http_mount(options)}, listeners=listeners, task_status=task_status)

    await nursery.start(serve)
    return facade


def settable_clock(start: float) -> tuple[Callable[[], float], Callable[[float], None]]:
    """A clock for the facade, and a function moving it forward."""
    now = [start]

    def advance(seconds: float) -> None:
        now[0] += seconds

    return (lambda: now[0]), advance


class GitHubShaped:
    """GitHub's OAuth app endpoints, as they behave: authorize (the user already approved the app, so it
    redirects at once), a token endpoint answering JSON to ``Accept: application/json``, and ``/api/v3/user``."""

    def __init__(self) -> None:
        self.codes: dict[str, str] = {}
        self.tokens: dict[str, dict[str, Any]] = {}
        self.token_requests: list[dict[str, list[str]]] = []
        self.url = ""

    async def authorize(self, request: Any, response: Any) -> None:
        query = {name: values[0] for name, values in request.query_params.items()}
        assert query["client_id"] == "gh-app" and "resource" not in query
        code = secrets.token_hex(10)
        self.codes[code] = query["code_challenge"]
        target = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"
        await response.send(302, [("location", target)])

    async def token(self, request: Any, response: Any) -> None:
        form = parse_qs((await request.read_body()).decode())
        self.token_requests.append(form)
        challenge = self.codes.pop(form["code"][0], None)
        if form.get("client_secret") != ["gh-secret"] or challenge != code_challenge(form["code_verifier"][0]):
            await response.send(200, [("content-type", "application/json")], b'{"error": "bad_verification_code"}')
            return
        token = "gho_" + secrets.token_hex(16)
        self.tokens[token] = {"id": 583231, "login": "octocat", "name": "The Octocat"}
        body = {"access_token": token, "token_type": "bearer", "scope": "read:user"}
        await response.send(200, [("content-type", "application/json")], json.dumps(body).encode())

    async def user(self, request: Any, response: Any) -> None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        user = self.tokens.get(token) if scheme.lower() == "bearer" else None
        if user is None:
            await response.send(401, [("content-type", "application/json")], b'{"message": "Bad credentials"}')
            return
        await response.send(200, [("content-type", "application/json")], json.dumps(user).encode())

    async def start(self, nursery: trio.Nursery) -> None:
        routes = {"/login/oauth/authorize": self.authorize, "/login/oauth/access_token": self.token}
        routes["/api/v3/user"] = self.user
        options = HttpTransportOptions(routes=routes)
        port = await nursery.start(
            lambda task_status: trio_mcp.Server("github").serve_http(port=0, options=options, task_status=task_status)
        )
        self.url = f"http://127.0.0.1:{port}"
