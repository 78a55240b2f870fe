"""RFC 7662 token introspection: ask the authorization server whether a token is active.

Answers are cached until the token's ``exp`` (at most ``max_cache_seconds``, and never past it), keyed by a
SHA-256 of the token so the cache holds no token. No signature is involved: this works without the
``auth`` extra, for opaque tokens.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from ..transports._client.h11client import HttpClient
from ._http import FORM, HttpFailure, post
from ._jwt import principal_from_claims
from ._tokens import InvalidToken, Principal, VerifierUnavailable

__all__ = ["IntrospectionVerifier"]


class IntrospectionVerifier:
    """A ``TokenVerifier`` that asks ``endpoint`` (RFC 7662), authenticating as ``client_id``/``client_secret``
    (``client_secret_basic``).

    ``audience`` (this resource's canonical URI, or several) must appear in the answer's ``aud``; a token
    for another resource is refused. ``issuer``, when given, must equal the answer's ``iss`` if it has one.
    Without ``http``, it asks with an HTTP client of its own, closed by ``aclose()`` (which the server calls when
    it stops serving).
    """

    def __init__(
        self,
        endpoint: str,
        *,
        client_id: str,
        client_secret: str,
        audience: str | Sequence[str],
        issuer: str | None = None,
        max_cache_seconds: float = 300.0,
        max_cache_entries: int = 10000,
        http: HttpClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.endpoint = endpoint
        pair = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
        self._authorization = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        self.audience = {audience} if isinstance(audience, str) else set(audience)
        if not self.audience:
            raise ValueError("audience must name this resource")
        self.issuer = issuer
        self.max_cache_seconds = max_cache_seconds
        self.max_cache_entries = max_cache_entries
        self._http = http
        self._own_http = http is None
        self._clock = clock
        self._cache: dict[bytes, tuple[float, Principal]] = {}

    async def aclose(self) -> None:
        if self._own_http and self._http is not None:
            await self._http.aclose()
            self._http = None

    async def verify(self, token: str) -> Principal:
        key = hashlib.sha256(token.encode()).digest()
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None:
            if now < cached[0]:
                return cached[1]
            del self._cache[key]
        answer = await self._introspect(token)
        if answer.get("active") is not True:
            raise InvalidToken("the authorization server says the token is not active")
        principal = principal_from_claims(answer)
        if principal.expired(now):
            raise InvalidToken("the token has expired")
        if not self.audience.intersection(principal.audience):
            raise InvalidToken("the token was issued for another resource (aud)")
        if self.issuer is not None and principal.issuer is not None and principal.issuer != self.issuer:
            raise InvalidToken("the token was issued by another issuer (iss)")
        until = now + self.max_cache_seconds
        if principal.expires_at is not None:
            until = min(until, principal.expires_at)
        if len(self._cache) >= self.max_cache_entries:
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
            while len(self._cache) >= self.max_cache_entries:
                self._cache.pop(next(iter(self._cache)))
        self._cache[key] = (until, principal)
        return principal

    async def _introspect(self, token: str) -> dict[str, Any]:
        if self._http is None:
            self._http = HttpClient()
        body = urlencode({"token": token, "token_type_hint": "access_token"}).encode()
        try:
            status, document, _ = await post(
                self._http, self.endpoint, body, FORM, [("authorization", self._authorization)]
            )
        except HttpFailure as exc:
            raise VerifierUnavailable(f"introspection failed: {exc}") from None
        if status != 200 or not isinstance(document, dict):
            raise VerifierUnavailable(f"introspection failed (HTTP {status})")
        return document
