"""The gate in front of every HTTP-borne transport: ``Host`` and ``Origin`` (DNS rebinding) and bearer tokens.

Hosts are parsed by ``trio_mcp._core.hosts.parse_host`` (strict: ``[::1].evil.example`` or
``localhost:8000.evil.example`` are invalid, never local). The Streamable HTTP endpoint and the WebSocket
server both use ``Guard``.
"""

from __future__ import annotations

import contextvars
import ipaddress
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

import attrs

from ..._core.hosts import parse_host
from ..._core.inbound import NOT_DECODED
from ..._core.jsonrpc import decode
from ..._identity import caller_key
from .exchange import Request, Response

__all__ = [
    "LOCAL_NAMES",
    "Guard",
    "Refused",
    "RequestGuard",
    "ScopesFor",
    "decoded_message",
    "is_loopback",
    "parse_host",
    "posted_message",
]

#: The names a local server answers to, as ``parse_host`` returns them.
LOCAL_NAMES: Final = frozenset({"localhost", "127.0.0.1", "[::1]"})


#: The request whose body was decoded last in this task, and its message: the guard's scope check and the inbound
#: check read one body, decoded once.
_decoded: contextvars.ContextVar[tuple[Request, Any] | None] = contextvars.ContextVar(
    "trio_mcp_decoded_body", default=None
)


async def posted_message(request: Request) -> Any:
    """``request``'s body as ``jsonrpc.decode`` gives it (an ``InvalidMessage`` for what is not JSON), decoded once
    for the request; raises what ``read_body`` raises."""
    held = _decoded.get()
    if held is not None and held[0] is request:
        return held[1]
    message = decode(await request.read_body())
    _decoded.set((request, message))
    return message


def decoded_message(request: Request) -> Any:
    """What ``posted_message`` decoded of ``request``'s body, or ``NOT_DECODED`` if nothing did."""
    held = _decoded.get()
    return held[1] if held is not None and held[0] is request else NOT_DECODED


def is_loopback(bound_host: str) -> bool:
    """Whether a server bound to ``bound_host`` is reachable from this machine only."""
    return bound_host in ("localhost", "::1") or bound_host.startswith("127.")


def _normal(name: str) -> str:
    """An allow-list entry as ``parse_host`` would spell it (``::1`` becomes ``[::1]``)."""
    name = name.strip().lower().rstrip("/")
    try:
        return f"[{ipaddress.IPv6Address(name)}]"
    except ValueError:
        return name


ScopesFor = Callable[[str, Mapping[str, Any]], Collection[str]]
"""``(method, params) -> the scopes a request needs`` (``Server.required_scopes``)."""


class RequestGuard(Protocol):
    """Authorization in front of the endpoints (``trio_mcp.auth.ResourceServerAuth``): it answers the paths of
    ``metadata_paths`` itself, and admits a request (returns its principal) or answers it and returns None.

    ``scopes_for`` says what the request's message needs (the server's ``scopes=``), so that a missing scope is
    answered 403 before the request reaches the server. ``aclose()`` releases what the guard holds (its
    verifier's connections to the authorization server) when the app stops serving.
    """

    def metadata_paths(self, endpoint_path: str) -> tuple[str, ...]: ...

    async def __call__(
        self, request: Request, response: Response, endpoint_path: str, scopes_for: ScopesFor | None
    ) -> Any: ...

    def response_headers(self, request: Request) -> Sequence[tuple[str, str]]:
        """Headers the response to an admitted request carries (a fresh ``DPoP-Nonce``)."""
        ...

    async def aclose(self) -> None: ...


@attrs.frozen
class Refused:
    """Why the guard turned a request away, and the HTTP status to answer with."""

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...] = ()


class Guard:
    """Checks ``Host`` against an allow-list (None: any valid host), ``Origin`` against another (requests
    without ``Origin`` pass), and an optional bearer token."""

    def __init__(
        self,
        *,
        allowed_hosts: Sequence[str] | None,
        allowed_origins: Sequence[str],
        authenticate: Callable[[str], Awaitable[Any]] | None = None,
    ) -> None:
        self.allowed_hosts = None if allowed_hosts is None else frozenset(_normal(h) for h in allowed_hosts)
        self.allowed_origins = frozenset(_normal(o) for o in allowed_origins)
        self.authenticate = authenticate

    @classmethod
    def for_server(
        cls,
        bound_host: str,
        *,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        authenticate: Callable[[str], Awaitable[Any]] | None = None,
    ) -> Guard:
        """The safe defaults: local hosts only when bound to loopback, local origins only unless told otherwise."""
        if allowed_hosts is None and is_loopback(bound_host):
            allowed_hosts = tuple(LOCAL_NAMES)
        origins = allowed_origins if allowed_origins is not None else tuple(LOCAL_NAMES)
        return cls(allowed_hosts=allowed_hosts, allowed_origins=origins, authenticate=authenticate)

    def check_host(self, values: Sequence[str]) -> Refused | None:
        """``values``: every ``Host`` field received. Several, or an invalid one, is 400; a foreign one 421."""
        if len(values) > 1:
            return Refused(400, "Bad Request: more than one Host header")
        if not values:
            return None if self.allowed_hosts is None else Refused(421, "Misdirected Request: no Host header")
        host = parse_host(values[0])
        if host is None:
            return Refused(400, f"Bad Request: invalid Host header {values[0]!r}")
        return self.check_parsed_host(host, values[0])

    def check_parsed_host(self, host: str | None, raw: str | None) -> Refused | None:
        """The allow-list check for a host already parsed (``HttpRequest.host``); ``raw`` is the header as sent."""
        if self.allowed_hosts is None:
            return None
        if host is None:
            return Refused(421, "Misdirected Request: no Host header")
        if host not in self.allowed_hosts:
            return Refused(421, f"Invalid Host header: {raw!r}")
        return None

    def check_origin(self, values: Sequence[str]) -> Refused | None:
        """``values``: every ``Origin`` field received. Absent passes; several or a foreign one is 403."""
        if not values:
            return None
        if len(values) > 1:
            return Refused(403, "more than one Origin header")
        if not self.origin_allowed(values[0]):
            return Refused(403, f"Invalid Origin header: {values[0]!r}")
        return None

    def origin_allowed(self, origin: str) -> bool:
        """A full origin in the allow-list, or an http(s) origin whose host is (any port)."""
        lowered = origin.strip().lower().rstrip("/")
        if lowered in self.allowed_origins:
            return True
        try:
            parts = urlsplit(lowered)
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or parts.path or parts.query or parts.fragment:
            return False
        host = parse_host(parts.netloc)
        return host is not None and host in self.allowed_origins

    async def principal(self, authorization: str | None) -> tuple[Any, Refused | None]:
        """Who the bearer token says the caller is (None without authentication), or a 401 refusal."""
        if self.authenticate is None:
            return None, None
        scheme, _, token = (authorization or "").partition(" ")
        principal = await self.authenticate(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        if principal is None:
            return None, Refused(
                401, "Unauthorized: a valid bearer token is required", (("www-authenticate", 'Bearer realm="mcp"'),)
            )
        caller_key(principal)  # one that cannot be keyed alike in every process is refused now (TypeError)
        return principal, None
