"""An OAuth authorization server for MCP clients in front of an identity provider that lets no client register
itself: ``AuthorizationFacade`` with an ``Upstream`` (``entra_id``, ``google``, ``github``, ``okta``,
``auth0``, ``keycloak``, or any OpenID Connect provider through ``oidc``), its state in a ``FacadeStore``
(``MemoryFacadeStore``; ``trio_mcp.scale.RedisFacadeStore`` for workers). See docs/protecting-with-an-identity-provider.md.

Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._facade import AuthorizationFacade
    from ._providers import Upstream, auth0, entra_id, github, google, keycloak, oidc, okta
    from ._state import FacadeStore, MemoryFacadeStore, StoreUnavailable

_LAZY = {
    "AuthorizationFacade": "._facade",
    "Upstream": "._providers",
    "auth0": "._providers",
    "entra_id": "._providers",
    "github": "._providers",
    "google": "._providers",
    "keycloak": "._providers",
    "oidc": "._providers",
    "okta": "._providers",
    "FacadeStore": "._state",
    "MemoryFacadeStore": "._state",
    "StoreUnavailable": "._state",
}

__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    "AuthorizationFacade",
    "FacadeStore",
    "MemoryFacadeStore",
    "StoreUnavailable",
    "Upstream",
    "auth0",
    "entra_id",
    "github",
    "google",
    "keycloak",
    "oidc",
    "okta",
]
