"""The client-side OAuth failure, shared by the provider and the helpers it uses."""

from __future__ import annotations

from ..errors import TrioMcpError

__all__ = ["OAuthError"]


class OAuthError(TrioMcpError):
    """Authorization could not be completed (discovery, registration, the grant, or a failed validation)."""
