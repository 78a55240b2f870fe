"""OAuth 2.1 for MCP over HTTP, client side: an ``HttpAuth`` provider for the Streamable HTTP streams.

``OAuthClientProvider`` supplies ``Authorization: Bearer ...`` on every request and, when the server answers
401 (or 403 ``insufficient_scope``), runs the MCP authorization flow and has the request sent once more:

1. Protected Resource Metadata (RFC 9728): the ``resource_metadata`` URL of the ``WWW-Authenticate``
   challenge, else ``/.well-known/oauth-protected-resource/<path>``, else the root. Its ``resource`` must
   name this server (same origin, a path prefix); it is then sent verbatim as the RFC 8707 ``resource``.
2. Authorization server metadata: RFC 8414 then OpenID Connect well-known URLs (path-inserted for an issuer
   with a path, then path-appended); the document's ``issuer`` must equal the issuer it was looked up for.
   Without PRM (2025-03-26 servers): the metadata at the MCP server's origin, else ``/authorize``,
   ``/token`` and ``/register`` there.
3. A client identity per authorization server: pre-registered credentials, a Client ID Metadata Document URL
   when the server supports them, else Dynamic Client Registration (RFC 7591).
4. The authorization-code grant with PKCE S256, ``state`` and ``resource``; the authorization response's
   ``iss`` (RFC 9207) is compared with the recorded issuer, by plain string equality. The user-agent step is
   ``authorization_handler`` (default: ``headless_authorization``, which GETs the URL and reads the
   redirect's ``Location`` without following it; a real application opens a browser instead).
5. The token request, authenticated by ``client_secret_basic``, ``client_secret_post`` or ``none`` as the
   server's ``token_endpoint_auth_methods_supported`` allows. ``grant="client_credentials"`` skips 4.

   ``private_key_jwt`` (RFC 7523 §2.2, ES256 by default) when the client has a private key.
6. DPoP (RFC 9449, the MCP DPoP extension): when the authorization server lists ES256 in
   ``dpop_signing_alg_values_supported``, the MCP server asks for DPoP (a ``DPoP`` challenge, or ES256 in its
   PRM) and the ``auth`` extra is installed, or always with ``dpop=True``,
   the token is bound to a key of the provider's; every request then carries ``Authorization: DPoP`` and a
   fresh proof, and a ``use_dpop_nonce`` answer (token endpoint or MCP server) is retried with the nonce.

Scopes: the challenge's ``scope``, else the PRM's ``scopes_supported``, else none; ``offline_access`` is added
only when the authorization server lists it. A 403 ``insufficient_scope`` re-authorizes with the union of the
scopes asked for so far and the challenged ones; at most ``max_attempts`` authorizations in a row may go
without a successful request in between.

Refresh: a token with a refresh token is refreshed ``refresh_margin`` seconds before it expires, and once on a
401, before authorizing afresh; concurrent requests share one refresh; a rotated refresh token replaces the old
one. Tokens live in a ``TokenStore`` (``trio_mcp.auth.MemoryTokenStore`` by default, ``FileTokenStore`` to
keep them across runs), keyed by the MCP server's URL; registrations by issuer.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Literal
from urllib.parse import parse_qs, quote, urlencode, urljoin, urlsplit

import attrs
import trio

from ..auth._errors import OAuthError
from ..auth._extra import AuthExtraMissing, load_jwt
from ..auth._http import FORM, TIMEOUTS, HttpFailure, get_json, post
from ..auth._metadata import (
    authorization_server_metadata_urls,
    origin_of,
    parse_www_authenticate,
    protected_resource_metadata_urls,
)
from ..auth._signing import CLIENT_ASSERTION_TYPE, DpopKey, client_assertion
from ..auth._store import MemoryTokenStore, TokenStore
from ..transports._client.h11client import HttpClient, HttpError

__all__ = [
    "AuthorizationServer",
    "ClientCredentials",
    "MemoryTokenStore",
    "OAuthClientProvider",
    "OAuthError",
    "OAuthToken",
    "ProtectedResource",
    "authorization_server_metadata_urls",
    "code_challenge",
    "exchange_id_token",
    "headless_authorization",
    "parse_www_authenticate",
    "protected_resource_metadata_urls",
    "resource_matches",
]

logger = logging.getLogger("trio_mcp.oauth")


# -- data ---------------------------------------------------------------------------------------------------


@attrs.frozen
class OAuthToken:
    """A token response (RFC 6749 §5.1); ``obtained_at`` is ``time.time()`` when it arrived."""

    access_token: str
    token_type: str = "Bearer"
    expires_in: float | None = None
    refresh_token: str | None = None
    scope: str | None = None
    obtained_at: float = attrs.field(factory=time.time)
    #: The issuer that granted it (to refresh it after a restart) and, for a DPoP-bound token, the PEM of the
    #: key it is bound to.
    issuer: str | None = None
    dpop_key: str | None = attrs.field(default=None, repr=False)

    def expired(self, now: float | None = None, *, margin: float = 30.0) -> bool:
        if self.expires_in is None:
            return False
        return (now if now is not None else time.time()) >= self.obtained_at + self.expires_in - margin

    def to_record(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> OAuthToken | None:
        try:
            return cls(**{field.name: record[field.name] for field in attrs.fields(cls) if field.name in record})
        except TypeError:
            return None


@attrs.frozen
class ClientCredentials:
    """A client identity at one authorization server (``issuer``; None: any)."""

    client_id: str
    client_secret: str | None = attrs.field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    issuer: str | None = None
    #: A PEM private key for ``private_key_jwt`` client authentication, and its algorithm.
    private_key_pem: str | None = attrs.field(default=None, repr=False)
    signing_algorithm: str = "ES256"

    def to_record(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ClientCredentials | None:
        try:
            return cls(**{field.name: record[field.name] for field in attrs.fields(cls) if field.name in record})
        except TypeError:
            return None


@attrs.frozen
class ProtectedResource:
    """The parts of Protected Resource Metadata (RFC 9728) the flow uses."""

    resource: str | None
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None = None
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None


@attrs.frozen
class AuthorizationServer:
    """An authorization server's endpoints (from RFC 8414 / OIDC metadata, or the 2025-03-26 defaults)."""

    issuer: str | None
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None = None
    token_endpoint_auth_methods_supported: tuple[str, ...] | None = None
    scopes_supported: tuple[str, ...] | None = None
    client_id_metadata_document_supported: bool = False
    iss_parameter_supported: bool = False
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None


AuthorizationHandler = Callable[[HttpClient, str, str], Awaitable[str]]
"""``(http, authorization_url, redirect_uri) -> the URL the user agent was redirected to`` (code, state, iss)."""

AssertionProvider = Callable[[HttpClient, "AuthorizationServer", "str | None"], Awaitable[str]]
"""``(http, authorization server, resource) -> a JWT`` for the jwt-bearer grant (RFC 7523): a workload identity
token, or an ID-JAG from ``exchange_id_token``."""

JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"


# -- pure helpers -------------------------------------------------------------------------------------------


def code_challenge(verifier: str) -> str:
    """The PKCE S256 challenge of ``verifier`` (RFC 7636 §4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def new_code_verifier() -> str:
    """43-128 characters of the unreserved set (here 64)."""
    return secrets.token_urlsafe(48)[:64]


def _check_endpoint(url: str) -> None:
    """Refuse endpoints a user agent must never be sent to: only https, or http to this machine, will do
    (a ``javascript:`` or ``file:`` authorization endpoint would otherwise reach a browser or a shell)."""
    parts = urlsplit(url)
    local = (parts.hostname or "") in ("localhost", "127.0.0.1", "::1")
    if parts.scheme != "https" and not (parts.scheme == "http" and local):
        raise OAuthError(f"refusing the endpoint {url!r}: only https (or http to localhost) is allowed")


def _default_port(scheme: str) -> int | None:
    return {"http": 80, "https": 443}.get(scheme)


def resource_matches(server_url: str, resource: str) -> bool:
    """Whether a PRM ``resource`` names the MCP server at ``server_url``: same origin, and its path is the
    server's path or a parent of it (segment-wise)."""
    try:
        a, b = urlsplit(server_url), urlsplit(resource)
        a_port = a.port or _default_port(a.scheme)
        b_port = b.port or _default_port(b.scheme)
    except ValueError:
        return False
    if (a.scheme.lower(), (a.hostname or "").lower(), a_port) != (b.scheme.lower(), (b.hostname or "").lower(), b_port):
        return False
    wanted = a.path.rstrip("/") + "/"
    prefix = b.path.rstrip("/") + "/"
    return wanted.startswith(prefix)


def select_scopes(
    challenged: str | None, prm_scopes: Sequence[str] | None, as_scopes: Sequence[str] | None, *, want_refresh: bool
) -> list[str]:
    """The scope selection strategy: the challenge's scopes, else the PRM's ``scopes_supported``, else none;
    ``offline_access`` added when the authorization server lists it (and a refresh token is wanted)."""
    if challenged:
        scopes = challenged.split()
    elif prm_scopes:
        scopes = list(prm_scopes)
    else:
        scopes = []
    if want_refresh and scopes and as_scopes and "offline_access" in as_scopes and "offline_access" not in scopes:
        scopes.append("offline_access")
    return scopes


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return None


# -- HTTP helpers -------------------------------------------------------------------------------------------


async def exchange_id_token(
    http: HttpClient,
    token_endpoint: str,
    *,
    id_token: str,
    audience: str,
    resource: str | None,
    client_id: str,
    client_secret: str | None = None,
) -> str:
    """RFC 8693 token exchange at an identity provider: an OpenID ID token for an ID-JAG (Identity Assertion
    JWT Authorization Grant, SEP-990) addressed to ``audience`` (the authorization server's issuer)."""
    form = {
        "grant_type": TOKEN_EXCHANGE,
        "subject_token": id_token,
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "audience": audience,
        "client_id": client_id,
    }
    if resource:
        form["resource"] = resource
    if client_secret is not None:
        form["client_secret"] = client_secret
    try:
        status, document, _ = await post(http, token_endpoint, urlencode(form).encode(), FORM)
    except HttpFailure as exc:
        raise OAuthError(str(exc)) from None
    if status != 200 or not isinstance(document, dict) or not isinstance(document.get("access_token"), str):
        raise OAuthError(f"the token exchange at {token_endpoint} failed (HTTP {status})")
    return str(document["access_token"])


async def headless_authorization(http: HttpClient, authorization_url: str, redirect_uri: str) -> str:
    """The user-agent step without a user: GET the authorization URL and return the ``Location`` of its
    redirect, which is not followed (for servers that authorize at once: tests, conformance mocks)."""
    try:
        response = await http.request("GET", authorization_url, timeouts=TIMEOUTS)
        async with response:
            location = response.headers.get("location")
            status = response.status
    except HttpError as exc:
        raise OAuthError(f"the authorization request failed: {exc}") from exc
    if not 300 <= status < 400 or not location:
        raise OAuthError(f"the authorization endpoint answered HTTP {status} without a redirect")
    return urljoin(authorization_url, location)


# -- the provider -------------------------------------------------------------------------------------------


@attrs.define
class _Pending:
    """What one authorization needs to remember between its steps."""

    server: AuthorizationServer
    client: ClientCredentials
    resource: str | None
    scopes: list[str]


class OAuthClientProvider:
    """OAuth 2.1 for an MCP client over HTTP: pass it as ``open_http_client(url, auth=provider)``.

    Args:
        redirect_uri: where the authorization server sends the user agent back (registered with the client).
        client_name: the ``client_name`` of Dynamic Client Registration.
        client_id, client_secret: pre-registered credentials; ``client_issuer`` limits them to one
            authorization server (elsewhere the provider registers afresh).
        private_key_pem, signing_algorithm: a pre-registered client's private key for ``private_key_jwt``
            authentication (instead of a secret; needs the ``auth`` extra).
        client_metadata_url: an HTTPS URL of a Client ID Metadata Document, used as the ``client_id`` when the
            authorization server advertises ``client_id_metadata_document_supported``.
        scopes: scopes to ask for instead of the selection strategy (see the module docstring).
        grant: "authorization_code" (default), "client_credentials" (needs ``client_id``/``client_secret``), or
            "jwt_bearer" (RFC 7523; needs ``assertion_provider``, and usually ``client_id``).
        assertion_provider: makes the JWT of the jwt-bearer grant (see ``AssertionProvider``).
        authorization_handler: the user-agent step (default ``headless_authorization``).
        token_store: where tokens and registrations live (default ``trio_mcp.auth.MemoryTokenStore()``).
        dpop: None (default): bind tokens to a DPoP key when the authorization server supports ES256 proofs,
            the MCP server asks for DPoP (its challenge's scheme, or ES256 in its PRM's
            ``dpop_signing_alg_values_supported``) and the ``auth`` extra is installed; True: always (fails
            without the extra); False: never.
        refresh_margin: refresh a token this many seconds before it expires.
        max_attempts: authorizations in a row without a successful request in between before giving up.
        offline_access: ask for ``offline_access`` (and register the ``refresh_token`` grant) when offered.
        application_type: the DCR ``application_type`` ("native" or "web").
    """

    def __init__(
        self,
        *,
        redirect_uri: str = "http://localhost:3000/callback",
        client_name: str = "trio_mcp",
        client_id: str | None = None,
        client_secret: str | None = None,
        client_issuer: str | None = None,
        private_key_pem: str | None = None,
        signing_algorithm: str = "ES256",
        client_metadata_url: str | None = None,
        scopes: Sequence[str] | None = None,
        grant: Literal["authorization_code", "client_credentials", "jwt_bearer"] = "authorization_code",
        assertion_provider: AssertionProvider | None = None,
        authorization_handler: AuthorizationHandler = headless_authorization,
        token_store: TokenStore | None = None,
        max_attempts: int = 3,
        offline_access: bool = True,
        application_type: str = "native",
        dpop: bool | None = None,
        refresh_margin: float = 60.0,
    ) -> None:
        if grant == "client_credentials" and client_id is None:
            raise ValueError("the client_credentials grant needs a client_id")
        if grant == "jwt_bearer" and assertion_provider is None:
            raise ValueError("the jwt_bearer grant needs an assertion_provider")
        if private_key_pem is not None and client_id is None:
            raise ValueError("private_key_pem needs a client_id")
        if refresh_margin < 0:
            raise ValueError("refresh_margin must not be negative")
        self.assertion_provider = assertion_provider
        self.redirect_uri = redirect_uri
        self.client_name = client_name
        self.preregistered = (
            ClientCredentials(
                client_id,
                client_secret,
                "private_key_jwt" if private_key_pem else None,
                client_issuer,
                private_key_pem,
                signing_algorithm,
            )
            if client_id is not None
            else None
        )
        self.client_metadata_url = client_metadata_url
        self.scopes = list(scopes) if scopes is not None else None
        self.grant = grant
        self.authorization_handler = authorization_handler
        self.token_store: TokenStore = token_store if token_store is not None else MemoryTokenStore()
        self.max_attempts = max_attempts
        self.offline_access = offline_access
        self.application_type = application_type
        #: Why the last authorization failed (None when it did not).
        self.last_error: OAuthError | None = None
        self._lock = trio.Lock()
        self._attempts = 0
        self._requested: list[str] = []
        self._issuer: str | None = None
        self.dpop = dpop
        self.refresh_margin = refresh_margin
        #: The MCP server's URL (the token store's key) and the HTTP client of the stream, for refreshes.
        self._url: str | None = None
        self._http: HttpClient | None = None
        self._server: AuthorizationServer | None = None
        self._resource: str | None = None
        self._resource_wants_dpop = False
        self._dpop_keys: dict[str, DpopKey] = {}
        #: The latest DPoP nonce each origin (MCP server or authorization server) asked for.
        self._nonces: dict[str, str] = {}
        if dpop:
            load_jwt("DPoP")

    # -- HttpAuth ---------------------------------------------------------------------------------------

    async def auth_headers(
        self, method: str = "POST", url: str | None = None, *, http: HttpClient | None = None
    ) -> Mapping[str, str]:
        """The ``Authorization`` (and, for a DPoP-bound token, ``DPoP``) headers of a request to ``url``;
        a token about to expire is refreshed first (with ``http``, the caller's client)."""
        if url is not None and self._url is None:  # the stream's first request goes to its URL (the store's key)
            self._url = url.split("#")[0]
        if http is not None:
            self._http = http
        token = await self._token()
        if (
            token is not None
            and token.refresh_token
            and self._http is not None
            and token.expired(margin=self.refresh_margin)
        ):
            await self._refresh_once(self._http, token)
            token = await self._token()
        if token is None:
            return {}
        if token.token_type.lower() == "dpop" and token.dpop_key is not None:
            target = url or self._url or ""
            proof = self._dpop_key(token.dpop_key).proof(
                method, target, access_token=token.access_token, nonce=self._nonces.get(origin_of(target))
            )
            return {"authorization": f"DPoP {token.access_token}", "dpop": proof}
        return {"authorization": f"Bearer {token.access_token}"}

    def note_success(self) -> None:
        self._attempts = 0

    def note_dpop_nonce(self, url: str, nonce: str) -> None:
        """Use ``nonce`` in the next DPoP proofs to ``url``'s origin (the server sent it in an answer)."""
        self._nonces[origin_of(url)] = nonce

    async def handle_challenge(
        self,
        http: HttpClient,
        url: str,
        status: int,
        www_authenticate: str | None,
        sent: Mapping[str, str],
        dpop_nonce: str | None = None,
    ) -> bool:
        """Answer a 401 (or a 403 ``insufficient_scope``): True when the request should be sent again (a new
        DPoP nonce, a refreshed token, or a new authorization)."""
        self._http = http
        self._url = url.split("#")[0]
        params = parse_www_authenticate(www_authenticate)
        if status == 403 and params.get("error") != "insufficient_scope":
            return False
        if params.get("error") == "use_dpop_nonce" and dpop_nonce:
            known = self._nonces.get(origin_of(url))
            self._nonces[origin_of(url)] = dpop_nonce
            return known != dpop_nonce
        current = await self._token()
        if current is not None and f" {current.access_token}" not in sent.get("authorization", ""):
            return True  # another request already renewed the token while this one was on its way
        if status == 401 and current is not None and current.refresh_token:
            if await self._refresh_once(http, current):
                return True
        async with self._lock:
            current_headers = await self._token()
            if current_headers is not None and f" {current_headers.access_token}" not in sent.get("authorization", ""):
                return True
            if self._attempts >= self.max_attempts:
                self.last_error = OAuthError(f"gave up after {self._attempts} authorization attempts")
                logger.warning("%s", self.last_error)
                return False
            self._attempts += 1
            try:
                await self.authorize(http, url, params, step_up=status == 403)
            except OAuthError as exc:
                self.last_error = exc
                logger.warning("authorization failed: %s", exc)
                return False
            self.last_error = None
            return True

    # -- tokens ---------------------------------------------------------------------------------------

    async def _token(self) -> OAuthToken | None:
        if self._url is None:
            return None
        record = await self.token_store.get_token(self._url)
        return OAuthToken.from_record(record) if record is not None else None

    async def _store_token(self, token: OAuthToken | None) -> None:
        if self._url is not None:
            await self.token_store.set_token(self._url, token.to_record() if token is not None else None)

    def _dpop_key(self, pem: str) -> DpopKey:
        key = self._dpop_keys.get(pem)
        if key is None:
            key = self._dpop_keys[pem] = DpopKey(pem.encode())
        return key

    async def _refresh_once(self, http: HttpClient, stale: OAuthToken) -> bool:
        """Refresh ``stale`` unless another task already did (single flight); True when a new token is there."""
        async with self._lock:
            current = await self._token()
            if current is None:
                return False
            if current != stale:  # another task refreshed it meanwhile (tokens may be equal: compare records)
                return True
            try:
                await self.refresh(http, current)
            except OAuthError as exc:
                logger.info("refreshing the token failed: %s", exc)
                await self._store_token(None)
                return False
            return True

    async def refresh(self, http: HttpClient, token: OAuthToken) -> OAuthToken:
        """Use ``token``'s refresh token (RFC 6749 §6); store and return the new token. A response without a
        refresh token keeps the old one; one with a new refresh token replaces it (rotation)."""
        if not token.refresh_token:
            raise OAuthError("the token has no refresh token")
        server = self._server
        if server is None or (token.issuer is not None and server.issuer != token.issuer):
            if token.issuer is None:
                raise OAuthError("the token does not say which authorization server granted it")
            server = await self.discover_authorization_server(http, token.issuer)
        client = await self._client_for(http, server)
        form = {"grant_type": "refresh_token", "refresh_token": token.refresh_token}
        resource = self._resource or self._url
        if resource:
            form["resource"] = resource
        refreshed = await self._token_request(http, server, client, form, dpop_key=token.dpop_key)
        if refreshed.refresh_token is None:
            refreshed = attrs.evolve(refreshed, refresh_token=token.refresh_token)
        await self._store_token(refreshed)
        return refreshed

    # -- the flow -----------------------------------------------------------------------------------------

    async def authorize(
        self, http: HttpClient, server_url: str, challenge: Mapping[str, str], *, step_up: bool = False
    ) -> OAuthToken:
        """Discover, register and obtain a token for the MCP server at ``server_url``; store and return it."""
        prm = await self.discover_protected_resource(http, server_url, challenge.get("resource_metadata"))
        if prm is not None:
            if prm.resource is not None and not resource_matches(server_url, prm.resource):
                raise OAuthError(f"the protected resource metadata names {prm.resource!r}, not {server_url!r}")
            if not prm.authorization_servers:
                raise OAuthError("the protected resource metadata names no authorization server")
            server = await self.discover_authorization_server(http, prm.authorization_servers[0])
            resource = prm.resource or server_url.split("#")[0]
        else:
            server = await self._legacy_authorization_server(http, server_url)
            resource = server_url.split("#")[0]
        if self.scopes is not None:
            scopes = list(self.scopes)
        else:
            scopes = select_scopes(
                challenge.get("scope"),
                prm.scopes_supported if prm else None,
                server.scopes_supported,
                want_refresh=self.offline_access and self.grant == "authorization_code",
            )
        if step_up and server.issuer == self._issuer:
            scopes = list(dict.fromkeys([*self._requested, *scopes]))
        client = await self._client_for(http, server)
        # DPoP when both ends take it: the server challenged with DPoP or lists ES256 in its PRM.
        self._resource_wants_dpop = challenge.get("scheme") == "dpop" or (
            prm is not None and "ES256" in (prm.dpop_signing_alg_values_supported or ())
        )
        pending = _Pending(server, client, resource, scopes)
        if self.grant == "client_credentials":
            token = await self._client_credentials(http, pending)
        elif self.grant == "jwt_bearer":
            token = await self._jwt_bearer(http, pending)
        else:
            token = await self._authorization_code(http, pending)
        self._requested = scopes
        self._issuer = server.issuer
        self._server = server
        self._resource = resource
        self._url = self._url or server_url.split("#")[0]
        await self._store_token(token)
        return token

    async def discover_protected_resource(
        self, http: HttpClient, server_url: str, resource_metadata: str | None
    ) -> ProtectedResource | None:
        """The first PRM document found (see ``protected_resource_metadata_urls``), or None."""
        for url in protected_resource_metadata_urls(server_url, resource_metadata):
            status, document = await get_json(http, url)
            if status == 200 and isinstance(document, dict):
                servers = _strings(document.get("authorization_servers")) or ()
                resource = document.get("resource")
                return ProtectedResource(
                    resource if isinstance(resource, str) else None,
                    servers,
                    _strings(document.get("scopes_supported")),
                    _strings(document.get("dpop_signing_alg_values_supported")),
                )
        return None

    async def discover_authorization_server(self, http: HttpClient, issuer: str) -> AuthorizationServer:
        """The metadata of ``issuer``; its ``issuer`` field must equal ``issuer``."""
        for url in authorization_server_metadata_urls(issuer):
            status, document = await get_json(http, url)
            if status == 200 and isinstance(document, dict):
                return self._server_from(document, issuer)
        raise OAuthError(f"no authorization server metadata found for {issuer}")

    async def _legacy_authorization_server(self, http: HttpClient, server_url: str) -> AuthorizationServer:
        """2025-03-26: metadata at the MCP server's origin, else the default endpoints there."""
        origin = origin_of(server_url)
        for url in authorization_server_metadata_urls(origin):
            status, document = await get_json(http, url)
            if status == 200 and isinstance(document, dict):
                # Before PRM nothing named the issuer: the 2025-03-26 rule only asks for the server's origin, so
                # an issuer with a path under that origin (e.g. http://host/oauth) is accepted.
                recorded = document.get("issuer")
                same_origin = isinstance(recorded, str) and origin_of(recorded) == origin
                return self._server_from(document, recorded if same_origin and isinstance(recorded, str) else origin)
        return AuthorizationServer(None, f"{origin}/authorize", f"{origin}/token", f"{origin}/register", None, None)

    @staticmethod
    def _server_from(document: Mapping[str, Any], issuer: str) -> AuthorizationServer:
        recorded = document.get("issuer")
        if not isinstance(recorded, str) or recorded.rstrip("/") != issuer.rstrip("/"):
            raise OAuthError(f"the authorization server metadata names issuer {recorded!r}, not {issuer!r}")
        authorization = document.get("authorization_endpoint")
        token = document.get("token_endpoint")
        if not isinstance(authorization, str) or not isinstance(token, str):
            raise OAuthError(f"the metadata of {issuer} lacks authorization_endpoint or token_endpoint")
        registration = document.get("registration_endpoint")
        for endpoint in (authorization, token, registration):
            if isinstance(endpoint, str):
                _check_endpoint(endpoint)
        return AuthorizationServer(
            recorded,
            authorization,
            token,
            registration if isinstance(registration, str) else None,
            _strings(document.get("token_endpoint_auth_methods_supported")),
            _strings(document.get("scopes_supported")),
            document.get("client_id_metadata_document_supported") is True,
            document.get("authorization_response_iss_parameter_supported") is True,
            _strings(document.get("dpop_signing_alg_values_supported")),
        )

    async def _client_for(self, http: HttpClient, server: AuthorizationServer) -> ClientCredentials:
        key = server.issuer or server.token_endpoint
        pre = self.preregistered
        if pre is not None and (
            pre.issuer is None or server.issuer is None or pre.issuer.rstrip("/") == key.rstrip("/")
        ):
            return pre
        record = await self.token_store.get_client(key)
        stored = ClientCredentials.from_record(record) if record is not None else None
        if stored is not None:
            return stored
        if self.client_metadata_url and server.client_id_metadata_document_supported:
            return ClientCredentials(self.client_metadata_url, None, "none", key)
        if server.registration_endpoint is None:
            raise OAuthError(f"no client credentials for {key} and it offers no dynamic registration")
        client = await self._register(http, server, key)
        await self.token_store.set_client(key, client.to_record())
        return client

    async def _register(self, http: HttpClient, server: AuthorizationServer, key: str) -> ClientCredentials:
        assert server.registration_endpoint is not None
        supported = server.token_endpoint_auth_methods_supported
        method = next(
            (m for m in ("client_secret_basic", "client_secret_post", "none") if supported and m in supported),
            "client_secret_basic",
        )
        grants = ["authorization_code"]
        if self.offline_access:
            grants.append("refresh_token")
        metadata = {
            "client_name": self.client_name,
            "redirect_uris": [self.redirect_uri],
            "grant_types": grants,
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": self.application_type,
        }
        try:
            status, document, _ = await post(
                http, server.registration_endpoint, json.dumps(metadata).encode(), "application/json"
            )
        except HttpFailure as exc:
            raise OAuthError(str(exc)) from None
        if status not in (200, 201) or not isinstance(document, dict) or not isinstance(document.get("client_id"), str):
            raise OAuthError(f"dynamic client registration at {server.registration_endpoint} failed (HTTP {status})")
        secret = document.get("client_secret")
        registered = document.get("token_endpoint_auth_method")
        return ClientCredentials(
            document["client_id"],
            secret if isinstance(secret, str) else None,
            registered if isinstance(registered, str) else None,
            key,
        )

    def _auth_method(self, server: AuthorizationServer, client: ClientCredentials) -> str:
        if client.private_key_pem is not None:
            return "private_key_jwt"
        if client.client_secret is None:
            return "none"
        supported = server.token_endpoint_auth_methods_supported
        if client.token_endpoint_auth_method and (not supported or client.token_endpoint_auth_method in supported):
            return client.token_endpoint_auth_method
        if supported:
            for method in ("client_secret_basic", "client_secret_post", "none"):
                if method in supported:
                    return method
        return "client_secret_basic"

    async def _authorization_code(self, http: HttpClient, pending: _Pending) -> OAuthToken:
        server, client = pending.server, pending.client
        verifier = new_code_verifier()
        state = secrets.token_urlsafe(24)
        query = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": self.redirect_uri,
            "state": state,
            "code_challenge": code_challenge(verifier),
            "code_challenge_method": "S256",
        }
        if pending.resource:
            query["resource"] = pending.resource
        if pending.scopes:
            query["scope"] = " ".join(pending.scopes)
        separator = "&" if "?" in server.authorization_endpoint else "?"
        url = f"{server.authorization_endpoint}{separator}{urlencode(query, quote_via=quote)}"
        redirected = await self.authorization_handler(http, url, self.redirect_uri)
        answer = {name: values[0] for name, values in parse_qs(urlsplit(redirected).query).items()}
        self.check_authorization_response(answer, state, server)
        form = {
            "grant_type": "authorization_code",
            "code": answer["code"],
            "redirect_uri": self.redirect_uri,
            "code_verifier": verifier,
        }
        if pending.resource:
            form["resource"] = pending.resource
        return await self._token_request(http, server, client, form)

    @staticmethod
    def check_authorization_response(answer: Mapping[str, str], state: str, server: AuthorizationServer) -> None:
        """Validate the redirect's parameters: ``state``, ``error``, ``iss`` (RFC 9207, exact match), ``code``."""
        if answer.get("state") != state:
            raise OAuthError("the authorization response's state does not match the request's")
        if "error" in answer:
            raise OAuthError(f"authorization refused: {answer['error']} {answer.get('error_description', '')}".strip())
        iss = answer.get("iss")
        if iss is not None:
            if iss != server.issuer:
                raise OAuthError(f"the authorization response's iss {iss!r} is not the issuer {server.issuer!r}")
        elif server.iss_parameter_supported:
            raise OAuthError("the authorization server promised an iss parameter and sent none")
        if not answer.get("code"):
            raise OAuthError("the authorization response carries no code")

    async def _client_credentials(self, http: HttpClient, pending: _Pending) -> OAuthToken:
        form = {"grant_type": "client_credentials"}
        if pending.resource:
            form["resource"] = pending.resource
        if pending.scopes:
            form["scope"] = " ".join(pending.scopes)
        return await self._token_request(http, pending.server, pending.client, form)

    async def _jwt_bearer(self, http: HttpClient, pending: _Pending) -> OAuthToken:
        assert self.assertion_provider is not None
        assertion = await self.assertion_provider(http, pending.server, pending.resource)
        form = {"grant_type": JWT_BEARER, "assertion": assertion}
        if pending.resource:
            form["resource"] = pending.resource
        if pending.scopes:
            form["scope"] = " ".join(pending.scopes)
        return await self._token_request(http, pending.server, pending.client, form)

    def _use_dpop(self, server: AuthorizationServer) -> bool:
        if self.dpop is not None:
            return self.dpop
        if not self._resource_wants_dpop or "ES256" not in (server.dpop_signing_alg_values_supported or ()):
            return False
        try:
            load_jwt("DPoP")
        except AuthExtraMissing:
            logger.info("%s offers DPoP; without the auth extra the token is a plain bearer token", server.issuer)
            return False
        return True

    def _client_authentication(
        self, server: AuthorizationServer, client: ClientCredentials, form: dict[str, str]
    ) -> list[tuple[str, str]]:
        """Authenticate the client on a token request: a header to send, or fields added to ``form``."""
        method = self._auth_method(server, client)
        if method == "client_secret_basic" and client.client_secret is not None:
            pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
            return [("authorization", "Basic " + base64.b64encode(pair.encode()).decode("ascii"))]
        form["client_id"] = client.client_id
        if method == "client_secret_post" and client.client_secret is not None:
            form["client_secret"] = client.client_secret
        elif method == "private_key_jwt" and client.private_key_pem is not None:
            form["client_assertion_type"] = CLIENT_ASSERTION_TYPE
            form["client_assertion"] = client_assertion(
                client.private_key_pem,
                client_id=client.client_id,
                audience=server.issuer or server.token_endpoint,
                algorithm=client.signing_algorithm,
            )
        return []

    async def _token_request(
        self,
        http: HttpClient,
        server: AuthorizationServer,
        client: ClientCredentials,
        form: dict[str, str],
        *,
        dpop_key: str | None = None,
    ) -> OAuthToken:
        """POST to the token endpoint (with a DPoP proof when tokens are DPoP-bound, retried once with the
        server's nonce after ``use_dpop_nonce``)."""
        key = self._dpop_key(dpop_key) if dpop_key is not None else DpopKey() if self._use_dpop(server) else None
        endpoint_origin = origin_of(server.token_endpoint)
        for attempt in range(2):
            fields = dict(form)
            headers = self._client_authentication(server, client, fields)
            if key is not None:
                headers.append(
                    ("dpop", key.proof("POST", server.token_endpoint, nonce=self._nonces.get(endpoint_origin)))
                )
            try:
                status, document, answer_headers = await post(
                    http, server.token_endpoint, urlencode(fields).encode(), FORM, headers
                )
            except HttpFailure as exc:
                raise OAuthError(str(exc)) from None
            nonce = answer_headers.get("dpop-nonce")
            if key is not None and nonce:
                self._nonces[endpoint_origin] = nonce
            error = document.get("error") if isinstance(document, dict) else None
            if not (status == 400 and error == "use_dpop_nonce" and key is not None and nonce and attempt == 0):
                break
        if status != 200 or not isinstance(document, dict) or not isinstance(document.get("access_token"), str):
            raise OAuthError(f"the token request to {server.token_endpoint} failed (HTTP {status}, {error})")
        expires = document.get("expires_in")
        refresh = document.get("refresh_token")
        scope = document.get("scope")
        token_type = str(document.get("token_type") or "Bearer")
        bound = key is not None and token_type.lower() == "dpop"
        return OAuthToken(
            document["access_token"],
            token_type,
            float(expires) if isinstance(expires, (int, float)) else None,
            refresh if isinstance(refresh, str) else None,
            scope if isinstance(scope, str) else None,
            issuer=server.issuer,
            dpop_key=key.private_key_pem().decode("ascii") if bound and key is not None else None,
        )
