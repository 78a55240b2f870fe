"""The identity provider behind the facade, as data: ``Upstream`` and presets for the providers teams use.

An ``Upstream`` is one client pre-registered at the provider (its id and secret) and the provider's endpoints,
given directly or found through OpenID Connect discovery at the first authorization. Identity comes from the
ID token of the code exchange (OpenID Connect: taken from the provider's token endpoint over TLS, which
OpenID Connect Core §3.1.3.7 accepts in place of a signature check), else from ``identity_endpoint`` (the
userinfo endpoint, or GitHub's user API).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

__all__ = ["Upstream", "auth0", "entra_id", "github", "google", "keycloak", "oidc", "okta"]

TokenAuth = Literal["client_secret_basic", "client_secret_post"]


def _strings(value: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        raise TypeError(f"expected a sequence of strings, not one string: {value!r}")
    return tuple(value)


@attrs.frozen(kw_only=True)
class Upstream:
    """The provider the facade sends users to, and the client it is registered there as.

    Either ``discovery`` (an OpenID Connect issuer whose metadata names the endpoints) or
    ``authorization_endpoint`` and ``token_endpoint`` (with ``identity_endpoint`` when the provider issues no
    ID token) must be given.
    """

    #: A name for logs and the consent page ("Entra ID", "GitHub").
    name: str
    client_id: str
    client_secret: str | None = attrs.field(default=None, repr=False)
    #: The scopes asked of the provider (not those of the MCP server, which the facade grants itself).
    scopes: tuple[str, ...] = attrs.field(default=("openid", "profile", "email"), converter=_strings)
    #: An OpenID Connect issuer: endpoints not given are read from its discovery document.
    discovery: str | None = None
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    #: Where the user's identity is read with the upstream access token (userinfo, or a user API).
    identity_endpoint: str | None = None
    #: The identity field that names the user (``sub``; GitHub's numeric ``id``).
    subject_field: str = "sub"
    #: The issuer ID tokens must name (taken from discovery when not given).
    issuer: str | None = None
    #: Other spellings of the issuer an ID token may carry (Google's ``accounts.google.com``).
    issuer_aliases: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    #: How the facade authenticates at the token endpoint.
    token_auth: TokenAuth = "client_secret_basic"
    #: Whether to forward the RFC 8707 ``resource`` parameter (Entra ID's v2 endpoints refuse it).
    send_resource: bool = False
    #: Whether the provider takes PKCE (S256) from the facade (all presets do).
    pkce: bool = True
    #: Extra parameters of the authorization request (``{"access_type": "offline"}`` for Google).
    authorize_params: Mapping[str, str] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if not self.client_id:
            raise ValueError("client_id must name the client registered at the provider")
        if self.discovery is None and (self.authorization_endpoint is None or self.token_endpoint is None):
            raise ValueError("give discovery (an OpenID Connect issuer) or authorization_endpoint and token_endpoint")
        if self.token_auth not in ("client_secret_basic", "client_secret_post"):
            raise ValueError(f"token_auth must be client_secret_basic or client_secret_post, not {self.token_auth!r}")

    def resolved(self, document: Mapping[str, Any]) -> Upstream:
        """This upstream with the endpoints it lacks taken from a discovery ``document``."""

        def pick(mine: str | None, field: str) -> str | None:
            value = document.get(field)
            return mine if mine is not None else value if isinstance(value, str) else None

        return attrs.evolve(
            self,
            authorization_endpoint=pick(self.authorization_endpoint, "authorization_endpoint"),
            token_endpoint=pick(self.token_endpoint, "token_endpoint"),
            identity_endpoint=pick(self.identity_endpoint, "userinfo_endpoint"),
            issuer=pick(self.issuer, "issuer"),
            discovery=None,
        )


def oidc(issuer: str, *, client_id: str, client_secret: str | None = None, **options: Any) -> Upstream:
    """Any OpenID Connect provider, its endpoints found by discovery at ``issuer``."""
    return Upstream(
        name=options.pop("name", issuer), client_id=client_id, client_secret=client_secret, discovery=issuer, **options
    )


def entra_id(tenant: str, *, client_id: str, client_secret: str | None = None, **options: Any) -> Upstream:
    """Microsoft Entra ID, v2 endpoints of ``tenant`` (a tenant id, or ``organizations``/``common``). The
    ``resource`` parameter is never sent (v2 refuses it); ``offline_access`` gives the facade refresh tokens."""
    issuer = f"https://login.microsoftonline.com/{tenant}/v2.0"
    return _oidc_preset("Entra ID", issuer, client_id, client_secret, {**options, "send_resource": False})


def google(*, client_id: str, client_secret: str | None = None, **options: Any) -> Upstream:
    """Google accounts (OpenID Connect); ``access_type=offline`` asks for a refresh token."""
    options.setdefault("authorize_params", {"access_type": "offline", "prompt": "consent"})
    options.setdefault("issuer_aliases", ("accounts.google.com",))  # Google's ID tokens use either spelling
    return oidc(
        "https://accounts.google.com",
        client_id=client_id,
        client_secret=client_secret,
        name=options.pop("name", "Google"),
        token_auth="client_secret_post",
        **options,
    )


def github(
    *, client_id: str, client_secret: str | None = None, base_url: str = "https://github.com", **options: Any
) -> Upstream:
    """GitHub (OAuth apps and GitHub Apps): not OpenID Connect; the user is read from its user API (the
    numeric ``id`` is the subject), tokens are opaque. ``base_url`` names a GitHub Enterprise Server."""
    base = base_url.rstrip("/")
    api = "https://api.github.com" if base == "https://github.com" else f"{base}/api/v3"
    options.setdefault("identity_endpoint", f"{api}/user")
    options.setdefault("scopes", ("read:user",))
    return Upstream(
        name=options.pop("name", "GitHub"),
        client_id=client_id,
        client_secret=client_secret,
        authorization_endpoint=f"{base}/login/oauth/authorize",
        token_endpoint=f"{base}/login/oauth/access_token",
        subject_field="id",
        token_auth="client_secret_post",
        **options,
    )


def _oidc_preset(name: str, issuer: str, client_id: str, client_secret: str | None, options: Any) -> Upstream:
    """An OpenID Connect preset: ``offline_access`` asked for by default, so that the facade can refresh."""
    options.setdefault("scopes", ("openid", "profile", "email", "offline_access"))
    options.setdefault("name", name)
    return oidc(issuer, client_id=client_id, client_secret=client_secret, **options)


def okta(domain: str, *, client_id: str, client_secret: str | None = None, **options: Any) -> Upstream:
    """Okta: the ``default`` custom authorization server of ``domain`` (``server=`` names another)."""
    issuer = f"https://{domain}/oauth2/{options.pop('server', 'default')}"
    return _oidc_preset("Okta", issuer, client_id, client_secret, options)


def auth0(domain: str, *, client_id: str, client_secret: str | None = None, **options: Any) -> Upstream:
    """Auth0, tenant ``domain`` (``example.eu.auth0.com``)."""
    return _oidc_preset("Auth0", f"https://{domain}/", client_id, client_secret, options)


def keycloak(
    base_url: str, realm: str, *, client_id: str, client_secret: str | None = None, **options: Any
) -> Upstream:
    """Keycloak, ``realm`` of the server at ``base_url``."""
    issuer = f"{base_url.rstrip('/')}/realms/{realm}"
    return _oidc_preset("Keycloak", issuer, client_id, client_secret, options)
