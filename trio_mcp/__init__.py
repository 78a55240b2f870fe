"""trio_mcp: the Model Context Protocol for trio.

Servers and clients for every protocol revision from 2024-11-05 on, with cancellation that maps exactly
onto trio cancel scopes. Start with ``Server`` (and its ``@server.tool()`` decorator) or
``open_stdio_client``.
"""

import logging as _logging

from ._schema import Field
from ._version import __version__
from .client import (
    Client,
    ClientGroup,
    StructuredContentError,
    connect_client,
    connect_http_client,
    connect_stdio_client,
    connect_websocket_client,
    fill_elicitation_defaults,
    open_client,
    open_http_client,
    open_stdio_client,
    open_websocket_client,
)
from .errors import ConnectionClosed, McpError, RemoteProtocolError, RequestTimeout, TrioMcpError
from .server import Context, McpLogHandler, Server
from .transports.streamable_http import HttpTransportOptions

_logging.getLogger("trio_mcp").addHandler(_logging.NullHandler())

__all__ = [
    "__version__",
    "Server",
    "Context",
    "Field",
    "McpLogHandler",
    "HttpTransportOptions",
    "Client",
    "ClientGroup",
    "open_client",
    "connect_client",
    "open_stdio_client",
    "connect_stdio_client",
    "open_http_client",
    "connect_http_client",
    "open_websocket_client",
    "connect_websocket_client",
    "fill_elicitation_defaults",
    "McpError",
    "RequestTimeout",
    "ConnectionClosed",
    "RemoteProtocolError",
    "StructuredContentError",
    "TrioMcpError",
]
