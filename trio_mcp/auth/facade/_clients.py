"""The MCP clients the facade knows: registered dynamically (RFC 7591) or named by the URL of a Client ID
Metadata Document, which is fetched, checked and cached; and their authentication at the token endpoint."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
import time
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote_plus, urlsplit

from ...transports._client.h11client import HttpClient
from .._http import HttpFailure, fetch_json
from ._state import FacadeStore, Record

__all__ = ["ClientError", "authenticate_client", "client_for", "register_client", "valid_redirect_uri"]

AUTH_METHODS: Final = ("none", "client_secret_basic", "client_secret_post")
_GRANTS: Final = frozenset({"authorization_code", "refresh_token"})
_REFUSED_SCHEMES: Final = frozenset({"javascript", "data", "file", "vbscript", "about", "blob"})


class ClientError(Exception):
    """A registration or client refused: ``error`` is the OAuth error code, the message its description."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.status = status


def _loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def valid_redirect_uri(uri: Any) -> bool:
    """An absolute URI without a fragment: https, http on a loopback host, or an app's private-use scheme."""
    if not isinstance(uri, str) or "#" in uri:
        return False
    try:
        parts = urlsplit(uri)
    except ValueError:
        return False
    scheme = parts.scheme.lower()
    if not scheme or scheme in _REFUSED_SCHEMES:
        return False
    if scheme == "https":
        return bool(parts.hostname)
    if scheme == "http":
        return _loopback(parts.hostname)
    return "." in scheme  # RFC 8252 §7.1: a reverse domain name


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


async def register_client(store: FacadeStore, request: Mapping[str, Any], lifetime: float) -> dict[str, Any]:
    """RFC 7591: store a client from its metadata and return the registration response."""
    uris = request.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(valid_redirect_uri(uri) for uri in uris):
        raise ClientError(
            "invalid_redirect_uri", "redirect_uris must list https, loopback http or private-use scheme URIs"
        )
    method = request.get("token_endpoint_auth_method", "client_secret_basic")
    if method not in AUTH_METHODS:
        raise ClientError("invalid_client_metadata", f"token_endpoint_auth_method must be one of {list(AUTH_METHODS)}")
    grants = request.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or not set(grants) <= _GRANTS:
        raise ClientError("invalid_client_metadata", f"grant_types must be among {sorted(_GRANTS)}")
    if request.get("response_types", ["code"]) != ["code"]:
        raise ClientError("invalid_client_metadata", "response_types must be ['code']")
    name = request.get("client_name")
    now = int(time.time())
    client_id = "mcp-" + secrets.token_urlsafe(18)
    record: Record = {
        "client_id": client_id,
        "redirect_uris": uris,
        "token_endpoint_auth_method": method,
        "grant_types": grants,
        "client_name": name[:200] if isinstance(name, str) else None,
    }
    answer: dict[str, Any] = {**record, "client_id_issued_at": now, "response_types": ["code"]}
    if method != "none":
        secret = secrets.token_urlsafe(32)
        record["secret_sha256"] = _hash(secret)
        answer["client_secret"] = secret
        answer["client_secret_expires_at"] = now + int(lifetime)
    if answer["client_name"] is None:
        del answer["client_name"]
    await store.put("client:" + client_id, record, lifetime)
    return answer


def is_document_url(client_id: str, *, allow_http: bool) -> bool:
    """Whether ``client_id`` is a Client ID Metadata Document URL: https with a path (http on a loopback host
    too when ``allow_http``, for local development)."""
    try:
        parts = urlsplit(client_id)
    except ValueError:
        return False
    if parts.fragment or not parts.hostname or parts.path in ("", "/"):
        return False
    return parts.scheme == "https" or (allow_http and parts.scheme == "http" and _loopback(parts.hostname))


async def client_for(
    store: FacadeStore, http: HttpClient, client_id: str, *, documents: bool, allow_http: bool, cache: float
) -> Record:
    """The registration of ``client_id``: stored, or its metadata document fetched and checked (then cached);
    ``ClientError`` when there is none."""
    record = await store.get("client:" + client_id)
    if record is not None:
        return record
    if not documents or not is_document_url(client_id, allow_http=allow_http):
        raise ClientError("invalid_client", "unknown client_id", 401)
    try:
        status, document = await fetch_json(http, client_id)
    except HttpFailure as exc:
        raise ClientError(
            "invalid_client", f"the client's metadata document could not be fetched: {exc}", 401
        ) from None
    if status != 200 or not isinstance(document, dict):
        raise ClientError("invalid_client", f"the client's metadata document answered HTTP {status}", 401)
    if document.get("client_id") != client_id:
        raise ClientError("invalid_client", "the metadata document names another client_id", 401)
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(valid_redirect_uri(uri) for uri in uris):
        raise ClientError("invalid_client", "the metadata document lists no valid redirect_uris", 401)
    if document.get("token_endpoint_auth_method", "none") != "none":
        raise ClientError("invalid_client", "only public clients (token_endpoint_auth_method none) may use a document")
    name = document.get("client_name")
    record = {
        "client_id": client_id,
        "redirect_uris": uris,
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "client_name": name[:200] if isinstance(name, str) else None,
        "document": True,
    }
    await store.put("client:" + client_id, record, cache)
    return record


def presented_credentials(authorization: str, form: Mapping[str, str]) -> tuple[str | None, str | None, str]:
    """(client_id, client_secret, method) from ``Authorization: Basic`` or the form."""
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "basic" and value.strip():
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode()
        except ValueError:
            raise ClientError("invalid_client", "malformed Basic credentials", 401) from None
        name, _, secret = decoded.partition(":")
        return unquote_plus(name), unquote_plus(secret), "client_secret_basic"  # RFC 6749 §2.3.1
    if "client_secret" in form:
        return form.get("client_id"), form["client_secret"], "client_secret_post"
    return form.get("client_id"), None, "none"


def authenticate_client(record: Record, secret: str | None, method: str) -> None:
    """Check the presented credentials against the registration (``ClientError`` 401 when they fail)."""
    registered = record.get("token_endpoint_auth_method", "none")
    if registered == "none":
        if secret is not None:
            raise ClientError("invalid_client", "a public client has no secret", 401)
        return
    expected = record.get("secret_sha256")
    if secret is None or not isinstance(expected, str) or not hmac.compare_digest(_hash(secret), expected):
        raise ClientError("invalid_client", "client authentication failed", 401)
    if method == "none":
        raise ClientError("invalid_client", "client authentication failed", 401)
