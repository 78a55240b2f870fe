"""The ``Client``: typed calls to one MCP server over any ``MessageStream``."""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Final, Sequence, TypeVar

import trio

from .._core.lifecycle import HandshakeEvent, Lifecycle
from .._session import InboundRequest, Session
from .._version import __version__
from .._wire.convert import WireFormatError, from_wire
from .._wire.versions import HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION
from ..errors import INVALID_REQUEST, METHOD_NOT_FOUND, McpError, RemoteProtocolError
from ..transports._base import MessageStream
from ..types import (
    CallToolResult,
    ClientCapabilities,
    Implementation,
    InitializeResult,
    ListToolsResult,
    ProgressNotificationParams,
    Root,
    ServerCapabilities,
)
from .._wire.convert import to_wire

__all__ = ["Client", "ProgressHandler", "RootsHandler"]

logger = logging.getLogger("trio_mcp.client")

T = TypeVar("T")

RootsHandler = Callable[[], Awaitable[Sequence[Root]]]
"""Answers the server's ``roots/list``: returns the roots the server may work in."""

ProgressHandler = Callable[[ProgressNotificationParams], Any]
"""Receives each progress update for a call; may be sync or async, and its exceptions are logged, not raised."""

_UNSET: Final[Any] = object()

#: Client-to-server methods and the server capability each needs.
_REQUIRED_SERVER_CAPABILITY: Final = {
    "tools/list": "tools",
    "tools/call": "tools",
}


class Client:
    """A connection to one MCP server.

    Get one from ``open_stdio_client()`` (or another ``open_*``/``connect_*`` function); they run the
    handshake before handing it over. Every call raises ``McpError`` for an error answer,
    ``RequestTimeout`` when the server is too slow, and ``ConnectionClosed`` once the connection is gone.
    Cancelling the scope around a call sends ``notifications/cancelled`` for it.
    """

    def __init__(
        self,
        stream: MessageStream,
        *,
        client_info: Implementation | None = None,
        protocol_version: str = LATEST_HANDSHAKE_VERSION,
        request_timeout: float | None = 60.0,
        roots: RootsHandler | None = None,
    ) -> None:
        if protocol_version not in HANDSHAKE_VERSIONS:
            raise ValueError(f"protocol_version must be one of {', '.join(HANDSHAKE_VERSIONS)}")
        self._stream = stream
        self.roots_handler = roots
        self._requested_version = protocol_version
        self.client_info = client_info or Implementation(name="trio_mcp", version=__version__)
        self.lifecycle = Lifecycle()
        self.session = Session(stream, _ClientHandler(self), request_timeout=request_timeout)
        self._initialize_result: InitializeResult | None = None
        self._on_close: list[Callable[[], Awaitable[None]]] = []

    # -- lifetime ---------------------------------------------------------------------------------

    async def start(self, nursery: trio.Nursery) -> None:
        """Run the session in ``nursery`` and perform the handshake."""
        await nursery.start(self.session.run)
        try:
            await self._initialize()
        except BaseException:
            await self.aclose()
            raise

    def add_close_callback(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Run ``callback`` during ``aclose()`` (transports use it to stop their processes)."""
        self._on_close.append(callback)

    async def aclose(self) -> None:
        """Fail every pending call with ``ConnectionClosed`` at once, then shut the transport down."""
        await self.session.aclose()
        callbacks, self._on_close = self._on_close, []
        with trio.CancelScope(shield=True):
            for callback in reversed(callbacks):
                await callback()

    async def _initialize(self) -> None:
        params = {
            "protocolVersion": self._requested_version,
            "capabilities": self._capabilities_wire(),
            "clientInfo": {"name": self.client_info.name, "version": self.client_info.version},
        }
        self.lifecycle.handle(HandshakeEvent.INITIALIZE_REQUEST)
        try:
            raw = await self.session.request("initialize", params, cancellable=False)
        except McpError:
            self.lifecycle.handle(HandshakeEvent.INITIALIZE_ERROR)
            raise
        result = self._parse(raw, InitializeResult, "initialize")
        if result.protocol_version not in HANDSHAKE_VERSIONS:
            raise RemoteProtocolError(
                f"server chose protocol version {result.protocol_version!r}, which this client does not support"
            )
        self._initialize_result = result
        self.session.accept_batches = result.protocol_version == "2025-03-26"
        self.lifecycle.handle(HandshakeEvent.INITIALIZE_RESULT)
        await self.session.notify("notifications/initialized")
        self.lifecycle.handle(HandshakeEvent.INITIALIZED_NOTIFICATION)

    def _capabilities_wire(self) -> dict[str, Any]:
        """Capabilities follow from the callbacks registered: nothing is declared that cannot be served."""
        capabilities: dict[str, Any] = {}
        if self.roots_handler is not None:
            capabilities["roots"] = {"listChanged": True}
        return capabilities

    async def notify_roots_changed(self) -> None:
        """Tell the server the roots changed (``notifications/roots/list_changed``)."""
        if self.roots_handler is None:
            raise RuntimeError("no roots handler is registered, so no roots capability was declared")
        await self.session.notify("notifications/roots/list_changed")

    # -- what the handshake told us ---------------------------------------------------------------

    @property
    def initialize_result(self) -> InitializeResult:
        """The server's answer to ``initialize``."""
        if self._initialize_result is None:
            raise RuntimeError("the client is not initialized yet")
        return self._initialize_result

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol revision."""
        return self.initialize_result.protocol_version

    @property
    def server_info(self) -> Implementation:
        """The server's name and version."""
        return self.initialize_result.server_info

    @property
    def server_capabilities(self) -> ServerCapabilities:
        """What the server said it offers."""
        return self.initialize_result.capabilities

    @property
    def instructions(self) -> str | None:
        """The server's usage instructions for the model, if it sent any."""
        return self.initialize_result.instructions

    # -- calls ------------------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = _UNSET,
        on_progress: ProgressHandler | None = None,
        max_total_timeout: float | None = None,
    ) -> Any:
        """Send any request (custom methods included) and return its raw JSON result.

        ``timeout`` (default: the client's ``request_timeout``) restarts with every progress update when
        ``on_progress`` is given, but never runs past ``max_total_timeout``. A method that needs a server
        capability the server did not declare is refused here, before sending.
        """
        needed = _REQUIRED_SERVER_CAPABILITY.get(method)
        if needed is not None and getattr(self.server_capabilities, needed) is None:
            raise McpError(METHOD_NOT_FOUND, f"{method}: the server did not declare the {needed!r} capability")
        options: dict[str, Any] = {}
        if timeout is not _UNSET:
            options["timeout"] = timeout
        if on_progress is not None:
            options["on_progress"] = _typed_progress(on_progress)
            options["reset_timeout_on_progress"] = True
        if max_total_timeout is not None:
            options["max_total_timeout"] = max_total_timeout
        return await self.session.request(method, params, **options)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification to the server."""
        await self.session.notify(method, params)

    async def ping(self, *, timeout: float | None = _UNSET) -> None:
        """Check the server is alive; raises ``RequestTimeout`` if it does not answer."""
        await self.request("ping", timeout=timeout)

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """One page of the server's tools; pass ``next_cursor`` back for the next page."""
        raw = await self.request("tools/list", {"cursor": cursor} if cursor is not None else None)
        return self._parse(raw, ListToolsResult, "tools/list")

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = _UNSET,
        on_progress: ProgressHandler | None = None,
        max_total_timeout: float | None = None,
        meta: dict[str, Any] | None = None,
    ) -> CallToolResult:
        """Call a tool. A tool that fails returns a result with ``is_error=True``; it does not raise.

        ``on_progress`` receives the server's progress updates; each one restarts the timeout.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if meta is not None:
            params["_meta"] = meta
        raw = await self.request(
            "tools/call", params, timeout=timeout, on_progress=on_progress, max_total_timeout=max_total_timeout
        )
        return self._parse(raw, CallToolResult, "tools/call")

    @staticmethod
    def _parse(raw: Any, cls: type[T], method: str) -> T:
        try:
            return from_wire(raw, cls)
        except WireFormatError as exc:
            raise RemoteProtocolError(f"server sent an invalid {method} result: {exc}") from None


def _typed_progress(handler: ProgressHandler) -> Callable[[dict[str, Any]], Any]:
    def on_progress(params: dict[str, Any]) -> Any:
        return handler(from_wire(params, ProgressNotificationParams))

    return on_progress


class _ClientHandler:
    """Serves what the server sends to the client (only ``ping`` until callbacks are registered)."""

    inline_methods: Final = frozenset[str]()

    def __init__(self, client: Client) -> None:
        self._client = client

    async def handle_request(self, request: InboundRequest) -> Any:
        refusal = self._client.lifecycle.server_request_refusal(request.method)
        if refusal is not None:
            raise McpError(INVALID_REQUEST, f"Invalid Request: {refusal}")
        if request.method == "ping":
            return {}
        if request.method == "roots/list" and self._client.roots_handler is not None:
            roots = await self._client.roots_handler()
            return {"roots": [to_wire(root) for root in roots]}
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {request.method}")

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/message" and params is not None:
            logger.info("server log (%s): %s", params.get("level"), params.get("data"))
