"""How the MCP HTTP transport behaves: ``HttpTransportOptions`` (and the ``HttpLimits`` it carries)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from .._http_server import Drain, HttpLimits
from .events import EventStore, MemoryEventStore
from .guard import RequestGuard

__all__ = ["Drain", "HttpLimits", "HttpTransportOptions"]


def _default_store() -> EventStore:
    return MemoryEventStore()


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
    #: Answer session-era requests with a JSON body instead of an SSE stream.
    json_response: bool = False
    #: Seconds a session may go without traffic before it is ended (it stays while a stream is open).
    session_idle_timeout: float = 1800.0
    #: Most sessions at once; another ``initialize`` gets 503.
    max_sessions: int = 1000
    #: Where session events are kept for resumption (None: streams cannot be resumed).
    event_store: EventStore | None = attrs.field(factory=_default_store)
    #: The ``retry`` hint (milliseconds) sent with priming events on 2025-11-25.
    retry_ms: int = 1000
    #: Seconds between ``:`` keep-alive comments on an idle SSE stream.
    keepalive_interval: float = 15.0
    #: Serve 2026-07-28 stateless requests.
    stateless: bool = True
    #: Serve the handshake era (sessions, and HTTP+SSE when ``sse_path`` is set).
    sessions: bool = True
    #: HTTP limits: body and header sizes, timeouts, connection cap.
    limits: HttpLimits = HttpLimits()
    #: Bearer-token check: called with the token of ``Authorization: Bearer <token>``, it returns who the caller
    #: is (any value but None) or None to refuse (401 with ``WWW-Authenticate: Bearer``). A session stays bound
    #: to the principal that opened it. None: no authentication.
    authenticate: Callable[[str], Awaitable[Any]] | None = None
    #: OAuth protection (``trio_mcp.auth.ResourceServerAuth``): metadata, challenges, scopes, DPoP. It replaces
    #: ``authenticate`` when both are set.
    auth: RequestGuard | None = None
    #: A graceful stop you trigger yourself (``await drain(timeout)``); cancelling the server is immediate.
    drain: Drain | None = None
