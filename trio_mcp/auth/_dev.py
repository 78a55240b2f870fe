"""Access tokens for local development: minted and checked in one process with a secret, so that a protected
server can be tried on a laptop with no authorization server. Never for a server others can reach."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable, Iterable
from typing import Final
from urllib.parse import urlsplit

from ._tokens import InvalidToken, Principal

__all__ = ["DEV_SECRET_ENV", "DevTokens"]

#: Where ``DevTokens`` finds its secret when none is given, so that another process (``trio-mcp`` or a test) can
#: mint tokens the server accepts.
DEV_SECRET_ENV: Final = "TRIO_MCP_DEV_TOKEN_SECRET"
_PREFIX: Final = "dev1"
_LOCAL_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class DevTokens:
    """A ``TokenVerifier`` that also issues the tokens it accepts (HMAC-SHA256 over a small JSON payload).

    ``resource`` is the server's MCP endpoint; it must be on this machine (localhost, 127.0.0.1, ::1), since a
    shared secret is no way to protect a server others reach: use ``JwtVerifier`` with a real authorization
    server there. The secret is ``secret``, else ``$TRIO_MCP_DEV_TOKEN_SECRET``, else a random one (tokens then
    work only with this object). ``issuer`` is what ``ResourceServerAuth(authorization_servers=[...])`` names.
    """

    issuer: Final = "urn:trio-mcp:dev-tokens"

    def __init__(self, *, resource: str, secret: str | None = None, clock: Callable[[], float] = time.time) -> None:
        host = urlsplit(resource).hostname
        if urlsplit(resource).scheme not in ("http", "https") or host not in _LOCAL_HOSTS:
            raise ValueError(
                f"DevTokens protects a server on this machine only (resource on localhost, 127.0.0.1 or ::1), "
                f"not {resource!r}: use JwtVerifier with an authorization server for anything else"
            )
        secret = secret if secret is not None else os.environ.get(DEV_SECRET_ENV) or secrets.token_urlsafe(32)
        if len(secret) < 16:
            raise ValueError("the DevTokens secret must be at least 16 characters")
        self.resource = resource
        self._key = secret.encode()
        self._clock = clock

    def issue(self, subject: str = "developer", *, scopes: Iterable[str] = (), lifetime: float = 3600.0) -> str:
        """A token for ``subject`` with ``scopes``, valid for ``lifetime`` seconds, to send as
        ``Authorization: Bearer <token>``."""
        if lifetime <= 0:
            raise ValueError("lifetime must be positive")
        claims = {
            "iss": self.issuer,
            "sub": subject,
            "aud": self.resource,
            "scope": " ".join(sorted(set(scopes))),
            "exp": int(self._clock() + lifetime),
        }
        payload = _encode(json.dumps(claims, separators=(",", ":")).encode())
        return f"{_PREFIX}.{payload}.{self._sign(payload)}"

    async def verify(self, token: str) -> Principal:
        prefix, _, rest = token.partition(".")
        payload, _, signature = rest.partition(".")
        if prefix != _PREFIX or not payload or not signature:
            raise InvalidToken("not a development token (DevTokens.issue() makes them)")
        if not hmac.compare_digest(signature, self._sign(payload)):
            raise InvalidToken("the development token's signature does not verify (another secret?)")
        claims = json.loads(_decode(payload))
        if claims.get("aud") != self.resource:
            raise InvalidToken("the token was issued for another resource (aud)")
        principal = Principal(
            claims.get("sub"),
            client_id=None,
            issuer=self.issuer,
            scopes=claims.get("scope", "").split(),
            expires_at=float(claims["exp"]),
            audience=(self.resource,),
            claims=claims,
        )
        if principal.expired(self._clock()):
            raise InvalidToken("the token has expired")
        return principal

    def _sign(self, payload: str) -> str:
        return _encode(hmac.new(self._key, payload.encode(), hashlib.sha256).digest())
