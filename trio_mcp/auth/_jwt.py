"""JWT access tokens (RFC 9068) checked against the issuer's published keys.

The keys come from the issuer's JWKS, found through its metadata (RFC 8414, then OpenID Connect) unless
``jwks_uri`` is given, fetched with trio_mcp's own HTTP client and cached; an unknown ``kid`` refetches them
(at most once per ``refetch_interval``), so key rotation needs no restart. Only asymmetric algorithms from an
allow-list are accepted: ``none`` and the HMAC family never are, so a token "signed" with the public key as an
HMAC secret is refused. ``exp`` (required), ``nbf``, ``iss`` and ``aud`` are checked with ``leeway`` seconds
of clock skew; ``aud`` must name this resource (RFC 8707 audience binding).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Final

import trio

from ..transports._client.h11client import HttpClient
from ._extra import load_jwt
from ._http import HttpFailure, fetch_json
from ._metadata import authorization_server_metadata_urls
from ._tokens import InvalidToken, Principal, VerifierUnavailable, scopes_of

__all__ = ["ASYMMETRIC_ALGORITHMS", "JwtVerifier"]


#: Every algorithm a JwtVerifier may be configured with (public-key signatures only).
ASYMMETRIC_ALGORITHMS: Final = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
_TOKEN_TYPES: Final = frozenset({None, "jwt", "at+jwt", "application/at+jwt"})


class JwtVerifier:
    """A ``TokenVerifier`` for JWT access tokens signed by ``issuer``.

    Args:
        issuer: the authorization server's issuer identifier; tokens must carry it as ``iss``.
        audience: this resource's canonical URI (or several): a token whose ``aud`` names none is refused.
        algorithms: the accepted signature algorithms (a subset of ``ASYMMETRIC_ALGORITHMS``).
        jwks_uri: where the keys are; default: the ``jwks_uri`` of the issuer's metadata.
        leeway: seconds of clock skew allowed on ``exp``, ``nbf`` and ``iat``.
        refetch_interval: the least number of seconds between two JWKS fetches caused by unknown keys.
        cache_seconds: how long fetched keys are used before they are fetched again.
        http: the HTTP client to fetch with (default: one of its own, closed by ``aclose()``, which the server
            calls when it stops serving).
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str | Sequence[str],
        algorithms: Sequence[str] = ("RS256", "ES256", "PS256", "EdDSA"),
        jwks_uri: str | None = None,
        leeway: float = 30.0,
        refetch_interval: float = 30.0,
        cache_seconds: float = 3600.0,
        http: HttpClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        load_jwt("JwtVerifier")  # fail at construction, not at the first request
        bad = set(algorithms) - ASYMMETRIC_ALGORITHMS
        if bad or not algorithms:
            raise ValueError(f"algorithms must be a non-empty subset of {sorted(ASYMMETRIC_ALGORITHMS)}, not {bad}")
        if not 0 <= leeway <= 300:
            raise ValueError("leeway must be between 0 and 300 seconds")
        self.issuer = issuer
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        if not self.audience:
            raise ValueError("audience must name this resource")
        self.algorithms = tuple(algorithms)
        self.jwks_uri = jwks_uri
        self.leeway = leeway
        self.refetch_interval = refetch_interval
        self.cache_seconds = cache_seconds
        self._http = http
        self._own_http = http is None
        self._clock = clock
        self._keys: dict[str | None, list[Any]] = {}
        self._fetched_at: float | None = None
        self._fetched_ok = False
        #: Why the last fetch of the keys failed, for the error that says tokens cannot be checked.
        self._failure = "not fetched yet"
        self._lock = trio.Lock()

    async def aclose(self) -> None:
        if self._own_http and self._http is not None:
            await self._http.aclose()
            self._http = None

    async def verify(self, token: str) -> Principal:
        jwt = load_jwt("JwtVerifier")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("the token is not a well-formed JWT") from None
        algorithm = header.get("alg")
        if algorithm not in self.algorithms:
            raise InvalidToken(f"the token's algorithm {algorithm!r} is not accepted")
        token_type = header.get("typ")
        if (token_type.lower() if isinstance(token_type, str) else token_type) not in _TOKEN_TYPES:
            raise InvalidToken(f"the token's type {token_type!r} is not an access token type")
        kid = header.get("kid")
        keys = await self._keys_for(kid if isinstance(kid, str) else None)
        if not keys:
            if not self._keys and not self._fetched_ok:
                raise VerifierUnavailable(f"the keys of {self.issuer} could not be fetched: {self._failure}")
            raise InvalidToken("the token was signed by a key the issuer does not publish")
        claims: dict[str, Any] | None = None
        failure = "the token's signature does not verify"
        for key in keys:
            if getattr(key, "algorithm_name", algorithm) != algorithm:
                continue
            try:
                claims = jwt.decode(
                    token,
                    key.key,
                    algorithms=[algorithm],
                    audience=self.audience,
                    issuer=self.issuer,
                    leeway=self.leeway,
                    options={"require": ["exp", "iss", "aud"]},
                )
                break
            except jwt.InvalidSignatureError:
                continue
            except jwt.ExpiredSignatureError:
                raise InvalidToken("the token has expired") from None
            except jwt.ImmatureSignatureError:
                raise InvalidToken("the token is not valid yet (nbf/iat)") from None
            except jwt.InvalidAudienceError:
                raise InvalidToken("the token was issued for another resource (aud)") from None
            except jwt.InvalidIssuerError:
                raise InvalidToken("the token was issued by another issuer (iss)") from None
            except jwt.MissingRequiredClaimError as exc:
                raise InvalidToken(f"the token lacks the {exc.claim!r} claim") from None
            except jwt.PyJWTError as exc:
                failure = f"the token is invalid: {type(exc).__name__}"
        if claims is None:
            raise InvalidToken(failure)
        return principal_from_claims(claims)

    async def _keys_for(self, kid: str | None) -> list[Any]:
        """The keys a token names; fetched when unknown (at most once per ``refetch_interval``) and when older
        than ``cache_seconds`` (keys the issuer stopped publishing are then no longer accepted)."""
        if not self._needs_fetch(kid, self._clock()):  # the common case: no lock, no wait
            return self._select(kid)
        async with self._lock:
            now = self._clock()
            if self._needs_fetch(kid, now):
                await self._fetch(now)
        return self._select(kid)

    def _needs_fetch(self, kid: str | None, now: float) -> bool:
        if self._fetched_at is None:
            return True
        age = now - self._fetched_at
        known = kid in self._keys if kid is not None else bool(self._keys)
        return age >= self.cache_seconds or (not known and age >= self.refetch_interval)

    def _select(self, kid: str | None) -> list[Any]:
        if kid is not None:
            return list(self._keys.get(kid, ()))
        return [key for keys in self._keys.values() for key in keys]

    async def _fetch(self, now: float) -> None:
        jwt = load_jwt("JwtVerifier")
        if self._http is None:
            self._http = HttpClient()
        self._fetched_at = now  # a failed fetch also waits refetch_interval before the next one
        try:
            uri = self.jwks_uri or await self._discover_jwks_uri(self._http)
            if uri is None:
                self._failure = f"the metadata of {self.issuer} names no jwks_uri (or another issuer)"
                return
            status, document = await fetch_json(self._http, uri)
        except HttpFailure as exc:  # the issuer cannot be reached: the cause is what the operator needs
            self._failure = str(exc)
            return
        if status != 200 or not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            self._failure = f"the JWKS at {uri} answered HTTP {status}, not a key set"
            return
        keys: dict[str | None, list[Any]] = {}
        for entry in document["keys"]:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except jwt.PyJWTError:
                continue  # a key type or curve this library does not know: not one of ours to accept
            if key.algorithm_name not in self.algorithms:
                continue
            kid = entry.get("kid")
            keys.setdefault(kid if isinstance(kid, str) else None, []).append(key)
        self._keys = keys
        self._fetched_ok = True

    async def _discover_jwks_uri(self, http: HttpClient) -> str | None:
        for url in authorization_server_metadata_urls(self.issuer):
            status, document = await fetch_json(http, url)
            if status == 200 and isinstance(document, dict):
                if str(document.get("issuer", "")).rstrip("/") != self.issuer.rstrip("/"):
                    return None
                uri = document.get("jwks_uri")
                if isinstance(uri, str):
                    self.jwks_uri = uri
                    return uri
                return None
        return None


def principal_from_claims(claims: dict[str, Any]) -> Principal:
    """A ``Principal`` from verified JWT claims or an introspection answer."""
    subject = claims.get("sub")
    client_id = claims.get("client_id", claims.get("azp"))
    issuer = claims.get("iss")
    audience = claims.get("aud")
    expiry = claims.get("exp")
    confirmation = claims.get("cnf")
    thumbprint = confirmation.get("jkt") if isinstance(confirmation, dict) else None
    return Principal(
        subject if isinstance(subject, str) else None,
        client_id if isinstance(client_id, str) else None,
        issuer if isinstance(issuer, str) else None,
        scopes_of(claims.get("scope", claims.get("scp"))),
        float(expiry) if isinstance(expiry, (int, float)) and not isinstance(expiry, bool) else None,
        (audience,) if isinstance(audience, str) else tuple(a for a in audience or () if isinstance(a, str)),
        thumbprint if isinstance(thumbprint, str) else None,
        claims,
    )
