"""MCP over HTTP, server side: Streamable HTTP for both eras and HTTP+SSE (2024-11-05), on one port.

The rooms: ``guard`` (Host, Origin, bearer tokens; shared with the WebSocket server), ``router`` (the
options and the dispatch), ``stateless`` (2026-07-28), ``sessions`` (2025-03-26 .. 2025-11-25: sessions,
streams, resumption, reaper), ``legacy_sse`` (2024-11-05), ``events`` (the event store) and ``roaming`` (sessions
shared by several processes). The inbound
check they route by is pure and lives in ``trio_mcp._core.inbound``.
"""

from ..._core.session_record import SessionRecord, SessionState
from .._h11server import Drain, HttpLimits
from ._common import ConnectFunction, request_principal
from .events import EventStore, MemoryEventStore
from .exchange import Request, Response, RouteHandler
from .guard import RequestGuard
from .options import HttpTransportOptions
from .roaming import SessionDirectory
from .router import Mount, StreamableHttpApp, serve_mounts, serve_streamable_http

__all__ = [
    "ConnectFunction",
    "Drain",
    "EventStore",
    "HttpLimits",
    "HttpTransportOptions",
    "MemoryEventStore",
    "Mount",
    "Request",
    "RequestGuard",
    "SessionDirectory",
    "SessionRecord",
    "SessionState",
    "Response",
    "RouteHandler",
    "StreamableHttpApp",
    "request_principal",
    "serve_mounts",
    "serve_streamable_http",
]
