"""Talking to MCP servers: the ``Client``, the ways to open one, and ``ClientGroup`` for several at once."""

from typing import TYPE_CHECKING, Any

from ._apps import AppBridge
from ._callbacks import report_progress
from ._client import Client
from ._connect import connect_client, open_client
from ._elicitation import fill_elicitation_defaults
from ._group import ClientGroup
from ._listen import ChangeNotification, Subscription
from ._options import ClientOptions, ElicitationHandler, ProgressHandler, RootsHandler, SamplingHandler
from ._pages import DEFAULT_MAX_PAGES
from ._renewal import SessionLost
from ._stdio import connect_stdio_client, open_stdio_client
from ._tasks import TaskCancelled, TaskStatusHandler, call_tool_as_task, get_task, resume_task
from ._tools import StructuredContentError

if TYPE_CHECKING:
    from ..transports._client.h11client import HttpClient, HttpTimeouts
    from ._oauth import OAuthClientProvider
    from ._remote import (
        WebSocketOptions,
        connect_http_client,
        connect_websocket_client,
        open_http_client,
        open_websocket_client,
    )

_REMOTE = frozenset(
    {"open_http_client", "connect_http_client", "open_websocket_client", "connect_websocket_client", "WebSocketOptions"}
)


def __getattr__(name: str) -> Any:
    """The HTTP, WebSocket and OAuth pieces load on first use: a stdio client starts faster without them."""
    if name in _REMOTE:
        from . import _remote

        return getattr(_remote, name)
    if name in ("HttpClient", "HttpTimeouts"):  # for http=: a TLS context of your own, a pool shared by clients
        from ..transports._client import h11client

        return getattr(h11client, name)
    if name == "OAuthClientProvider":
        from ._oauth import OAuthClientProvider

        return OAuthClientProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Client",
    "AppBridge",
    "ClientOptions",
    "WebSocketOptions",
    "ClientGroup",
    "ChangeNotification",
    "Subscription",
    "open_client",
    "connect_client",
    "open_stdio_client",
    "connect_stdio_client",
    "open_http_client",
    "OAuthClientProvider",
    "connect_http_client",
    "HttpClient",
    "HttpTimeouts",
    "open_websocket_client",
    "connect_websocket_client",
    "fill_elicitation_defaults",
    "report_progress",
    "StructuredContentError",
    "call_tool_as_task",
    "get_task",
    "resume_task",
    "TaskCancelled",
    "TaskStatusHandler",
    "SessionLost",
    "DEFAULT_MAX_PAGES",
    "RootsHandler",
    "SamplingHandler",
    "ElicitationHandler",
    "ProgressHandler",
]
