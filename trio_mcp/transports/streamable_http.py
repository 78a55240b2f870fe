"""The MCP HTTP server transport under its historical name; it lives in ``trio_mcp.transports.http``."""

from .._core.inbound import HeaderPaths
from .http import (
    ConnectFunction,
    Drain,
    EventStore,
    HttpLimits,
    HttpTransportOptions,
    MemoryEventStore,
    Mount,
    RequestGuard,
    StreamableHttpApp,
    request_principal,
    serve_mounts,
    serve_streamable_http,
)

__all__ = [
    "ConnectFunction",
    "Drain",
    "EventStore",
    "HeaderPaths",
    "HttpLimits",
    "HttpTransportOptions",
    "MemoryEventStore",
    "Mount",
    "RequestGuard",
    "StreamableHttpApp",
    "request_principal",
    "serve_mounts",
    "serve_streamable_http",
]
