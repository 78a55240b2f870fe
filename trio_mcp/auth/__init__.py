"""OAuth for MCP over HTTP: the resource-server side (protecting a server) and shared parts of the client side.

Server: ``ResourceServerAuth`` in front of the HTTP endpoints, with a ``TokenVerifier`` (``JwtVerifier``,
``IntrospectionVerifier``, ``CallableVerifier``, or ``DevTokens`` on a laptop) and optionally a ``DpopVerifier``. Client: the token stores and
the interactive loopback helper used by ``trio_mcp.client.OAuthClientProvider``, and the signing pieces
(``DpopKey``, ``client_assertion``). Signatures need the ``auth`` extra (``pip install 'trio-mcp[auth]'``),
loaded only when used; see docs/protecting-a-server.md and docs/authorizing-a-client.md.

Names load on first use, so that a server importing the scope table pulls in nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._dev import DEV_SECRET_ENV, DevTokens
    from ._dpop import DpopVerifier, InvalidDpopProof
    from ._extra import AuthExtraMissing
    from ._introspection import IntrospectionVerifier
    from ._jwt import ASYMMETRIC_ALGORITHMS, JwtVerifier
    from ._loopback import loopback_authorization
    from ._metadata import parse_www_authenticate, protected_resource_metadata
    from ._resource_server import ResourceServerAuth
    from ._signing import DpopKey, client_assertion, jwk_thumbprint
    from ._store import FileTokenStore, MemoryTokenStore, TokenStore
    from ._tokens import CallableVerifier, InvalidToken, Principal, TokenVerifier, VerifierUnavailable

_LAZY = {
    "DEV_SECRET_ENV": "._dev",
    "DevTokens": "._dev",
    "DpopVerifier": "._dpop",
    "InvalidDpopProof": "._dpop",
    "AuthExtraMissing": "._extra",
    "IntrospectionVerifier": "._introspection",
    "ASYMMETRIC_ALGORITHMS": "._jwt",
    "JwtVerifier": "._jwt",
    "parse_www_authenticate": "._metadata",
    "protected_resource_metadata": "._metadata",
    "ResourceServerAuth": "._resource_server",
    "DpopKey": "._signing",
    "client_assertion": "._signing",
    "jwk_thumbprint": "._signing",
    "FileTokenStore": "._store",
    "MemoryTokenStore": "._store",
    "TokenStore": "._store",
    "loopback_authorization": "._loopback",
    "CallableVerifier": "._tokens",
    "InvalidToken": "._tokens",
    "Principal": "._tokens",
    "TokenVerifier": "._tokens",
    "VerifierUnavailable": "._tokens",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "AuthExtraMissing",
    "CallableVerifier",
    "DEV_SECRET_ENV",
    "DevTokens",
    "DpopKey",
    "DpopVerifier",
    "FileTokenStore",
    "IntrospectionVerifier",
    "InvalidDpopProof",
    "InvalidToken",
    "JwtVerifier",
    "MemoryTokenStore",
    "Principal",
    "ResourceServerAuth",
    "TokenStore",
    "TokenVerifier",
    "VerifierUnavailable",
    "client_assertion",
    "jwk_thumbprint",
    "loopback_authorization",
    "parse_www_authenticate",
    "protected_resource_metadata",
]
