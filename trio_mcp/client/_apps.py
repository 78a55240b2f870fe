"""The host side of MCP Apps (``io.modelcontextprotocol/ui``): find a tool's app, read it, and relay the frame's
JSON-RPC requests to the server through the same client.

A host declares the extension (``Client(extensions=apps_capability())``), renders the HTML of ``read_app()`` in a
sandboxed frame with a Content-Security-Policy built from its ``csp``, and hands each message the frame posts to
``AppBridge.handle()``: MCP requests (tool calls, resource reads, listings) go to the server as this client's own,
``notifications/cancelled`` cancels the request it names (the server is told), and the host's own ``ui/*`` methods
go to the handlers it gives. What ``handle()`` returns is the JSON-RPC answer to post back to the frame.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import trio

from ..apps import APP_MIME_TYPE, AppCsp, AppLink, AppPermissions, AppResource
from ..errors import INVALID_REQUEST, METHOD_NOT_FOUND, McpError, RemoteProtocolError
from ..types import ServerCapabilities, Tool

__all__ = ["AppMethods", "AppBridge"]

#: What a frame may ask the server for through the bridge (anything else is the host's to answer, or -32601).
RELAYED: Final = frozenset(
    {"tools/call", "tools/list", "resources/read", "resources/list", "resources/templates/list", "prompts/list"}
)

HostHandler = Callable[[dict[str, Any] | None], Awaitable[Any]]


def tool_app(tool: Tool) -> AppLink | None:
    """The app a tool names in ``_meta.ui`` (or the older flat ``_meta["ui/resourceUri"]``), if any."""
    meta = tool.meta or {}
    ui = meta.get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, dict) else meta.get("ui/resourceUri")
    if not isinstance(uri, str) or not uri.startswith("ui://"):
        return None
    visibility = ui.get("visibility") if isinstance(ui, dict) else None
    if isinstance(visibility, list) and visibility and all(isinstance(v, str) for v in visibility):
        return AppLink(resource_uri=uri, visibility=tuple(visibility))
    return AppLink(resource_uri=uri)


class AppMethods:
    """``tool_app()`` and ``read_app()``, mixed into ``Client``."""

    if TYPE_CHECKING:

        @property
        def server_capabilities(self) -> ServerCapabilities: ...

        async def request(self, method: str, params: dict[str, Any] | None = None) -> Any: ...

    @staticmethod
    def tool_app(tool: Tool) -> AppLink | None:
        """The app that renders ``tool`` (from its ``_meta.ui``), or None for a tool without one."""
        return tool_app(tool)

    async def read_app(self, uri: str) -> AppResource:
        """Read the app at ``uri`` (``ui://...``): its HTML and what it asks of the frame (CSP, permissions).
        A resource that is not ``text/html;profile=mcp-app`` HTML is a ``RemoteProtocolError``: hosts render
        nothing else."""
        if not isinstance(uri, str) or not uri.startswith("ui://"):
            raise ValueError(f"an app's URI uses the ui:// scheme, not {uri!r}")
        raw = await self.request("resources/read", {"uri": uri})
        contents = raw.get("contents") if isinstance(raw, dict) else None
        items = [c for c in contents or [] if isinstance(c, dict)]
        item = next((c for c in items if c.get("uri") == uri), items[0] if len(items) == 1 else None)
        if item is None or not isinstance(item.get("text"), str):
            raise RemoteProtocolError(f"resources/read of {uri} returned no HTML text")
        if item.get("mimeType") != APP_MIME_TYPE:
            raise RemoteProtocolError(f"{uri} is {item.get('mimeType')!r}, not {APP_MIME_TYPE!r}: not an app")
        meta = item.get("_meta")
        ui = meta.get("ui") if isinstance(meta, dict) else None
        ui = ui if isinstance(ui, dict) else {}
        domain, border = ui.get("domain"), ui.get("prefersBorder")
        return AppResource(
            uri=uri,
            html=item["text"],
            csp=AppCsp.from_wire(ui.get("csp")),
            permissions=AppPermissions.from_wire(ui.get("permissions")),
            domain=domain if isinstance(domain, str) else None,
            prefers_border=border if isinstance(border, bool) else None,
        )


class AppBridge:
    """Relays one app frame's JSON-RPC messages to the server through ``client`` (see the module's docstring).

    Run each ``handle()`` in a task of its own (messages arrive concurrently, and a cancellation must reach a
    request still running). ``tools`` is the client's tool list, so a call to a tool hidden from apps
    (``visibility`` without ``"app"``) is refused; ``host_handlers`` answer the host's own methods (``ui/*``).
    """

    def __init__(
        self,
        client: Any,
        *,
        tools: list[Tool] | None = None,
        host_handlers: Mapping[str, HostHandler] | None = None,
    ) -> None:
        self.client = client
        self.host_handlers = dict(host_handlers or {})
        self._hidden = {
            tool.name for tool in tools or [] if (link := tool_app(tool)) is not None and "app" not in link.visibility
        }
        self._running: dict[Any, trio.CancelScope] = {}

    async def handle(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """The answer to post back to the frame for ``message``, or None (a notification, or a request the frame
        cancelled). Never raises for a bad message: the frame gets a JSON-RPC error."""
        method, params, ident = message.get("method"), message.get("params"), message.get("id")
        if not isinstance(method, str) or (params is not None and not isinstance(params, dict)):
            return _error(ident, INVALID_REQUEST, "Invalid Request: a method and object params are needed")
        if "id" not in message:
            await self._notification(method, params)
            return None
        if ident in self._running:
            return _error(ident, INVALID_REQUEST, f"Invalid Request: request id {ident!r} is already in flight")
        with trio.CancelScope() as scope:
            self._running[ident] = scope
            try:
                result = await self._request(method, params)
            except McpError as exc:
                return _error(ident, exc.code, exc.message, exc.data)
            finally:
                del self._running[ident]
            return {"jsonrpc": "2.0", "id": ident, "result": result}
        return None  # cancelled by the frame: it expects no answer

    async def _request(self, method: str, params: dict[str, Any] | None) -> Any:
        if method == "ping":
            return {}
        handler = self.host_handlers.get(method)
        if handler is not None:
            return await handler(params)
        if method not in RELAYED:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {method} (not relayed to the server)")
        name = (params or {}).get("name")
        if method == "tools/call" and name in self._hidden:
            raise McpError(INVALID_REQUEST, f"Invalid Request: tool {name!r} is not visible to apps")
        return await self.client.request(method, params, timeout=None)

    async def _notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/cancelled":
            scope = self._running.get((params or {}).get("requestId"))
            if scope is not None:
                scope.cancel()
            return
        handler = self.host_handlers.get(method)
        if handler is not None:
            await handler(params)


def _error(ident: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": ident, "error": error}
