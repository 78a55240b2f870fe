"""The discovery documents and challenges of MCP authorization, as pure functions (no I/O).

Protected Resource Metadata (RFC 9728) and its well-known URLs, authorization server metadata URLs
(RFC 8414 and OpenID Connect, in the order the MCP specification gives), and ``WWW-Authenticate``
challenges (RFC 6750 ``Bearer``, RFC 9449 ``DPoP``) both ways.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

__all__ = [
    "PRM_WELL_KNOWN",
    "authorization_server_metadata_urls",
    "challenge",
    "origin_of",
    "parse_www_authenticate",
    "protected_resource_metadata",
    "protected_resource_metadata_paths",
    "protected_resource_metadata_urls",
]

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def protected_resource_metadata_paths(endpoint_path: str) -> tuple[str, str]:
    """Where a server whose MCP endpoint is at ``endpoint_path`` serves its PRM: the path-inserted
    well-known URI (RFC 9728 §3.1) first, then the root form that clients fall back to."""
    path = endpoint_path.rstrip("/")
    return (PRM_WELL_KNOWN + path, PRM_WELL_KNOWN) if path else (PRM_WELL_KNOWN, PRM_WELL_KNOWN)


def protected_resource_metadata_urls(server_url: str, resource_metadata: str | None = None) -> list[str]:
    """Where a client looks for PRM, in order: the challenge's URL, the path-inserted URL, the root one."""
    urls: list[str] = []
    if resource_metadata:
        urls.append(urljoin(server_url, resource_metadata))
    origin = origin_of(server_url)
    urls.extend(origin + path for path in protected_resource_metadata_paths(urlsplit(server_url).path))
    return list(dict.fromkeys(urls))


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """RFC 8414 and OpenID Connect discovery URLs for ``issuer``, in the order the MCP specification gives."""
    origin = origin_of(issuer)
    path = urlsplit(issuer).path.rstrip("/")
    if path:
        return [
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}/.well-known/openid-configuration{path}",
            f"{origin}{path}/.well-known/openid-configuration",
        ]
    return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]


def protected_resource_metadata(
    resource: str,
    authorization_servers: Sequence[str],
    *,
    scopes_supported: Sequence[str] | None = None,
    dpop_algorithms: Sequence[str] | None = None,
    dpop_bound_only: bool = False,
    resource_name: str | None = None,
) -> dict[str, Any]:
    """The PRM document (RFC 9728 §2) of an MCP server whose canonical URI is ``resource``."""
    document: dict[str, Any] = {
        "resource": resource,
        "authorization_servers": list(authorization_servers),
        "bearer_methods_supported": ["header"],
    }
    if scopes_supported is not None:
        document["scopes_supported"] = list(scopes_supported)
    if dpop_algorithms:
        document["dpop_signing_alg_values_supported"] = list(dpop_algorithms)
        if dpop_bound_only:
            document["dpop_bound_access_tokens_required"] = True
    if resource_name:
        document["resource_name"] = resource_name
    return document


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def challenge(scheme: str, params: Iterable[tuple[str, str | None]]) -> str:
    """One ``WWW-Authenticate`` challenge: ``Bearer resource_metadata="...", scope="..."`` (None values left out)."""
    parts = [f"{name}={_quoted(value)}" for name, value in params if value is not None]
    return f"{scheme} {', '.join(parts)}" if parts else scheme


_PARAM = re.compile(r'\s*([A-Za-z0-9_\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))\s*,?')


def parse_www_authenticate(header: str | None, schemes: Sequence[str] = ("bearer", "dpop")) -> dict[str, str]:
    """The parameters of the first ``Bearer`` or ``DPoP`` challenge (``resource_metadata``, ``scope``,
    ``error``...), with ``scheme`` added (lower case); {} when there is none."""
    if not header:
        return {}
    match = re.search(r"(?i)(?:^|[\s,])(" + "|".join(schemes) + r")(?:\s|$)", header)
    if match is None:
        return {}
    params: dict[str, str] = {"scheme": match.group(1).lower()}
    rest = header[match.end() :]
    position = 0
    while position < len(rest):
        found = _PARAM.match(rest, position)
        if found is None or found.end() == position:
            break
        name = found.group(1).lower()
        if found.group(2) is not None:
            value = re.sub(r"\\(.)", r"\1", found.group(2))
        else:
            value = found.group(3)
        params.setdefault(name, value)
        position = found.end()
    return params
