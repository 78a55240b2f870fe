"""CORS for the MCP endpoints, so that a web page on an origin you allow can be an MCP client.

Off by default (``HttpTransportOptions.cors_origins`` is empty): no preflight is answered and no response
carries a CORS header, exactly as before. With origins listed, a preflight (``OPTIONS`` with ``Origin`` and
``Access-Control-Request-Method``) from one of them is answered 204 with the MCP methods and headers allowed,
and every response to it names the origin and exposes ``Mcp-Session-Id``, ``Mcp-Protocol-Version`` and
``WWW-Authenticate``. A preflight from any other origin gets 403. The allowed origins are exact
(``scheme://host[:port]``), never a wildcard, and are also accepted by the ``Origin`` check (``guard.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final
from urllib.parse import urlsplit

from ..._core.hosts import parse_host
from .._http_types import Headers
from .exchange import Request, Response, ResponseWithHeaders

__all__ = ["ALLOWED_HEADERS", "EXPOSED_HEADERS", "Cors", "CorsResponse", "normal_origin"]

#: Request headers a page may send to the MCP endpoints (``Mcp-Param-*`` too, by prefix).
ALLOWED_HEADERS: Final = frozenset(
    {
        "accept",
        "authorization",
        "content-type",
        "dpop",
        "last-event-id",
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
        "mcp-session-id",
    }
)
_ALLOWED_PREFIX: Final = "mcp-param-"
#: Response headers a page may read.
EXPOSED_HEADERS: Final = "mcp-session-id, mcp-protocol-version, www-authenticate, dpop-nonce"
_METHODS: Final = "GET, POST, DELETE, OPTIONS"
#: How long (seconds) a browser may cache a preflight answer.
_MAX_AGE: Final = "600"


def normal_origin(origin: str) -> str | None:
    """``origin`` as browsers send it (``scheme://host[:port]``, lower case), or None if it is not one."""
    text = origin.strip().lower()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    host = parse_host(parts.netloc)
    if host is None:
        return None
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def validate_origins(origins: Sequence[str]) -> tuple[str, ...]:
    """The ``cors_origins`` option, checked: a ``ValueError``/``TypeError`` naming it, at the call."""
    if isinstance(origins, (str, bytes)) or not isinstance(origins, Sequence):
        raise TypeError(f"cors_origins must be a sequence of origins, not {origins!r}")
    checked = []
    for origin in origins:
        normal = normal_origin(origin) if isinstance(origin, str) else None
        if normal is None:
            raise ValueError(
                f"cors_origins: {origin!r} is not an origin such as 'https://app.example' "
                "(scheme and host, an optional port, nothing else; no wildcard)"
            )
        checked.append(normal)
    return tuple(checked)


class Cors:
    """The allow-list and the answers built from it."""

    def __init__(self, origins: Sequence[str]) -> None:
        self.origins = frozenset(validate_origins(origins))

    def allowed(self, headers: Headers) -> str | None:
        """The request's ``Origin`` when it is one of the allowed origins (exactly one field), else None."""
        if not self.origins:
            return None
        values = headers.get_all("origin")
        if len(values) != 1:
            return None
        normal = normal_origin(values[0])
        return values[0] if normal is not None and normal in self.origins else None

    @staticmethod
    def is_preflight(request: Request) -> bool:
        return (
            request.method == "OPTIONS"
            and "origin" in request.headers
            and ("access-control-request-method" in request.headers)
        )

    async def preflight(self, request: Request, response: Response) -> None:
        """Answer a preflight: 204 with what may be sent, or 403 for an origin (or a header) not allowed."""
        origin = self.allowed(request.headers)
        asked = [
            name.strip().lower() for name in (request.headers.get("access-control-request-headers") or "").split(",")
        ]
        asked = [name for name in asked if name]
        if origin is None or not all(name in ALLOWED_HEADERS or name.startswith(_ALLOWED_PREFIX) for name in asked):
            await response.send(
                403,
                (("content-type", "text/plain"), ("vary", "origin")),
                b"CORS preflight refused: origin or headers not allowed\n",
            )
            return
        await response.send(
            204,
            (
                ("access-control-allow-origin", origin),
                ("access-control-allow-methods", _METHODS),
                ("access-control-allow-headers", ", ".join(asked) if asked else "content-type"),
                ("access-control-max-age", _MAX_AGE),
                ("vary", "origin"),
            ),
        )


class CorsResponse(ResponseWithHeaders):
    """A response to an allowed origin: every head it sends names the origin and exposes the MCP headers."""

    __slots__ = ()

    def __init__(self, inner: Response, origin: str) -> None:
        super().__init__(
            inner,
            [
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"access-control-expose-headers", EXPOSED_HEADERS.encode("ascii")),
                (b"vary", b"origin"),
            ],
        )
