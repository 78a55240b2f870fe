"""The resource-server half of MCP authorization for the HTTP transport: ``ResourceServerAuth``.

Put in front of the MCP endpoints (``HttpTransportOptions(auth=...)``, or ``Server.serve_http(auth=...)``), it

- serves Protected Resource Metadata (RFC 9728) at the path-inserted well-known URI of the endpoint and at
  the root form;
- answers a request without a usable token with 401 and ``WWW-Authenticate: Bearer resource_metadata="…"``
  (with ``scope`` and, for a bad token, ``error="invalid_token"``), and a token lacking a scope with 403
  ``error="insufficient_scope"`` naming the scopes needed, so a client can step up;
- checks DPoP proofs for DPoP-bound tokens (``dpop=DpopVerifier(...)``), with server nonces;
- logs each refusal (the reason and the peer, never the token).

The token itself is checked by a ``TokenVerifier``, which also binds it to this resource (``aud``). The
server never forwards a client's token anywhere: it is read here and dropped.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

import attrs

from ..transports._http_types import ClientDisconnected, Headers, RequestBodyError, decode_headers
from ..transports.http.exchange import Request as HttpRequest  # h11 or ASGI
from ..transports.http.exchange import Response as HttpResponse
from ..transports.http.guard import ScopesFor, decoded_message, posted_message
from ._dpop import DpopVerifier, InvalidDpopProof
from ._metadata import challenge, protected_resource_metadata, protected_resource_metadata_paths
from ._scopes import admit_scopes
from ._tokens import InvalidToken, Principal, TokenVerifier, VerifierUnavailable

__all__ = ["HostedAuthorizationServer", "Refusal", "ResourceServerAuth", "ScopesFor"]

logger = logging.getLogger("trio_mcp.auth")

_JSON = (("content-type", "application/json"), ("cache-control", "no-store"))


class HostedAuthorizationServer(Protocol):
    """An authorization server served beside the MCP endpoint, on its origin
    (``trio_mcp.auth.facade.AuthorizationFacade``): it answers the requests to its ``paths`` itself."""

    @property
    def paths(self) -> tuple[str, ...]: ...

    async def handle(self, request: HttpRequest, response: HttpResponse) -> None: ...


@attrs.frozen
class Refusal:
    """How to refuse a request: a status, headers (the challenge among them) and a JSON body."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


class ResourceServerAuth:
    """Protects an MCP HTTP server with OAuth access tokens.

    Args:
        verifier: checks tokens (``JwtVerifier``, ``IntrospectionVerifier``, ``CallableVerifier``).
        authorization_servers: issuer URLs of the authorization servers clients should use (PRM).
        resource: this server's canonical URI (e.g. ``https://mcp.example.com/mcp``), published in PRM and
            used for DPoP ``htu`` checks. Default: ``http://<Host header><endpoint path>``, fit only for
            local development (behind a proxy or with TLS, give it).
        scopes_supported: the scopes published in PRM (default: none published).
        required_scopes: scopes every request needs (each tool, resource and prompt may need more).
        dpop: a ``DpopVerifier`` to accept DPoP-bound tokens (``Authorization: DPoP``); ``dpop_required``
            refuses plain bearer tokens.
        resource_name: a human-readable name for PRM.
        authorization_server: an authorization server to serve beside the endpoint (its metadata, its
            authorization and token endpoints...); ``AuthorizationFacade.resource_server()`` sets it.
    """

    def __init__(
        self,
        verifier: TokenVerifier,
        *,
        authorization_servers: Sequence[str],
        resource: str | None = None,
        scopes_supported: Sequence[str] | None = None,
        required_scopes: Sequence[str] = (),
        dpop: DpopVerifier | None = None,
        dpop_required: bool = False,
        resource_name: str | None = None,
        authorization_server: HostedAuthorizationServer | None = None,
    ) -> None:
        if not authorization_servers:
            raise ValueError("authorization_servers must name at least one authorization server")
        if resource is not None and (urlsplit(resource).scheme not in ("http", "https") or "#" in resource):
            raise ValueError("resource must be an absolute http(s) URI without a fragment")
        if dpop_required and dpop is None:
            raise ValueError("dpop_required needs a dpop verifier")
        self.verifier = verifier
        self.authorization_servers = tuple(authorization_servers)
        self.resource = resource
        self.scopes_supported = None if scopes_supported is None else tuple(scopes_supported)
        self.required_scopes = frozenset(required_scopes)
        self.dpop = dpop
        self.dpop_required = dpop_required
        self.resource_name = resource_name
        self.authorization_server = authorization_server
        #: Why tokens cannot be checked now (logged once), or None while they can.
        self._unavailable_reason: str | None = None

    # -- what the transports call ---------------------------------------------------------------------

    def metadata_paths(self, endpoint_path: str) -> tuple[str, ...]:
        """The paths this guard answers itself: the PRM documents of the endpoint at ``endpoint_path``, and
        those of the authorization server it serves, if any."""
        own = protected_resource_metadata_paths(self._resource_path(endpoint_path))
        return own if self.authorization_server is None else (*own, *self.authorization_server.paths)

    async def aclose(self) -> None:
        """Close the verifier's connections to the authorization server (the HTTP app calls this when it stops
        serving; a later request opens new ones)."""
        close = getattr(self.verifier, "aclose", None)
        if close is not None:
            await close()

    def response_headers(self, request: HttpRequest) -> list[tuple[str, str]]:
        """Headers for the response to an admitted request: the current ``DPoP-Nonce`` when nonces are required
        and the request used DPoP (RFC 9449 §8.2), so the client's next proof needs no ``use_dpop_nonce``."""
        if self.dpop is None or not self.dpop.require_nonce:
            return []
        if request.headers.get("authorization", "").partition(" ")[0].lower() != "dpop":
            return []
        return [("dpop-nonce", self.dpop.nonce())]

    async def __call__(
        self, request: HttpRequest, response: HttpResponse, endpoint_path: str, scopes_for: ScopesFor | None = None
    ) -> Any:
        """HTTP: admit a request to ``endpoint_path`` and return its ``Principal``, or answer it (PRM, 401,
        403) and return None. ``scopes_for`` (the server's ``required_scopes``) says what a POSTed message
        needs beyond ``required_scopes``."""
        if self.authorization_server is not None and request.path in self.authorization_server.paths:
            await self.authorization_server.handle(request, response)
            return None
        if request.path in self.metadata_paths(endpoint_path) and request.path != endpoint_path:
            await self._send_metadata(request, response, self._resource_url(request.headers, endpoint_path))
            return None
        scopes = None
        if request.method == "POST" and scopes_for is not None:
            scopes = functools.partial(self._message_scopes, request, scopes_for)
        outcome = await self.admit(
            request.method,
            request.path,
            request.headers,
            endpoint_path=endpoint_path,
            peer=request.peer,
            message_scopes=scopes,
        )
        if isinstance(outcome, Refusal):
            await response.send(outcome.status, outcome.headers, outcome.body)
            return None
        if scopes is not None:
            admit_scopes(decoded_message(request))  # checked here: the server does not check them again
        return outcome

    async def admit_upgrade(
        self, path: str, raw_headers: Sequence[tuple[bytes, bytes]], peer: tuple[str, int] | None
    ) -> tuple[Principal | None, tuple[int, list[tuple[str, str]], bytes] | None]:
        """WebSocket: admit an upgrade (``GET path``, the endpoint itself): ``(principal, None)``, or
        ``(None, (status, headers, body))`` to refuse it with."""
        path = path.split("?", 1)[0]
        outcome = await self.admit("GET", path, decode_headers(raw_headers), endpoint_path=path, peer=peer)
        if isinstance(outcome, Refusal):
            return None, (outcome.status, outcome.headers, outcome.body)
        return outcome, None

    async def admit(
        self,
        method: str,
        path: str,
        headers: Headers,
        *,
        endpoint_path: str,
        peer: tuple[str, int] | None = None,
        message_scopes: Callable[[], Awaitable[set[str]]] | None = None,
    ) -> Principal | Refusal:
        """The principal of a request, or the refusal to answer it with (401/403 and its challenge);
        ``message_scopes`` reads what the request's message needs (``scopes=`` of a tool, say)."""
        scheme, _, token = headers.get("authorization", "").partition(" ")
        scheme, token = scheme.lower(), token.strip()
        resource = self._resource_url(headers, endpoint_path)
        metadata_url = _with_path(resource, self.metadata_paths(endpoint_path)[0])
        where = f"{method} {path} from {f'{peer[0]}:{peer[1]}' if peer else '?'}"
        if scheme not in ("bearer", "dpop") or not token:
            return self._refusal(where, "no access token", 401, metadata_url, error=None)
        try:
            principal = await self.verifier.verify(token)
            self._check_binding(method, path, headers, scheme, token, principal, resource)
        except InvalidDpopProof as exc:
            return self._dpop_refusal(where, metadata_url, exc)
        except InvalidToken as exc:
            return self._refusal(where, str(exc), 401, metadata_url, error="invalid_token", description=str(exc))
        except VerifierUnavailable as exc:
            return self._unavailable(where, exc)
        if self._unavailable_reason is not None:
            logger.warning("access tokens can be checked again")
            self._unavailable_reason = None
        needed = set(self.required_scopes)
        if message_scopes is not None:
            needed |= await message_scopes()
        missing = needed - principal.scopes
        if missing:
            return self._refusal(
                where,
                f"insufficient scope (needs {' '.join(sorted(missing))})",
                403,
                metadata_url,
                error="insufficient_scope",
                scope=" ".join(sorted(needed | principal.scopes)),
                description=f"requires scope {' '.join(sorted(missing))}",
            )
        return principal

    # -- checks ----------------------------------------------------------------------------------------

    def _check_binding(
        self, method: str, path: str, headers: Headers, scheme: str, token: str, principal: Principal, url: str
    ) -> None:
        bound = principal.key_thumbprint is not None
        if scheme == "bearer":
            if bound:
                raise InvalidToken("a DPoP-bound token was presented as a bearer token")
            if self.dpop_required:
                raise InvalidToken("this server accepts only DPoP-bound tokens")
            return
        if self.dpop is None:
            raise InvalidToken("this server does not accept DPoP tokens")
        if len(headers.get_all("dpop")) > 1:
            raise InvalidDpopProof("the request carries more than one DPoP proof")
        self.dpop.check(
            headers.get("dpop"), method=method, url=_with_path(url, path), access_token=token, principal=principal
        )

    @staticmethod
    async def _message_scopes(request: HttpRequest, scopes_for: ScopesFor) -> set[str]:
        """The scopes the JSON-RPC request in the body needs (a body the transport will refuse needs none)."""
        try:
            message = await posted_message(request)  # decoded once: the inbound check reads the same
        except (RequestBodyError, ClientDisconnected):
            return set()
        messages = message if isinstance(message, list) else [message]
        needed: set[str] = set()
        for item in messages:
            if isinstance(item, dict) and isinstance(item.get("method"), str):
                params = item.get("params")
                needed.update(scopes_for(item["method"], params if isinstance(params, dict) else {}))
        return needed

    # -- answers ---------------------------------------------------------------------------------------

    async def _send_metadata(self, request: HttpRequest, response: HttpResponse, resource: str) -> None:
        if request.method not in ("GET", "HEAD"):
            await response.send(405, (("allow", "GET"),))
            return
        document = protected_resource_metadata(
            resource,
            self.authorization_servers,
            scopes_supported=self.scopes_supported,
            dpop_algorithms=self.dpop.algorithms if self.dpop is not None else None,
            dpop_bound_only=self.dpop_required,
            resource_name=self.resource_name,
        )
        body = json.dumps(document).encode()
        await response.send(
            200,
            (
                ("content-type", "application/json"),
                ("cache-control", "max-age=3600"),
                ("access-control-allow-origin", "*"),
            ),
            body if request.method == "GET" else b"",
        )

    def _unavailable(self, where: str, exc: VerifierUnavailable) -> Refusal:
        """503: the token could not be checked. Logged once with its cause (not once per request), until a
        token can be checked again or the cause changes."""
        if str(exc) != self._unavailable_reason:
            self._unavailable_reason = str(exc)
            logger.error(
                "cannot check access tokens (first refused: %s): %s; answering 503 until it recovers", where, exc
            )
        body = {
            "error": "temporarily_unavailable",
            "error_description": "the server cannot check access tokens now (its authorization server cannot "
            "be reached); try again shortly",
        }
        return Refusal(503, [*_JSON, ("retry-after", "5")], json.dumps(body).encode())

    def _refusal(
        self,
        where: str,
        reason: str,
        status: int,
        metadata_url: str,
        *,
        error: str | None,
        scope: str | None = None,
        description: str | None = None,
    ) -> Refusal:
        logger.warning("refused %s: %s", where, reason)
        if scope is None and self.required_scopes:
            scope = " ".join(sorted(self.required_scopes))
        params = [
            ("resource_metadata", metadata_url),
            ("scope", scope),
            ("error", error),
            ("error_description", description if error else None),
        ]
        headers = [*_JSON, ("www-authenticate", challenge("Bearer", params))]
        if self.dpop is not None:
            algs = " ".join(self.dpop.algorithms)
            headers.append(("www-authenticate", challenge("DPoP", [*params, ("algs", algs)])))
        body = {
            "error": error or "unauthorized",
            "error_description": description or "an access token is required: send 'Authorization: Bearer <token>'",
        }
        return Refusal(status, headers, json.dumps(body).encode())

    def _dpop_refusal(self, where: str, metadata_url: str, exc: InvalidDpopProof) -> Refusal:
        assert self.dpop is not None
        logger.warning("refused %s: %s", where, exc)
        error = "use_dpop_nonce" if exc.use_nonce else "invalid_dpop_proof"
        params = [
            ("resource_metadata", metadata_url),
            ("error", error),
            ("error_description", str(exc)),
            ("algs", " ".join(self.dpop.algorithms)),
        ]
        headers = [*_JSON, ("www-authenticate", challenge("DPoP", params))]
        if self.dpop.require_nonce:
            headers.append(("dpop-nonce", self.dpop.nonce()))
        return Refusal(401, headers, json.dumps({"error": error, "error_description": str(exc)}).encode())

    # -- URLs ------------------------------------------------------------------------------------------

    def _resource_path(self, endpoint_path: str) -> str:
        return urlsplit(self.resource).path if self.resource is not None else endpoint_path

    def _resource_url(self, headers: Headers, endpoint_path: str) -> str:
        if self.resource is not None:
            return self.resource
        return f"http://{headers.get('host', 'localhost')}{endpoint_path}"


def _with_path(url: str, path: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{path}"
