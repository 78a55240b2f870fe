"""How the MCP HTTP transport behaves: ``HttpTransportOptions`` (and the ``HttpLimits`` it carries)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs

from .._h11server import Drain, HttpLimits
from .cors import validate_origins
from .events import EventStore, MemoryEventStore
from .exchange import RouteHandler
from .guard import RequestGuard
from .roaming import SessionDirectory

__all__ = ["Drain", "HttpLimits", "HttpTransportOptions"]


def _default_store() -> EventStore:
    return MemoryEventStore()


def _path_or_none(instance: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not value.startswith("/")):
        raise ValueError(f"{attribute.name} must be a path starting with '/' (or None), not {value!r}")


def _routes(value: Mapping[str, RouteHandler]) -> Mapping[str, RouteHandler]:
    if not isinstance(value, Mapping):
        raise TypeError(f"routes must be a mapping of paths to handlers, not {value!r}")
    for path, handler in value.items():
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError(f"routes: {path!r} is not a path starting with '/'")
        if not callable(handler):
            raise TypeError(f"routes: the handler of {path!r} is not callable: {handler!r}")
    return dict(value)


@attrs.frozen(kw_only=True)
class HttpTransportOptions:
    """How the HTTP transport behaves; the defaults are safe for a server on 127.0.0.1."""

    #: The Streamable HTTP endpoint.
    path: str = "/mcp"
    #: The HTTP+SSE (2024-11-05) GET endpoint, or None to turn that transport off.
    sse_path: str | None = "/sse"
    #: The HTTP+SSE POST endpoint.
    messages_path: str = "/messages"
    #: ``Host`` values (hostnames, any port) accepted; None accepts any valid one. Default: the local names
    #: when the server binds a loopback address, and no check otherwise. An invalid ``Host`` is always 400.
    allowed_hosts: Sequence[str] | None = None
    #: ``Origin`` values accepted (full origins such as ``https://app.example``, or bare hostnames, any
    #: port); requests without ``Origin`` are always accepted. Default: local origins only.
    allowed_origins: Sequence[str] | None = None
    #: Origins of web pages that may call the endpoints from a browser (CORS), exactly as browsers send them:
    #: ``("https://app.example", "http://localhost:5173")``. Empty: no CORS, as for any non-browser client.
    #: An origin listed here also passes the ``Origin`` check.
    cors_origins: Sequence[str] = attrs.field(default=(), converter=validate_origins)
    #: Routes of your own on the same port: ``{"/status": handler}``, ``async def handler(request, response)``
    #: (``trio_mcp.transports.http.RouteHandler``). They pass the ``Host``/``Origin`` check, not authentication.
    routes: Mapping[str, RouteHandler] = attrs.field(factory=dict, converter=_routes)
    #: Liveness probe: 200 while the server runs (None: no such endpoint).
    liveness_path: str | None = attrs.field(default="/healthz", validator=_path_or_none)
    #: Readiness probe: 200, or 503 once a graceful stop (``Drain``) has begun (None: no such endpoint).
    readiness_path: str | None = attrs.field(default="/readyz", validator=_path_or_none)
    #: Answer legacy-era requests with a JSON body instead of an SSE stream.
    json_response: bool = False
    #: Seconds a session may go without traffic before it is ended (it stays while a stream is open).
    session_idle_timeout: float = 1800.0
    #: Most sessions at once; another ``initialize`` gets 503.
    max_sessions: int = 1000
    #: Where session events are kept for resumption (None: streams cannot be resumed).
    event_store: EventStore | None = attrs.field(factory=_default_store)
    #: Where sessions are shared with the other processes serving the same clients (``trio_mcp.scale.
    #: RedisSessionDirectory``), so that any of them serves any request of a session; give them one shared
    #: ``event_store`` too, for resumption anywhere. None: a session lives in the process that opened it.
    session_directory: SessionDirectory | None = None
    #: The ``retry`` hint (milliseconds) sent with priming events on 2025-11-25.
    retry_ms: int = 1000
    #: Seconds between ``:`` keep-alive comments on an idle SSE stream.
    keepalive_interval: float = 15.0
    #: Serve 2026-07-28 stateless requests.
    stateless: bool = True
    #: Serve the legacy era (sessions, and HTTP+SSE when ``sse_path`` is set).
    sessions: bool = True
    #: HTTP limits: body and header sizes, timeouts, connection cap.
    limits: HttpLimits = HttpLimits()
    #: Bearer-token check: called with the token of ``Authorization: Bearer <token>``, it returns who the caller
    #: is or None to refuse (401 with ``WWW-Authenticate: Bearer``): a ``trio_mcp.auth.Principal``, a string or
    #: JSON-like data naming the caller alone (anything else is a ``TypeError``), since sessions, tasks and
    #: input rounds stay bound to the caller in every process. None: no authentication.
    authenticate: Callable[[str], Awaitable[Any]] | None = None
    #: OAuth protection (``trio_mcp.auth.ResourceServerAuth``): metadata, challenges, scopes, DPoP. It replaces
    #: ``authenticate`` when both are set.
    auth: RequestGuard | None = None
    #: A graceful stop you trigger yourself (``await drain(timeout)``); cancelling the server is immediate.
    drain: Drain | None = None
