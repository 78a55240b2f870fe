"""Client-side signatures: DPoP proofs (RFC 9449) and ``private_key_jwt`` client assertions (RFC 7523 §2.2).

ES256 (P-256) keys, signed by PyJWT on ``cryptography`` (the ``auth`` extra). ``jwk_thumbprint`` is the
RFC 7638 thumbprint a DPoP-bound token's ``cnf.jkt`` carries.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ._extra import load_jwt

__all__ = ["CLIENT_ASSERTION_TYPE", "DpopKey", "access_token_hash", "client_assertion", "htu_of", "jwk_thumbprint"]

CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_THUMBPRINT_MEMBERS = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwk_thumbprint(jwk: Mapping[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK (its required members, sorted, no whitespace)."""
    members = _THUMBPRINT_MEMBERS.get(str(jwk.get("kty")))
    if members is None or any(not isinstance(jwk.get(name), str) for name in members):
        raise ValueError("not a public EC, RSA or OKP JWK")
    canonical = json.dumps({name: jwk[name] for name in members}, separators=(",", ":"), sort_keys=True)
    return _b64(hashlib.sha256(canonical.encode()).digest())


def access_token_hash(token: str) -> str:
    """The ``ath`` claim of a DPoP proof: base64url(SHA-256(access token))."""
    return _b64(hashlib.sha256(token.encode("ascii")).digest())


def htu_of(url: str) -> str:
    """A URL as a DPoP ``htu``: without query and fragment, scheme and host in lower case."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", "", ""))


class DpopKey:
    """A DPoP key pair (ES256): makes a fresh proof for each request. One per client, kept for the lifetime of
    the tokens bound to it (``private_key_pem`` restores a saved one)."""

    algorithm = "ES256"

    def __init__(self, private_key_pem: bytes | None = None) -> None:
        load_jwt("DPoP")
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        if private_key_pem is None:
            self._key: Any = ec.generate_private_key(ec.SECP256R1())
        else:
            self._key = load_pem_private_key(private_key_pem, password=None)
            if not isinstance(self._key, ec.EllipticCurvePrivateKey) or self._key.curve.name != "secp256r1":
                raise ValueError("a DPoP key must be an EC P-256 private key")
        numbers = self._key.public_key().public_numbers()
        # RFC 7518 §6.2.1.2: x and y are the full 32 bytes, leading zeros kept (some PyJWT releases strip them,
        # and a verifier then refuses about one key in a hundred).
        self.public_jwk: dict[str, Any] = {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64(numbers.x.to_bytes(32, "big")),
            "y": _b64(numbers.y.to_bytes(32, "big")),
        }
        self.thumbprint = jwk_thumbprint(self.public_jwk)

    def private_key_pem(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return bytes(
            self._key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )

    def proof(self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None) -> str:
        """A DPoP proof JWT for one request (``htm``, ``htu``, a fresh ``jti``, ``iat``; ``ath`` with a token)."""
        jwt = load_jwt("DPoP")
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": htu_of(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        return str(
            jwt.encode(claims, self._key, algorithm=self.algorithm, headers={"typ": "dpop+jwt", "jwk": self.public_jwk})
        )


def client_assertion(
    private_key_pem: str | bytes, *, client_id: str, audience: str, algorithm: str = "ES256", lifetime: int = 60
) -> str:
    """A ``private_key_jwt`` client assertion (RFC 7523 §2.2): ``iss`` = ``sub`` = the client id, ``aud`` the
    authorization server, short-lived, with a unique ``jti``."""
    jwt = load_jwt("private_key_jwt client authentication")
    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + lifetime,
        "jti": secrets.token_urlsafe(24),
    }
    key = private_key_pem.encode() if isinstance(private_key_pem, str) else private_key_pem
    return str(jwt.encode(claims, key, algorithm=algorithm))
