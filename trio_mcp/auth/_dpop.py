"""DPoP proofs checked by a resource server (RFC 9449 §4.3, §7, §9; the MCP DPoP extension, SEP-1932).

A request with a DPoP-bound token carries ``Authorization: DPoP <token>`` and one ``DPoP`` header: a JWT
signed by the client's key, whose public half is in its header. Checked here: one proof, ``typ`` dpop+jwt,
an allowed asymmetric ``alg``, no private key in ``jwk``, the signature, ``htm``/``htu`` against this request,
``iat`` within ``max_age``, ``jti`` not seen within the replay window, ``ath`` the hash of the token, the key's
thumbprint equal to the token's ``cnf.jkt``, and (``require_nonce``) a current server nonce.

Server nonces (RFC 9449 §8): each is accepted for ``nonce_lifetime`` seconds from its creation, never longer, and
a new one is made once the current one is half that old. Every response to a DPoP request carries the current
nonce (``ResourceServerAuth`` adds the header), so a client that uses the latest one it saw always holds one with
at least half a lifetime left, and never needs a ``use_dpop_nonce`` round trip while it keeps calling. A new
nonce per response would instead refuse the proofs of a client's concurrent requests, each made with a nonce
that another response had just replaced.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any

from ._extra import load_jwt
from ._jwt import ASYMMETRIC_ALGORITHMS
from ._signing import access_token_hash, htu_of, jwk_thumbprint
from ._tokens import InvalidToken, Principal

__all__ = ["DpopVerifier", "InvalidDpopProof"]


class InvalidDpopProof(InvalidToken):
    """A DPoP proof was refused (``use_nonce``: because it lacks the current server nonce)."""

    def __init__(self, reason: str, *, use_nonce: bool = False) -> None:
        super().__init__(reason)
        self.use_nonce = use_nonce


class DpopVerifier:
    """Checks DPoP proofs for a resource server (give it to ``ResourceServerAuth(dpop=...)``).

    Args:
        algorithms: the proof signature algorithms accepted (asymmetric only).
        max_age: seconds a proof's ``iat`` may lie in the past (or, with ``leeway``, the future).
        require_nonce: demand a server nonce (``DPoP-Nonce``), each accepted for ``nonce_lifetime`` seconds
            after it was made; a new one is made when the current one is half that old.
        max_remembered: most ``jti`` values kept for replay detection (the oldest are forgotten first; each is
            kept only as long as its proof could still be accepted).
    """

    def __init__(
        self,
        *,
        algorithms: Sequence[str] = ("ES256", "ES384", "RS256", "PS256", "EdDSA"),
        max_age: float = 300.0,
        leeway: float = 5.0,
        require_nonce: bool = False,
        nonce_lifetime: float = 300.0,
        max_remembered: int = 100_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        load_jwt("DPoP verification")
        bad = set(algorithms) - ASYMMETRIC_ALGORITHMS
        if bad or not algorithms:
            raise ValueError(f"algorithms must be a non-empty subset of {sorted(ASYMMETRIC_ALGORITHMS)}, not {bad}")
        self.algorithms = tuple(algorithms)
        self.max_age = max_age
        self.leeway = leeway
        self.require_nonce = require_nonce
        self.nonce_lifetime = nonce_lifetime
        self.max_remembered = max_remembered
        self._clock = clock
        self._seen: dict[bytes, float] = {}
        if not nonce_lifetime > 0:
            raise ValueError(f"nonce_lifetime must be a positive number of seconds, not {nonce_lifetime!r}")
        #: The nonces that may still be accepted, newest first, each with the time it was made.
        self._nonces: list[tuple[str, float]] = [(secrets.token_urlsafe(24), clock())]

    def nonce(self) -> str:
        """The current server nonce (for the ``DPoP-Nonce`` header); a new one once it is half its lifetime old."""
        now = self._clock()
        if now - self._nonces[0][1] >= self.nonce_lifetime / 2:
            # The one it replaces stays acceptable for the rest of its lifetime (requests already on their way).
            self._nonces = [(secrets.token_urlsafe(24), now), self._nonces[0]]
        return self._nonces[0][0]

    def _nonce_accepted(self, nonce: Any, now: float) -> bool:
        return isinstance(nonce, str) and any(
            hmac.compare_digest(nonce.encode(), known.encode()) and now - made < self.nonce_lifetime
            for known, made in self._nonces
        )

    def check(self, proof: str | None, *, method: str, url: str, access_token: str, principal: Principal) -> None:
        """Accept the proof of one request, or raise ``InvalidDpopProof`` (the reason never holds the token)."""
        jwt = load_jwt("DPoP verification")
        if not proof:
            raise InvalidDpopProof("the request carries no DPoP proof")
        try:
            header = jwt.get_unverified_header(proof)
        except jwt.PyJWTError:
            raise InvalidDpopProof("the DPoP proof is not a well-formed JWT") from None
        if header.get("typ") != "dpop+jwt":
            raise InvalidDpopProof("the DPoP proof's typ is not dpop+jwt")
        algorithm = header.get("alg")
        if algorithm not in self.algorithms:
            raise InvalidDpopProof(f"the DPoP proof's algorithm {algorithm!r} is not accepted")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict) or "d" in jwk:
            raise InvalidDpopProof("the DPoP proof's jwk is missing or holds a private key")
        try:
            key = jwt.PyJWK(jwk, algorithm)
            claims: dict[str, Any] = jwt.decode(
                proof, key.key, algorithms=[algorithm], options={"verify_exp": False, "verify_iat": False}
            )
        except jwt.PyJWTError:
            raise InvalidDpopProof("the DPoP proof's signature does not verify") from None
        self._check_claims(claims, method, url, access_token)
        try:
            thumbprint = jwk_thumbprint(jwk)
        except ValueError:
            raise InvalidDpopProof("the DPoP proof's jwk is not a public key") from None
        if principal.key_thumbprint is None or not hmac.compare_digest(principal.key_thumbprint, thumbprint):
            raise InvalidDpopProof("the DPoP proof's key is not the one the token is bound to (cnf.jkt)")
        self._remember(claims["jti"], float(claims["iat"]))

    def _check_claims(self, claims: dict[str, Any], method: str, url: str, access_token: str) -> None:
        jti, iat, htu = claims.get("jti"), claims.get("iat"), claims.get("htu")
        if not isinstance(jti, str) or not jti:
            raise InvalidDpopProof("the DPoP proof has no jti")
        if claims.get("htm") != method.upper():
            raise InvalidDpopProof("the DPoP proof's htm is not this request's method")
        if not isinstance(htu, str) or "?" in htu or "#" in htu or htu_of(htu) != htu_of(url):
            raise InvalidDpopProof("the DPoP proof's htu is not this request's URL")
        now = self._clock()
        if (
            not isinstance(iat, (int, float))
            or isinstance(iat, bool)
            or not (now - self.max_age <= iat <= now + self.leeway)
        ):
            raise InvalidDpopProof("the DPoP proof's iat is outside the accepted window")
        ath = claims.get("ath")
        if not isinstance(ath, str) or not hmac.compare_digest(ath, access_token_hash(access_token)):
            raise InvalidDpopProof("the DPoP proof's ath does not match the access token")
        if self.require_nonce:
            self.nonce()  # rotated first if due
            if not self._nonce_accepted(claims.get("nonce"), now):
                raise InvalidDpopProof("the DPoP proof lacks the current server nonce", use_nonce=True)
        if self._digest(jti) in self._seen:
            raise InvalidDpopProof("the DPoP proof was already used (jti replayed)")

    @staticmethod
    def _digest(jti: str) -> bytes:
        return hashlib.sha256(jti.encode()).digest()

    def _remember(self, jti: str, iat: float) -> None:
        now = self._clock()
        if len(self._seen) >= self.max_remembered:
            self._seen = {k: until for k, until in self._seen.items() if until > now}
            while len(self._seen) >= self.max_remembered:
                self._seen.pop(next(iter(self._seen)))
        self._seen[self._digest(jti)] = iat + self.max_age + self.leeway
