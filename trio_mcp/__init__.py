"""trio_mcp: the Model Context Protocol for trio.

Servers and clients for every protocol revision from 2024-11-05 on, with cancellation that maps exactly
onto trio cancel scopes. Start with ``Server`` (and its ``@server.tool()`` decorator) or
``open_stdio_client``.
"""

import logging as _logging
from typing import TYPE_CHECKING

from ._console_log import PACKAGE_HANDLER as _PACKAGE_HANDLER
from ._lazy import lazy_attributes
from ._middleware import CallNext, RequestInfo
from ._schema import Field
from ._version import __version__
from .errors import (
    CapabilityError,
    ConnectionClosed,
    McpError,
    RemoteProtocolError,
    RequestTimeout,
    ResourceNotFound,
    SkillVerificationError,
    ToolError,
    TrioMcpError,
)
from .server import Context, McpLogHandler, Server, TaskManager

if TYPE_CHECKING:
    from .client import (
        Client,
        ClientGroup,
        OAuthClientProvider,
        StructuredContentError,
        TaskCancelled,
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
    from .transports.streamable_http import HttpTransportOptions

_LAZY = {
    **dict.fromkeys(
        (
            "Client",
            "ClientGroup",
            "StructuredContentError",
            "TaskCancelled",
            "connect_client",
            "connect_stdio_client",
            "fill_elicitation_defaults",
            "open_client",
            "open_stdio_client",
        ),
        "trio_mcp.client",
    ),
    "open_http_client": "trio_mcp.client",
    "connect_http_client": "trio_mcp.client",
    "open_websocket_client": "trio_mcp.client",
    "connect_websocket_client": "trio_mcp.client",
    "OAuthClientProvider": "trio_mcp.client",
    "HttpTransportOptions": "trio_mcp.transports.streamable_http",
}


# The client and the network transports load on first use, so that a server (and a stdio client) starts fast.
__getattr__ = lazy_attributes(__name__, _LAZY)


_logging.getLogger("trio_mcp").addHandler(_PACKAGE_HANDLER)  # quiet, unless serving: see _console_log

__all__ = [
    "__version__",
    "Server",
    "Context",
    "Field",
    "McpLogHandler",
    "TaskManager",
    "TaskCancelled",
    "RequestInfo",
    "CallNext",
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
    "OAuthClientProvider",
    "fill_elicitation_defaults",
    "McpError",
    "RequestTimeout",
    "ConnectionClosed",
    "RemoteProtocolError",
    "CapabilityError",
    "SkillVerificationError",
    "StructuredContentError",
    "TrioMcpError",
    "ToolError",
    "ResourceNotFound",
]
