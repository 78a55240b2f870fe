"""The optional ``auth`` extra (PyJWT with ``cryptography``), loaded only by the features that sign or verify.

Everything else in ``trio_mcp.auth`` (introspection, bearer callables, metadata, the OAuth flows that need no
signature) works without it.
"""

from __future__ import annotations

from types import ModuleType

from ..errors import TrioMcpError

__all__ = ["AuthExtraMissing", "load_jwt"]


class AuthExtraMissing(TrioMcpError, ImportError):
    """A feature needs signatures and the ``auth`` extra is not installed."""


def load_jwt(feature: str) -> ModuleType:
    """The ``jwt`` module (PyJWT, with its ``cryptography`` algorithms), or ``AuthExtraMissing`` naming
    ``feature`` and the extra to install."""
    try:
        import jwt
        from jwt.algorithms import has_crypto
    except ImportError:
        has_crypto = False
    if not has_crypto:
        raise AuthExtraMissing(f"{feature} needs signatures: pip install 'trio-mcp[auth]'")
    return jwt
