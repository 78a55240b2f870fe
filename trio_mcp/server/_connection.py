"""One client connection to a ``Server``: the handshake, capability checks and method dispatch."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Final

import trio

from .._core.lifecycle import HandshakeEvent, Lifecycle, Phase
from .._schema import ArgumentError
from .._session import InboundRequest, Session
from .._wire.convert import params_from_wire, to_wire
from .._wire.versions import HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, allows_batches
from ..errors import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, McpError
from ..transports._base import MessageStream
from ..types import CallToolRequestParams, ClientCapabilities, Implementation, InitializeRequestParams
from ._context import Context
from ._tools import argument_error_result, content_for_revision, error_result, tool_result_from_value

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["ServerConnection"]

logger = logging.getLogger("trio_mcp.server")

MethodHandler = Callable[["ServerConnection", InboundRequest], Awaitable[Any]]

_NO_CAPABILITIES: Final = ClientCapabilities()


class ServerConnection:
    """Serves one client over one ``MessageStream``; implements the session's ``RequestHandler``."""

    inline_methods: Final = frozenset({"initialize"})

    def __init__(self, server: Server, stream: MessageStream) -> None:
        self.server = server
        self.lifecycle = Lifecycle()
        self.protocol_version: str | None = None
        self.client_info: Implementation | None = None
        self.client_capabilities: ClientCapabilities = _NO_CAPABILITIES
        self.session = Session(
            stream,
            self,
            max_in_flight=server.max_in_flight,
            peer_cancel_mode=server.peer_cancel_mode,
        )

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until the client disconnects."""
        await self.session.run(task_status=task_status)

    # -- RequestHandler ---------------------------------------------------------------------------

    async def handle_request(self, request: InboundRequest) -> Any:
        method = request.method
        refusal = self.lifecycle.client_request_refusal(method)
        if refusal is not None:
            raise McpError(INVALID_REQUEST, f"Invalid Request: {refusal}")
        handler = _METHODS.get(method)
        if handler is None:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return await handler(self, request)

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/initialized":
            if self.lifecycle.phase in (Phase.INITIALIZED, Phase.READY):
                self.lifecycle.handle(HandshakeEvent.INITIALIZED_NOTIFICATION)
            else:
                logger.warning("client sent notifications/initialized in phase %s; ignored", self.lifecycle.phase.value)

    # -- methods ----------------------------------------------------------------------------------

    async def _initialize(self, request: InboundRequest) -> Any:
        params = params_from_wire(request.params, InitializeRequestParams)
        requested = params.protocol_version
        version = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION
        self.lifecycle.handle(HandshakeEvent.INITIALIZE_REQUEST)
        self.protocol_version = version
        self.client_info = params.client_info
        self.client_capabilities = params.capabilities
        self.session.accept_batches = allows_batches(version)
        result = self.server.initialize_result(version)
        self.lifecycle.handle(HandshakeEvent.INITIALIZE_RESULT)
        return result

    async def _ping(self, request: InboundRequest) -> Any:
        return {}

    async def _list_tools(self, request: InboundRequest) -> Any:
        self._require_capability("tools")
        version = self.protocol_version or LATEST_HANDSHAKE_VERSION
        return {"tools": self.server.tool_list(version)}

    async def _call_tool(self, request: InboundRequest) -> Any:
        self._require_capability("tools")
        params = params_from_wire(request.params, CallToolRequestParams)
        tool = self.server.tools.get(params.name)
        if tool is None:
            raise McpError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        context = Context(request, self)
        try:
            value = await tool.call(params.arguments, context)
            result = tool_result_from_value(tool, value)
        except ArgumentError as exc:
            result = argument_error_result(tool, exc)
        except McpError:
            raise
        except Exception as exc:
            logger.info("tool %s raised %s: %s", tool.name, type(exc).__name__, exc)
            result = error_result(f"Error executing tool {tool.name}: {exc}" if str(exc) else
                                  f"Error executing tool {tool.name}: {type(exc).__name__}")
        wire = to_wire(result)
        version = self.protocol_version or LATEST_HANDSHAKE_VERSION
        wire["content"] = [content_for_revision(block, version) for block in wire["content"]]
        if version < "2025-06-18":
            wire.pop("structuredContent", None)
        return wire

    def _require_capability(self, name: str) -> None:
        if name not in self.server.capability_names():
            raise McpError(METHOD_NOT_FOUND, f"Method not found: this server does not offer {name}")


_METHODS: Final[dict[str, MethodHandler]] = {
    "initialize": ServerConnection._initialize,
    "ping": ServerConnection._ping,
    "tools/list": ServerConnection._list_tools,
    "tools/call": ServerConnection._call_tool,
}
