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

import json
import logging
from typing import Any, Callable, Collection, Mapping, Sequence
from urllib.parse import urlsplit

from ..transports._http_server import HttpRequest, HttpResponse, RequestBodyError, ClientDisconnected
from ._dpop import DpopVerifier, InvalidDpopProof
from ._metadata import challenge, protected_resource_metadata, protected_resource_metadata_paths
from ._tokens import InvalidToken, Principal, TokenVerifier

__all__ = ["ResourceServerAuth", "ScopesFor"]

logger = logging.getLogger("trio_mcp.auth")

ScopesFor = Callable[[str, Mapping[str, Any]], Collection[str]]
"""``(method, params) -> the scopes a request needs`` (``Server.required_scopes``)."""

_JSON = (("content-type", "application/json"), ("cache-control", "no-store"))


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
        #: What a request needs beyond ``required_scopes``; set by ``Server.serve_http(auth=...)``.
        self.scopes_for: ScopesFor | None = None

    # -- what the HTTP transport calls -----------------------------------------------------------------

    def metadata_paths(self, endpoint_path: str) -> tuple[str, ...]:
        """The paths this guard answers itself (the PRM documents of the endpoint at ``endpoint_path``)."""
        return protected_resource_metadata_paths(self._resource_path(endpoint_path))

    async def __call__(self, request: HttpRequest, response: HttpResponse, endpoint_path: str) -> Any:
        """Admit a request to ``endpoint_path``: return its ``Principal``, or answer it (PRM, 401, 403) and
        return None."""
        resource = self._resource_url(request, endpoint_path)
        if request.path in self.metadata_paths(endpoint_path) and request.path != endpoint_path:
            await self._send_metadata(request, response, resource)
            return None
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        scheme, token = scheme.lower(), token.strip()
        metadata_url = self._metadata_url(request, endpoint_path)
        if scheme not in ("bearer", "dpop") or not token:
            self._refused(request, "no access token")
            await self._challenge(response, 401, metadata_url, error=None)
            return None
        try:
            principal = await self.verifier.verify(token)
            self._check_binding(request, scheme, token, principal, resource)
        except InvalidDpopProof as exc:
            self._refused(request, str(exc))
            await self._dpop_challenge(response, metadata_url, exc)
            return None
        except InvalidToken as exc:
            self._refused(request, str(exc))
            await self._challenge(response, 401, metadata_url, error="invalid_token", description=str(exc))
            return None
        needed = set(self.required_scopes)
        if self.scopes_for is not None and request.method == "POST":
            needed |= await self._message_scopes(request)
        missing = needed - principal.scopes
        if missing:
            self._refused(request, f"insufficient scope (needs {' '.join(sorted(missing))})")
            await self._challenge(response, 403, metadata_url, error="insufficient_scope",
                                  scope=" ".join(sorted(needed | principal.scopes)),
                                  description=f"requires scope {' '.join(sorted(missing))}")
            return None
        return principal

    # -- checks ----------------------------------------------------------------------------------------

    def _check_binding(self, request: HttpRequest, scheme: str, token: str, principal: Principal, url: str) -> None:
        bound = principal.key_thumbprint is not None
        if scheme == "bearer":
            if bound:
                raise InvalidToken("a DPoP-bound token was presented as a bearer token")
            if self.dpop_required:
                raise InvalidToken("this server accepts only DPoP-bound tokens")
            return
        if self.dpop is None:
            raise InvalidToken("this server does not accept DPoP tokens")
        if len(request.headers.get_all("dpop")) > 1:
            raise InvalidDpopProof("the request carries more than one DPoP proof")
        full_url = url if urlsplit(url).path == request.path else _with_path(url, request.path)
        self.dpop.check(request.headers.get("dpop"), method=request.method, url=full_url, access_token=token,
                        principal=principal)

    async def _message_scopes(self, request: HttpRequest) -> set[str]:
        """The scopes the JSON-RPC request in the body needs (a body the transport will refuse needs none)."""
        assert self.scopes_for is not None
        try:
            message = json.loads(await request.read_body())
        except (RequestBodyError, ClientDisconnected, ValueError):
            return set()
        messages = message if isinstance(message, list) else [message]
        needed: set[str] = set()
        for item in messages:
            if isinstance(item, dict) and isinstance(item.get("method"), str):
                params = item.get("params")
                needed.update(self.scopes_for(item["method"], params if isinstance(params, dict) else {}))
        return needed

    # -- answers ---------------------------------------------------------------------------------------

    async def _send_metadata(self, request: HttpRequest, response: HttpResponse, resource: str) -> None:
        if request.method not in ("GET", "HEAD"):
            await response.send(405, (("allow", "GET"),))
            return
        document = protected_resource_metadata(
            resource, self.authorization_servers, scopes_supported=self.scopes_supported,
            dpop_algorithms=self.dpop.algorithms if self.dpop is not None else None,
            dpop_bound_only=self.dpop_required, resource_name=self.resource_name,
        )
        body = json.dumps(document).encode()
        await response.send(200, (("content-type", "application/json"), ("cache-control", "max-age=3600"),
                                  ("access-control-allow-origin", "*")), body if request.method == "GET" else b"")

    async def _challenge(
        self, response: HttpResponse, status: int, metadata_url: str, *, error: str | None,
        scope: str | None = None, description: str | None = None,
    ) -> None:
        if scope is None and self.required_scopes:
            scope = " ".join(sorted(self.required_scopes))
        params = [("resource_metadata", metadata_url), ("scope", scope), ("error", error),
                  ("error_description", description if error else None)]
        headers = [("www-authenticate", challenge("Bearer", params))]
        if self.dpop is not None:
            algs = " ".join(self.dpop.algorithms)
            headers.append(("www-authenticate", challenge("DPoP", [*params, ("algs", algs)])))
        body = {"error": error or "unauthorized", "error_description": description or "an access token is required"}
        await response.send(status, [*_JSON, *headers], json.dumps(body).encode())

    async def _dpop_challenge(self, response: HttpResponse, metadata_url: str, exc: InvalidDpopProof) -> None:
        assert self.dpop is not None
        error = "use_dpop_nonce" if exc.use_nonce else "invalid_dpop_proof"
        params = [("resource_metadata", metadata_url), ("error", error), ("error_description", str(exc)),
                  ("algs", " ".join(self.dpop.algorithms))]
        headers = [("www-authenticate", challenge("DPoP", params))]
        if self.dpop.require_nonce:
            headers.append(("dpop-nonce", self.dpop.nonce()))
        body = json.dumps({"error": error, "error_description": str(exc)}).encode()
        await response.send(401, [*_JSON, *headers], body)

    # -- URLs ------------------------------------------------------------------------------------------

    def _resource_path(self, endpoint_path: str) -> str:
        return urlsplit(self.resource).path if self.resource is not None else endpoint_path

    def _resource_url(self, request: HttpRequest, endpoint_path: str) -> str:
        if self.resource is not None:
            return self.resource
        return f"http://{request.headers.get('host', 'localhost')}{endpoint_path}"

    def _metadata_url(self, request: HttpRequest, endpoint_path: str) -> str:
        resource = self._resource_url(request, endpoint_path)
        return _with_path(resource, self.metadata_paths(endpoint_path)[0])

    @staticmethod
    def _refused(request: HttpRequest, reason: str) -> None:
        peer = f"{request.peer[0]}:{request.peer[1]}" if request.peer else "?"
        logger.warning("refused %s %s from %s: %s", request.method, request.path, peer, reason)


def _with_path(url: str, path: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{path}"
