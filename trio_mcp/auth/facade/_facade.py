"""``AuthorizationFacade``: an OAuth authorization server for MCP clients in front of a provider that lets no
client register itself (Entra ID, Google, GitHub, Okta with registration off).

MCP clients register with the facade (RFC 7591, or a Client ID Metadata Document) and authorize there; the
facade asks the user's consent (naming the client and where it will send the user: the defence against a
confused deputy, since every client shares the facade's one registration upstream), sends the user to the
provider as its one pre-registered client, redeems the provider's code on its own callback, and issues its
own short-lived access tokens, bound to the MCP resource, and rotating refresh tokens. The provider's tokens
stay on the server; a handler reaches the user's identity (and, when allowed, the upstream access token)
through ``ctx.principal.claims``. The facade is also the ``TokenVerifier`` of the MCP endpoint.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit

import trio

from ...transports._client.h11client import HttpClient
from ...transports._h11server import ClientDisconnected, RequestBodyError
from ...transports.http.exchange import Request, Response
from .._metadata import origin_of
from .._resource_server import ResourceServerAuth
from .._tokens import InvalidToken, Principal, VerifierUnavailable
from ._clients import (
    AUTH_METHODS,
    ClientError,
    authenticate_client,
    client_for,
    presented_credentials,
    register_client,
)
from ._pages import HTML_HEADERS, consent_page, error_page
from ._providers import Upstream
from ._state import FacadeStore, MemoryFacadeStore, Record, StoreUnavailable
from ._upstream import UpstreamClient, UpstreamError

__all__ = ["AuthorizationFacade"]

logger = logging.getLogger("trio_mcp.auth.facade")

_JSON: Final = (("content-type", "application/json"), ("cache-control", "no-store"), ("pragma", "no-cache"))
_CORS: Final = (("access-control-allow-origin", "*"),)
_COOKIE: Final = "trio_mcp_consent_"


def _digest(token: str) -> str:
    """Tokens and codes are stored by their hash: a leaked store holds nothing to present."""
    return hashlib.sha256(token.encode()).hexdigest()


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()


def _with_params(uri: str, params: Mapping[str, str | None]) -> str:
    pairs = urlencode({name: value for name, value in params.items() if value is not None})
    return uri + ("&" if urlsplit(uri).query else "?") + pairs


class _Refused(Exception):
    """A token, revocation or registration request refused: an OAuth error answer."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.status = status


class AuthorizationFacade:
    """An authorization server for MCP clients in front of ``upstream``.

    Args:
        upstream: the provider and the facade's client there (``trio_mcp.auth.facade.entra_id(...)`` and
            the other presets, or ``Upstream(...)``).
        resource: the MCP endpoint's canonical URI (``https://mcp.example.com/mcp``): the audience of every
            token the facade issues. The facade's own endpoints are served at its origin, which is the issuer.
        scopes: the scopes MCP clients may ask for (the MCP server's, not the provider's); a client asking
            for none is granted them all.
        store: where the state lives (``MemoryFacadeStore()`` by default: one process; ``trio_mcp.scale.RedisFacadeStore`` for
            workers).
        access_token_lifetime / refresh_token_lifetime: seconds; refresh tokens rotate on every use.
        registration_lifetime: seconds a dynamically registered client stays registered.
        client_documents: accept Client ID Metadata Document URLs as client ids; ``allow_http_documents``
            also accepts ``http://`` ones on a loopback host (local development only).
        expose_upstream_token: put the provider's access token in ``principal.claims["upstream_access_token"]``
            for handlers that call the provider's API for the user.
        server_name: the name the consent page shows.
    """

    def __init__(
        self,
        upstream: Upstream,
        *,
        resource: str,
        scopes: Sequence[str] = (),
        store: FacadeStore | None = None,
        access_token_lifetime: float = 900.0,
        refresh_token_lifetime: float = 30 * 86400.0,
        registration_lifetime: float = 90 * 86400.0,
        code_lifetime: float = 60.0,
        authorization_lifetime: float = 600.0,
        client_documents: bool = True,
        allow_http_documents: bool = False,
        document_cache: float = 3600.0,
        expose_upstream_token: bool = False,
        server_name: str = "this MCP server",
        http: HttpClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        parts = urlsplit(resource)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
            raise ValueError("resource must be the absolute http(s) URI of the MCP endpoint, without a fragment")
        if not isinstance(upstream, Upstream):
            raise TypeError(f"upstream must be an Upstream (or a preset such as entra_id(...)), not {upstream!r}")
        for name, value in (
            ("access_token_lifetime", access_token_lifetime),
            ("refresh_token_lifetime", refresh_token_lifetime),
            ("registration_lifetime", registration_lifetime),
            ("code_lifetime", code_lifetime),
            ("authorization_lifetime", authorization_lifetime),
        ):
            if not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds")
        self.upstream = upstream
        self.resource = resource
        self.issuer = origin_of(resource)
        self.scopes = tuple(scopes)
        self.store: FacadeStore = store if store is not None else MemoryFacadeStore()
        self.access_token_lifetime = access_token_lifetime
        self.refresh_token_lifetime = refresh_token_lifetime
        self.registration_lifetime = registration_lifetime
        self.code_lifetime = code_lifetime
        self.authorization_lifetime = authorization_lifetime
        self.client_documents = client_documents
        self.allow_http_documents = allow_http_documents
        self.document_cache = document_cache
        self.expose_upstream_token = expose_upstream_token
        self.server_name = server_name
        self._own_http = http is None
        self._http = http if http is not None else HttpClient()
        self._upstream = UpstreamClient(upstream, self._http)
        self._clock = clock
        #: One refresh of a grant's upstream token at a time (in this process).
        self._refreshing: dict[str, trio.Lock] = {}
        self._routes = {
            "/.well-known/oauth-authorization-server": self._metadata,
            "/authorize": self._authorize,
            "/consent": self._consent,
            "/oauth/callback": self._callback,
            "/token": self._token,
            "/register": self._register,
            "/revoke": self._revoke,
        }

    # -- wiring ------------------------------------------------------------------------------------------

    @property
    def callback_url(self) -> str:
        """The redirect URI to register at the provider for the facade's client."""
        return self.issuer + "/oauth/callback"

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths the facade answers (beside the MCP endpoint, on the same origin)."""
        return tuple(self._routes)

    def resource_server(self, **options: Any) -> ResourceServerAuth:
        """The guard of the MCP endpoint (``serve_http(auth=...)``): it checks this facade's tokens, publishes it
        in the Protected Resource Metadata and serves its endpoints; ``options`` go to ``ResourceServerAuth``
        (``required_scopes``, ``resource_name``)."""
        return ResourceServerAuth(
            self,
            authorization_servers=[self.issuer],
            resource=self.resource,
            scopes_supported=self.scopes or None,
            authorization_server=self,
            **options,
        )

    async def handle(self, request: Request, response: Response) -> None:
        """Answer a request to one of ``paths`` (503 while the state cannot be used)."""
        try:
            await self._routes[request.path](request, response)
        except StoreUnavailable as exc:
            logger.error("answered %s %s with 503: %s", request.method, request.path, exc)
            if not response.started:
                await _oauth_error(response, "temporarily_unavailable", "try again shortly", 503)

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 authorization server metadata."""
        document: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.issuer + "/authorize",
            "token_endpoint": self.issuer + "/token",
            "registration_endpoint": self.issuer + "/register",
            "revocation_endpoint": self.issuer + "/revoke",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": self.client_documents,
        }
        if self.scopes:
            document["scopes_supported"] = list(self.scopes)
        return document

    async def aclose(self) -> None:
        """Close the connections to the provider (the server calls this when it stops serving)."""
        if self._own_http:
            await self._http.aclose()

    # -- the TokenVerifier of the MCP endpoint ----------------------------------------------------------

    async def verify(self, token: str) -> Principal:
        """The principal of an access token this facade issued (``InvalidToken`` otherwise;
        ``VerifierUnavailable`` while the state cannot be read)."""
        try:
            return await self._verify(token)
        except StoreUnavailable as exc:
            raise VerifierUnavailable(str(exc)) from exc

    async def _verify(self, token: str) -> Principal:
        record = await self.store.get("access:" + _digest(token))
        if record is None:
            raise InvalidToken("the token is unknown, revoked or expired")
        if record["exp"] <= self._clock():
            raise InvalidToken("the token has expired")
        grant = await self.store.get("grant:" + record["grant"])
        if grant is None:
            raise InvalidToken("the token's grant was revoked")
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": grant["sub"],
            "aud": self.resource,
            "client_id": record["client_id"],
            "scope": record["scope"],
            "exp": record["exp"],
            "upstream": grant["identity"],
        }
        if self.expose_upstream_token:
            claims["upstream_access_token"] = await self._upstream_access_token(record["grant"], grant)
        return Principal(
            grant["sub"],
            client_id=record["client_id"],
            issuer=self.issuer,
            scopes=record["scope"].split(),
            expires_at=float(record["exp"]),
            audience=(self.resource,),
            claims=claims,
        )

    async def _upstream_access_token(self, grant_id: str, grant: Record) -> str | None:
        """The provider's access token of a grant, refreshed first when it expires within a minute and the
        provider gave a refresh token (a failed refresh is logged, and the old token returned)."""
        upstream = grant["upstream"]
        expires_at, refresh_token = upstream.get("expires_at"), upstream.get("refresh_token")
        if expires_at is None or refresh_token is None or expires_at - 60 > self._clock():
            return upstream.get("access_token")  # type: ignore[no-any-return]
        async with self._refreshing.setdefault(grant_id, trio.Lock()):
            current = await self.store.get("grant:" + grant_id)
            if current is not None and current["upstream"].get("refresh_token") != refresh_token:
                return current["upstream"].get("access_token")  # type: ignore[no-any-return]  # refreshed meanwhile
            try:
                tokens = await self._upstream.refresh(refresh_token)
            except UpstreamError as exc:
                logger.warning("could not refresh %s's token for %s: %s", self.upstream.name, grant["sub"], exc)
                return upstream.get("access_token")  # type: ignore[no-any-return]
            finally:
                self._refreshing.pop(grant_id, None)
            grant["upstream"] = self._upstream_record({**upstream, **tokens})
            await self.store.put("grant:" + grant_id, grant, self.refresh_token_lifetime)
            return grant["upstream"]["access_token"]  # type: ignore[no-any-return]

    def _upstream_record(self, tokens: Mapping[str, Any]) -> dict[str, Any]:
        """What is kept of the provider's token response: the tokens, and when the access token expires."""
        record = {name: tokens.get(name) for name in ("access_token", "refresh_token", "scope")}
        lifetime = tokens.get("expires_in")
        if isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool):
            record["expires_at"] = self._clock() + lifetime
        else:
            record["expires_at"] = tokens.get("expires_at")
        return record

    # -- metadata and registration ----------------------------------------------------------------------

    async def _metadata(self, request: Request, response: Response) -> None:
        if request.method not in ("GET", "HEAD"):
            await response.send(405, (("allow", "GET"),))
            return
        body = json.dumps(self.metadata()).encode()
        headers = (("content-type", "application/json"), ("cache-control", "max-age=3600"), *_CORS)
        await response.send(200, headers, body if request.method == "GET" else b"")

    async def _register(self, request: Request, response: Response) -> None:
        if not await self._post_only(request, response):
            return
        try:
            document = json.loads(await request.read_body())
        except (RequestBodyError, ClientDisconnected, ValueError):
            document = None
        if not isinstance(document, dict):
            await _oauth_error(response, "invalid_client_metadata", "the body must be a JSON object")
            return
        try:
            answer = await register_client(self.store, document, self.registration_lifetime)
        except ClientError as exc:
            await _oauth_error(response, exc.error, str(exc), exc.status)
            return
        logger.info("registered client %s (%s)", answer["client_id"], answer.get("client_name", "no name"))
        await response.send(201, (*_JSON, *_CORS), json.dumps(answer).encode())

    async def _client(self, client_id: str) -> Record:
        return await client_for(
            self.store,
            self._http,
            client_id,
            documents=self.client_documents,
            allow_http=self.allow_http_documents,
            cache=self.document_cache,
        )

    # -- authorization: the client's request, consent, the provider, the callback -----------------------

    async def _authorize(self, request: Request, response: Response) -> None:
        if request.method != "GET":
            await response.send(405, (("allow", "GET"),))
            return
        query = {name: values[0] for name, values in request.query_params.items()}
        client_id = query.get("client_id", "")
        redirect_uri = query.get("redirect_uri")
        # Until the client and its redirect URI are known good, nothing is redirected anywhere.
        try:
            client = await self._client(client_id)
        except ClientError as exc:
            await _refuse_page(response, f"Unknown client: {exc}")
            return
        registered = client["redirect_uris"]
        if redirect_uri is None and len(registered) == 1:
            redirect_uri = registered[0]
        if redirect_uri is None or redirect_uri not in registered:
            logger.warning("refused an authorization of %s: redirect URI not registered", client_id)
            await _refuse_page(response, "The redirect URI is not one this client registered.")
            return
        state = query.get("state")
        error = self._authorization_error(query)
        if error is not None:
            await _redirect(
                response,
                _with_params(
                    redirect_uri, {"error": error[0], "error_description": error[1], "state": state, "iss": self.issuer}
                ),
            )
            return
        scopes = query.get("scope", "").split() or list(self.scopes)
        transaction, csrf = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        pending = {
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "scope": " ".join(scopes),
            "code_challenge": query["code_challenge"],
            "csrf": csrf,
        }
        await self.store.put("pending:" + transaction, pending, self.authorization_lifetime)
        page = consent_page(
            server_name=self.server_name,
            provider=self.upstream.name,
            client_name=client.get("client_name"),
            client_id=client_id,
            redirect_uri=redirect_uri,
            scopes=scopes,
            transaction=transaction,
            csrf=csrf,
            action="/consent",
        )
        # One cookie per authorization (named after it), so that two started in one browser do not clash.
        name = _COOKIE + _digest(transaction)[:16]
        cookie = f"{name}={csrf}; Path=/consent; HttpOnly; SameSite=Lax; Max-Age={int(self.authorization_lifetime)}"
        if urlsplit(self.issuer).scheme == "https":
            cookie += "; Secure"
        await response.send(200, (*HTML_HEADERS, ("set-cookie", cookie)), page)

    def _authorization_error(self, query: Mapping[str, str]) -> tuple[str, str] | None:
        """What is wrong with an authorization request whose client and redirect URI are good."""
        if query.get("response_type") != "code":
            return "unsupported_response_type", "response_type must be code"
        if not query.get("code_challenge") or query.get("code_challenge_method") != "S256":
            return "invalid_request", "PKCE is required: code_challenge with code_challenge_method S256"
        resource = query.get("resource")
        if resource is not None and resource.rstrip("/") != self.resource.rstrip("/"):
            return "invalid_target", f"this server issues tokens for {self.resource} only"
        unknown = set(query.get("scope", "").split()) - set(self.scopes) - {"offline_access"}  # refresh: always
        if unknown:
            return "invalid_scope", f"unknown scope {' '.join(sorted(unknown))}"
        return None

    async def _consent(self, request: Request, response: Response) -> None:
        if not await self._post_only(request, response):
            return
        form = await _form(request)
        pending = await self.store.take("pending:" + form.get("transaction", ""))
        cookie = _cookie(request.headers.get("cookie", ""), _COOKIE + _digest(form.get("transaction", ""))[:16])
        if pending is None:
            await _refuse_page(response, "This authorization has expired or was already answered; start again.")
            return
        if not (
            cookie
            and hmac.compare_digest(cookie, pending["csrf"])
            and hmac.compare_digest(form.get("csrf", ""), pending["csrf"])
        ):
            logger.warning("refused a consent for %s: it did not come from the consent page", pending["client_id"])
            await _refuse_page(response, "The answer did not come from the consent page shown to you.")
            return
        if form.get("decision") != "allow":
            target = {"error": "access_denied", "state": pending["state"], "iss": self.issuer}
            await _redirect(response, _with_params(pending["redirect_uri"], target))
            return
        upstream_state, verifier = secrets.token_urlsafe(24), secrets.token_urlsafe(48)
        await self.store.put(
            "upstream:" + upstream_state, {**pending, "verifier": verifier}, self.authorization_lifetime
        )
        try:
            url = await self._upstream.authorization_url(
                redirect_uri=self.callback_url,
                state=upstream_state,
                code_challenge=_s256(verifier),
                resource=self.resource,
            )
        except UpstreamError as exc:
            logger.error("cannot send users to %s: %s", self.upstream.name, exc)
            target = {"error": "temporarily_unavailable", "state": pending["state"], "iss": self.issuer}
            await _redirect(response, _with_params(pending["redirect_uri"], target))
            return
        await _redirect(response, url)

    async def _callback(self, request: Request, response: Response) -> None:
        if request.method != "GET":
            await response.send(405, (("allow", "GET"),))
            return
        query = {name: values[0] for name, values in request.query_params.items()}
        pending = await self.store.take("upstream:" + query.get("state", ""))
        if pending is None:
            await _refuse_page(response, "This sign-in has expired or was already used; start again.")
            return
        back = {"state": pending["state"], "iss": self.issuer}
        if "code" not in query:
            logger.warning("%s refused the sign-in: %s", self.upstream.name, query.get("error", "no code"))
            await _redirect(response, _with_params(pending["redirect_uri"], {"error": "access_denied", **back}))
            return
        try:
            tokens = await self._upstream.exchange(
                code=query["code"], redirect_uri=self.callback_url, code_verifier=pending["verifier"]
            )
            identity = await self._upstream.identity(tokens)
        except UpstreamError as exc:
            logger.error("the sign-in with %s failed: %s", self.upstream.name, exc)
            await _redirect(response, _with_params(pending["redirect_uri"], {"error": "server_error", **back}))
            return
        grant_id = secrets.token_urlsafe(18)
        upstream = self._upstream_record(tokens)
        grant = {"sub": identity["sub"], "client_id": pending["client_id"], "identity": identity, "upstream": upstream}
        await self.store.put("grant:" + grant_id, grant, self.refresh_token_lifetime)
        code = secrets.token_urlsafe(32)
        record = {name: pending[name] for name in ("client_id", "redirect_uri", "scope", "code_challenge")}
        await self.store.put("code:" + _digest(code), {**record, "grant": grant_id}, self.code_lifetime)
        logger.info("%s signed in with %s for client %s", identity["sub"], self.upstream.name, pending["client_id"])
        await _redirect(response, _with_params(pending["redirect_uri"], {"code": code, **back}))

    # -- tokens -----------------------------------------------------------------------------------------

    async def _token(self, request: Request, response: Response) -> None:
        if not await self._post_only(request, response):
            return
        form = await _form(request)
        try:
            client = await self._authenticated_client(request, form)
            grant_type = form.get("grant_type")
            if grant_type == "authorization_code":
                answer = await self._redeem_code(client, form)
            elif grant_type == "refresh_token":
                answer = await self._redeem_refresh_token(client, form)
            else:
                raise _Refused("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
        except (_Refused, ClientError) as exc:
            await _oauth_error(response, exc.error, str(exc), exc.status)
            return
        await response.send(200, (*_JSON, *_CORS), json.dumps(answer).encode())

    async def _authenticated_client(self, request: Request, form: Mapping[str, str]) -> Record:
        client_id, secret, method = presented_credentials(request.headers.get("authorization", ""), form)
        if not client_id:
            raise ClientError("invalid_client", "no client_id", 401)
        client = await self._client(client_id)
        authenticate_client(client, secret, method)
        return client

    async def _redeem_code(self, client: Record, form: Mapping[str, str]) -> dict[str, Any]:
        code = await self.store.take("code:" + _digest(form.get("code", "")))  # single use, even across workers
        if code is None:
            raise _Refused("invalid_grant", "the authorization code is unknown, expired or already used")
        if code["client_id"] != client["client_id"]:
            logger.warning("client %s presented a code issued to %s", client["client_id"], code["client_id"])
            raise _Refused("invalid_grant", "the authorization code was issued to another client")
        if form.get("redirect_uri", code["redirect_uri"]) != code["redirect_uri"]:
            raise _Refused("invalid_grant", "redirect_uri differs from the authorization request's")
        verifier = form.get("code_verifier", "")
        if not verifier or not hmac.compare_digest(_s256(verifier), code["code_challenge"]):
            raise _Refused("invalid_grant", "the code_verifier does not match the code_challenge")
        self._check_resource(form)
        return await self._issue(client["client_id"], code["grant"], code["scope"])

    async def _redeem_refresh_token(self, client: Record, form: Mapping[str, str]) -> dict[str, Any]:
        record = await self.store.take("refresh:" + _digest(form.get("refresh_token", "")))  # rotation: used once
        if record is None or record["client_id"] != client["client_id"]:
            raise _Refused("invalid_grant", "the refresh token is unknown, expired, revoked or already used")
        if await self.store.get("grant:" + record["grant"]) is None:
            raise _Refused("invalid_grant", "the grant was revoked")
        self._check_resource(form)
        scope = record["scope"]
        asked = form.get("scope")
        if asked is not None:
            if not set(asked.split()) <= set(scope.split()):
                raise _Refused("invalid_scope", "a refresh may narrow the scopes, not widen them")
            scope = asked
        return await self._issue(client["client_id"], record["grant"], scope)

    def _check_resource(self, form: Mapping[str, str]) -> None:
        resource = form.get("resource")
        if resource is not None and resource.rstrip("/") != self.resource.rstrip("/"):
            raise _Refused("invalid_target", f"this server issues tokens for {self.resource} only")

    async def _issue(self, client_id: str, grant: str, scope: str) -> dict[str, Any]:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        expires = self._clock() + self.access_token_lifetime
        common = {"client_id": client_id, "grant": grant, "scope": scope}
        await self.store.put("access:" + _digest(access), {**common, "exp": expires}, self.access_token_lifetime)
        await self.store.put("refresh:" + _digest(refresh), common, self.refresh_token_lifetime)
        return {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": int(self.access_token_lifetime),
            "refresh_token": refresh,
            "scope": scope,
        }

    async def _revoke(self, request: Request, response: Response) -> None:
        """RFC 7009: an access token ends alone; a refresh token ends its whole grant (and the access tokens
        issued from it). An unknown token is answered 200 too."""
        if not await self._post_only(request, response):
            return
        form = await _form(request)
        try:
            client = await self._authenticated_client(request, form)
        except ClientError as exc:
            await _oauth_error(response, exc.error, str(exc), exc.status)
            return
        digest = _digest(form.get("token", ""))
        for kind in ("refresh", "access") if form.get("token_type_hint") != "access_token" else ("access", "refresh"):
            record = await self.store.get(f"{kind}:{digest}")
            if record is not None and record["client_id"] == client["client_id"]:
                await self.store.delete(f"{kind}:{digest}")
                if kind == "refresh":
                    await self.store.delete("grant:" + record["grant"])
                logger.info("client %s revoked one of its %s tokens", client["client_id"], kind)
                break
        await response.send(200, (("cache-control", "no-store"), *_CORS))

    @staticmethod
    async def _post_only(request: Request, response: Response) -> bool:
        if request.method == "POST":
            return True
        await response.send(405, (("allow", "POST"),))
        return False


async def _form(request: Request) -> dict[str, str]:
    """A form body; a body that cannot be read counts as empty (the request is then refused for what it lacks)."""
    try:
        body = await request.read_body()
    except (RequestBodyError, ClientDisconnected):
        return {}
    try:
        return dict(parse_qsl(body.decode(), keep_blank_values=True))
    except UnicodeDecodeError:
        return {}


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


async def _oauth_error(response: Response, error: str, description: str, status: int = 400) -> None:
    headers: tuple[tuple[str, str], ...] = (*_JSON, *_CORS)
    if status == 401:
        headers = (*headers, ("www-authenticate", 'Basic realm="oauth"'))
    await response.send(status, headers, json.dumps({"error": error, "error_description": description}).encode())


async def _redirect(response: Response, location: str) -> None:
    await response.send(302, (("location", location), ("cache-control", "no-store")))


async def _refuse_page(response: Response, message: str) -> None:
    await response.send(400, HTML_HEADERS, error_page(message))
