"""The facade as a client of its upstream provider: discovery, the authorization URL, the code exchange and
the user's identity. Its tokens stay here, on the server side."""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import trio

from ...transports._client.h11client import HttpClient
from .._http import FORM, HttpFailure, fetch_json, post
from .._metadata import authorization_server_metadata_urls
from ._providers import Upstream

__all__ = ["UpstreamClient", "UpstreamError"]

logger = logging.getLogger("trio_mcp.auth.facade")

_TENANT = "{tenantid}"


class UpstreamError(Exception):
    """The provider could not be used (discovery, the code exchange, the identity); the message says why,
    without secrets."""


def _id_token_claims(token: str) -> dict[str, Any]:
    """The claims of an ID token received from the token endpoint itself (OIDC Core §3.1.3.7: TLS in place of a
    signature check); its ``iss``, ``aud`` and ``exp`` are checked by the caller."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        raise UpstreamError("the provider's ID token is malformed") from None
    if not isinstance(claims, dict):
        raise UpstreamError("the provider's ID token is malformed")
    return claims


class UpstreamClient:
    """One upstream provider, its discovery document read once."""

    def __init__(self, upstream: Upstream, http: HttpClient) -> None:
        self._configured = upstream
        self._resolved: Upstream | None = None if upstream.discovery else upstream
        self._http = http
        self._lock = trio.Lock()

    async def provider(self) -> Upstream:
        """The upstream with every endpoint known (discovery on first use; retried after a failure)."""
        if self._resolved is not None:
            return self._resolved
        async with self._lock:
            if self._resolved is None:
                issuer = self._configured.discovery
                assert issuer is not None
                document = await self._discover(issuer)
                resolved = self._configured.resolved(document)
                if resolved.authorization_endpoint is None or resolved.token_endpoint is None:
                    raise UpstreamError(f"the discovery document of {issuer} names no authorization/token endpoint")
                self._resolved = resolved
            return self._resolved

    async def _discover(self, issuer: str) -> Mapping[str, Any]:
        failures = []
        for url in authorization_server_metadata_urls(issuer):
            try:
                status, document = await fetch_json(self._http, url)
            except HttpFailure as exc:
                failures.append(str(exc))
                continue
            if status == 200 and isinstance(document, dict):
                named = str(document.get("issuer", ""))
                # Entra ID's multi-tenant endpoints (common, organizations) name a template: each ID token's
                # issuer is it with the user's tenant, checked in identity().
                if named.rstrip("/") != issuer.rstrip("/") and _TENANT not in named:
                    raise UpstreamError(f"the discovery document at {url} names another issuer")
                return document
            failures.append(f"{url}: HTTP {status}")
        raise UpstreamError(f"no discovery document for {issuer} ({'; '.join(failures)})")

    async def authorization_url(self, *, redirect_uri: str, state: str, code_challenge: str, resource: str) -> str:
        provider = await self.provider()
        params = {
            "response_type": "code",
            "client_id": provider.client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(provider.scopes),
            "state": state,
            **provider.authorize_params,
        }
        if provider.pkce:
            params.update(code_challenge=code_challenge, code_challenge_method="S256")
        if provider.send_resource:
            params["resource"] = resource
        assert provider.authorization_endpoint is not None
        separator = "&" if "?" in provider.authorization_endpoint else "?"
        return provider.authorization_endpoint + separator + urlencode(params)

    async def exchange(self, *, code: str, redirect_uri: str, code_verifier: str) -> dict[str, Any]:
        """Redeem the provider's code: its token response."""
        provider = await self.provider()
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
        if provider.pkce:
            form["code_verifier"] = code_verifier
        return await self._token_request(provider, form)

    async def refresh(self, refresh_token: str) -> dict[str, Any]:
        """New upstream tokens from the upstream refresh token."""
        provider = await self.provider()
        return await self._token_request(provider, {"grant_type": "refresh_token", "refresh_token": refresh_token})

    async def _token_request(self, provider: Upstream, form: dict[str, str]) -> dict[str, Any]:
        headers: list[tuple[str, str]] = []
        if provider.token_auth == "client_secret_basic" and provider.client_secret is not None:
            pair = f"{_form_quote(provider.client_id)}:{_form_quote(provider.client_secret)}"
            headers.append(("authorization", "Basic " + base64.b64encode(pair.encode()).decode()))
        else:
            form["client_id"] = provider.client_id
            if provider.client_secret is not None:
                form["client_secret"] = provider.client_secret
        assert provider.token_endpoint is not None
        try:
            status, body, _ = await post(self._http, provider.token_endpoint, urlencode(form).encode(), FORM, headers)
        except HttpFailure as exc:
            raise UpstreamError(str(exc)) from None
        if status != 200 or not isinstance(body, dict) or not isinstance(body.get("access_token"), str):
            error = body.get("error") if isinstance(body, dict) else None
            raise UpstreamError(f"{provider.name}'s token endpoint answered HTTP {status} ({error or 'no token'})")
        return body

    async def identity(self, tokens: Mapping[str, Any]) -> dict[str, Any]:
        """Who signed in: the ID token's claims (checked), else the identity endpoint's answer. The subject is
        the provider's ``subject_field``, as a string, under ``sub``."""
        provider = await self.provider()
        id_token = tokens.get("id_token")
        if isinstance(id_token, str):
            claims = _id_token_claims(id_token)
            audience = claims.get("aud")
            audiences = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
            expected = provider.issuer
            if expected is not None and _TENANT in expected:
                expected = expected.replace(_TENANT, str(claims.get("tid", "")))
            if expected is not None and claims.get("iss") not in (expected, *provider.issuer_aliases):
                raise UpstreamError("the provider's ID token names another issuer")
            if provider.client_id not in audiences:
                raise UpstreamError("the provider's ID token was issued to another client")
            expiry = claims.get("exp")
            if not isinstance(expiry, (int, float)) or expiry < time.time() - 60:
                raise UpstreamError("the provider's ID token has expired")
            claims = {**await self._more_claims(provider, tokens, claims.get("sub")), **claims}
        elif provider.identity_endpoint is not None:
            claims = await self._identity_endpoint(provider, str(tokens["access_token"]))
        else:
            raise UpstreamError(f"{provider.name} gave no ID token and no identity endpoint is configured")
        subject = claims.get(provider.subject_field)
        if isinstance(subject, bool) or not isinstance(subject, (str, int)) or subject == "":
            raise UpstreamError(f"{provider.name}'s identity has no {provider.subject_field!r}")
        return {**claims, "sub": str(subject)}

    async def _more_claims(self, provider: Upstream, tokens: Mapping[str, Any], subject: Any) -> dict[str, Any]:
        """The userinfo claims of the same user (an ID token may carry ``sub`` alone), or none when the
        endpoint cannot be read with this access token (Entra ID's, for a token meant for another API)."""
        if provider.identity_endpoint is None:
            return {}
        try:
            claims = await self._identity_endpoint(provider, str(tokens["access_token"]))
        except UpstreamError as exc:
            logger.debug("no userinfo claims: %s", exc)
            return {}
        return claims if claims.get("sub") == subject else {}

    async def _identity_endpoint(self, provider: Upstream, access_token: str) -> dict[str, Any]:
        assert provider.identity_endpoint is not None
        try:
            status, claims = await fetch_json(
                self._http, provider.identity_endpoint, [("authorization", f"Bearer {access_token}")]
            )
        except HttpFailure as exc:
            raise UpstreamError(f"{provider.name}'s identity endpoint could not be read: {exc}") from None
        if status != 200 or not isinstance(claims, dict):
            raise UpstreamError(f"{provider.name}'s identity endpoint answered HTTP {status}")
        return claims


def _form_quote(value: str) -> str:
    """RFC 6749 §2.3.1: Basic credentials are form-encoded first."""
    return urlencode({"": value})[1:]
