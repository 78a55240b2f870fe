"""What a resource server learns from an access token, and the one interface every verifier implements."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from ..errors import TrioMcpError

__all__ = ["CallableVerifier", "InvalidToken", "Principal", "TokenVerifier", "VerifierUnavailable", "scopes_of"]


def _frozen_strings(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


def _string_tuple(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class Principal:
    """Who an access token speaks for (``ctx.principal`` in a handler).

    Equality is identity only (``subject``, ``client_id``, ``issuer``): a session stays bound to its caller
    across refreshed tokens, whose scopes and expiry differ.
    """

    subject: str | None
    client_id: str | None = None
    issuer: str | None = None
    #: The scopes the token grants.
    scopes: frozenset[str] = attrs.field(default=frozenset(), eq=False, converter=_frozen_strings)
    #: When the token expires (seconds since the epoch), if it says.
    expires_at: float | None = attrs.field(default=None, eq=False)
    #: The resources the token was issued for (``aud``).
    audience: tuple[str, ...] = attrs.field(default=(), eq=False, converter=_string_tuple)
    #: The RFC 7638 thumbprint of the key a DPoP-bound token is bound to (``cnf.jkt``), else None.
    key_thumbprint: str | None = attrs.field(default=None, eq=False)
    #: Every claim (JWT) or introspection field, for what the fields above leave out.
    claims: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)

    def expired(self, now: float | None = None) -> bool:
        return self.expires_at is not None and (time.time() if now is None else now) >= self.expires_at


class InvalidToken(TrioMcpError):
    """An access token was refused; the message says why and never contains the token."""


class VerifierUnavailable(TrioMcpError):
    """A token could not be checked now (the authorization server's keys or introspection endpoint cannot be
    reached): not the client's fault, so the request is answered 503, not 401."""


class TokenVerifier(Protocol):
    """Checks an access token: returns who it speaks for, or raises ``InvalidToken`` (or ``VerifierUnavailable``
    when it cannot tell now).

    Implementations: ``JwtVerifier`` (signed JWTs against the issuer's keys), ``IntrospectionVerifier``
    (RFC 7662), ``CallableVerifier`` (your own function).
    """

    async def verify(self, token: str) -> Principal: ...


def scopes_of(value: Any) -> frozenset[str]:
    """Scopes from a ``scope`` string (space-separated) or a ``scp`` list."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return frozenset(value)
    return frozenset()


class CallableVerifier:
    """A ``TokenVerifier`` from a function: ``async (token) -> Principal | None`` (None refuses the token).

    ``audience``, when given, is checked against the principal's: a token for another resource is refused.
    """

    def __init__(
        self, check: Callable[[str], Awaitable[Principal | None]], *, audience: str | Sequence[str] | None = None
    ) -> None:
        self._check = check
        self._audience = None if audience is None else ({audience} if isinstance(audience, str) else set(audience))

    async def verify(self, token: str) -> Principal:
        principal = await self._check(token)
        if principal is None:
            raise InvalidToken("the token was refused")
        if principal.expired():
            raise InvalidToken("the token has expired")
        if self._audience is not None and not self._audience.intersection(principal.audience):
            raise InvalidToken("the token was issued for another resource")
        return principal
