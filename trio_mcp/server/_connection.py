"""One client connection to a ``Server``: the handshake, capability checks, dispatch and notifications."""

from __future__ import annotations

import collections
import inspect
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Final

import trio

from .._core.jsonrpc import RequestId
from .._core.lifecycle import HandshakeEvent, Lifecycle, Phase
from .._pagination import InvalidCursor, paginate
from .._schema import ArgumentError
from .._session import InboundRequest, Session
from .._wire.convert import params_from_wire, to_wire
from .._wire.versions import (
    HANDSHAKE_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    V2025_06_18,
    allows_batches,
    is_handshake,
)
from ..errors import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, McpError
from ..transports._base import MessageStream
from ..types import (
    CallToolRequestParams,
    ClientCapabilities,
    CompleteRequestParams,
    Completion,
    GetPromptRequestParams,
    Implementation,
    InitializeRequestParams,
    PaginatedRequestParams,
    PromptReference,
    ReadResourceRequestParams,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)
from ._context import Context
from ._logging import LEVELS, RateLimiter, current_context, level_rank
from ._tools import argument_error_result, content_for_revision, error_result, tool_result_from_value

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["ServerConnection"]

logger = logging.getLogger("trio_mcp.server")

MethodHandler = Callable[["ServerConnection", InboundRequest], Awaitable[Any]]

_NO_CAPABILITIES: Final = ClientCapabilities()
#: Notifications queued for delivery outside a request (list changes, resource updates, bridged logs).
_OUTBOX_LIMIT: Final = 1024
#: Resources one connection may subscribe to.
_SUBSCRIPTION_LIMIT: Final = 1024
#: At most this many completion values are sent (the spec's limit).
_MAX_COMPLETIONS: Final = 100

_LIST_CHANGED: Final = {
    "tools": "notifications/tools/list_changed",
    "resources": "notifications/resources/list_changed",
    "prompts": "notifications/prompts/list_changed",
}


class ServerConnection:
    """Serves one client over one ``MessageStream``; implements the session's ``RequestHandler``."""

    inline_methods: Final = frozenset({"initialize"})

    def __init__(self, server: Server, stream: MessageStream) -> None:
        self.server = server
        self.lifecycle = Lifecycle()
        self.protocol_version: str | None = None
        self.client_info: Implementation | None = None
        self.client_capabilities: ClientCapabilities = _NO_CAPABILITIES
        self.log_level = server.default_log_level
        self.subscriptions: set[str] = set()
        self.session = Session(
            stream,
            self,
            max_in_flight=server.max_in_flight,
            peer_cancel_mode=server.peer_cancel_mode,
        )
        self._log_limiter: RateLimiter | None = None
        self._outbox: collections.deque[tuple[str, dict[str, Any] | None, RequestId | None]] = collections.deque()
        self._outbox_ready = trio.Event()
        self._outbox_dropped = 0
        self._initialized = trio.Event()
        self._trio_token = trio.lowlevel.current_trio_token()

    @property
    def version(self) -> str:
        """The negotiated revision (the newest handshake revision before ``initialize``)."""
        return self.protocol_version or LATEST_HANDSHAKE_VERSION

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until the client disconnects."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self._run_session, nursery)
            nursery.start_soon(self._deliver_outbox)
            task_status.started()

    async def _run_session(self, nursery: trio.Nursery, *, task_status: trio.TaskStatus[None]) -> None:
        self.server.connections.add(self)
        try:
            await self.session.run(task_status=task_status)
        finally:
            self.server.connections.discard(self)
            nursery.cancel_scope.cancel()

    # -- RequestHandler ---------------------------------------------------------------------------

    async def handle_request(self, request: InboundRequest) -> Any:
        method = request.method
        refusal = self.lifecycle.client_request_refusal(method)
        if refusal is not None:
            raise McpError(INVALID_REQUEST, f"Invalid Request: {refusal}")
        entry = _METHODS.get(method)
        if entry is None:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
        handler, capability = entry
        if capability is not None and not self.server.offers(capability):
            raise McpError(METHOD_NOT_FOUND, f"Method not found: this server does not offer {capability}")
        return await handler(self, request)

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/initialized":
            if self.lifecycle.phase in (Phase.INITIALIZED, Phase.READY):
                self.lifecycle.handle(HandshakeEvent.INITIALIZED_NOTIFICATION)
                self._initialized.set()
            else:
                logger.warning("client sent notifications/initialized in phase %s; ignored", self.lifecycle.phase.value)

    # -- lifecycle and utilities ------------------------------------------------------------------

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

    async def _set_level(self, request: InboundRequest) -> Any:
        params = params_from_wire(request.params, SetLevelRequestParams)
        if params.level not in LEVELS:
            raise McpError(INVALID_PARAMS, f"Invalid params: unknown log level {params.level!r}")
        self.log_level = params.level
        return {}

    def log_params(self, level: str, data: Any, logger_name: str | None) -> dict[str, Any] | None:
        """The ``notifications/message`` params for a log call, or None if filtered or rate-limited."""
        if level_rank(level) < level_rank(self.log_level):
            return None
        if self._log_limiter is None:
            self._log_limiter = RateLimiter()
        if not self._log_limiter.allow():
            return None
        params: dict[str, Any] = {"level": level, "data": data}
        if logger_name is not None:
            params["logger"] = logger_name
        dropped = self._log_limiter.dropped
        if dropped:
            self._log_limiter.dropped = 0
            self._enqueue("notifications/message", {"level": "warning", "data": f"{dropped} log messages dropped (rate limit)"}, None)
        return params

    def queue_log(self, level: str, data: Any, logger_name: str | None, related: RequestId) -> None:
        """Queue a log message from synchronous code; thread-safe (it hops onto the trio thread)."""

        def enqueue() -> None:
            params = self.log_params(level, data, logger_name)
            if params is not None:
                self._enqueue("notifications/message", params, related)

        self._trio_token.run_sync_soon(enqueue)

    # -- tools ------------------------------------------------------------------------------------

    async def _list_tools(self, request: InboundRequest) -> Any:
        return self._page(request, "tools/list", "tools")

    async def _call_tool(self, request: InboundRequest) -> Any:
        params = params_from_wire(request.params, CallToolRequestParams)
        tool = self.server.tools.get(params.name)
        if tool is None:
            raise McpError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        context = Context(request, self)
        token = current_context.set(context)
        try:
            value = await tool.call(params.arguments, context)
            result = tool_result_from_value(tool, value)
        except ArgumentError as exc:
            result = argument_error_result(tool, exc)
        except McpError:
            raise
        except Exception as exc:
            logger.info("tool %s raised %s: %s", tool.name, type(exc).__name__, exc)
            result = error_result(f"Error executing tool {tool.name}: {exc or type(exc).__name__}")
        finally:
            current_context.reset(token)
        wire = to_wire(result)
        version = self.version
        wire["content"] = [content_for_revision(block, version) for block in wire["content"]]
        if version < V2025_06_18:
            wire.pop("structuredContent", None)
        return wire

    # -- resources --------------------------------------------------------------------------------

    async def _list_resources(self, request: InboundRequest) -> Any:
        return self._page(request, "resources/list", "resources")

    async def _list_templates(self, request: InboundRequest) -> Any:
        return self._page(request, "resources/templates/list", "resourceTemplates")

    async def _read_resource(self, request: InboundRequest) -> Any:
        params = params_from_wire(request.params, ReadResourceRequestParams)
        found = self.server.find_resource(params.uri)
        if found is None:
            raise self._not_found(params.uri)
        definition, variables = found
        context = Context(request, self)
        token = current_context.set(context)
        try:
            contents = await definition.read(params.uri, variables, context)
        except ArgumentError as exc:
            raise McpError(INVALID_PARAMS, f"Invalid params: {exc}", {"uri": params.uri}) from None
        finally:
            current_context.reset(token)
        return {"contents": contents}

    def _not_found(self, uri: str) -> McpError:
        code = RESOURCE_NOT_FOUND if is_handshake(self.version) else INVALID_PARAMS
        return McpError(code, f"Resource not found: {uri}", {"uri": uri})

    async def _subscribe(self, request: InboundRequest) -> Any:
        params = params_from_wire(request.params, SubscribeRequestParams)
        if self.server.find_resource(params.uri) is None:
            raise self._not_found(params.uri)
        if params.uri not in self.subscriptions and len(self.subscriptions) >= _SUBSCRIPTION_LIMIT:
            raise McpError(INVALID_REQUEST, f"Invalid Request: at most {_SUBSCRIPTION_LIMIT} subscriptions")
        self.subscriptions.add(params.uri)
        return {}

    async def _unsubscribe(self, request: InboundRequest) -> Any:
        params = params_from_wire(request.params, UnsubscribeRequestParams)
        self.subscriptions.discard(params.uri)
        return {}

    # -- prompts ----------------------------------------------------------------------------------

    async def _list_prompts(self, request: InboundRequest) -> Any:
        return self._page(request, "prompts/list", "prompts")

    async def _get_prompt(self, request: InboundRequest) -> Any:
        params = params_from_wire(request.params, GetPromptRequestParams)
        prompt = self.server.prompts.get(params.name)
        if prompt is None:
            raise McpError(INVALID_PARAMS, f"Invalid params: unknown prompt {params.name!r}")
        context = Context(request, self)
        token = current_context.set(context)
        try:
            return await prompt.render(params.arguments, context, self.version)
        except ArgumentError as exc:
            raise McpError(INVALID_PARAMS, f"Invalid params for prompt {params.name}: {exc}") from None
        finally:
            current_context.reset(token)

    # -- completion -------------------------------------------------------------------------------

    async def _complete(self, request: InboundRequest) -> Any:
        params = params_from_wire(request.params, CompleteRequestParams)
        ref = params.ref
        if isinstance(ref, PromptReference):
            prompt = self.server.prompts.get(ref.name)
            if prompt is None:
                raise McpError(INVALID_PARAMS, f"Invalid params: unknown prompt {ref.name!r}")
            if params.argument.name not in prompt.argument_names:
                raise McpError(INVALID_PARAMS, f"Invalid params: prompt {ref.name!r} has no argument "
                               f"{params.argument.name!r}")
        elif ref.uri not in self.server.templates:
            raise McpError(INVALID_PARAMS, f"Invalid params: no resource template {ref.uri!r}")
        handler = self.server.completion_handler
        assert handler is not None
        value = handler(ref, params.argument, params.context)
        if inspect.isawaitable(value):
            value = await value
        if value is None:
            completion = Completion(values=[])
        elif isinstance(value, Completion):
            completion = value
        else:
            values = [str(item) for item in value]
            completion = Completion(
                values=values[:_MAX_COMPLETIONS], total=len(values), has_more=len(values) > _MAX_COMPLETIONS
            )
        return {"completion": to_wire(completion)}

    # -- pagination -------------------------------------------------------------------------------

    def _page(self, request: InboundRequest, method: str, key: str) -> dict[str, Any]:
        params = params_from_wire(request.params, PaginatedRequestParams)
        items = self.server.listing(method, self.version)
        page_size = self.server.page_size or max(len(items), 1)
        try:
            page, next_cursor = paginate(
                items, params.cursor, page_size=page_size, scope=method, codec=self.server.cursors
            )
        except InvalidCursor as exc:
            raise McpError(INVALID_PARAMS, f"Invalid params: bad cursor ({exc})") from None
        result: dict[str, Any] = {key: page}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    # -- notifications outside requests -----------------------------------------------------------

    def list_changed(self, kind: str) -> None:
        """Queue ``notifications/<kind>/list_changed`` (coalesced: one pending per kind).

        Changes before ``initialize`` was answered are not sent: the client lists after initializing anyway.
        """
        if self.lifecycle.phase not in (Phase.INITIALIZED, Phase.READY):
            return
        method = _LIST_CHANGED[kind]
        if not any(queued == method for queued, _, _ in self._outbox):
            self._enqueue(method, None, None)

    def resource_updated(self, uri: str) -> None:
        """Queue ``notifications/resources/updated`` if this client subscribed to ``uri``."""
        if uri in self.subscriptions:
            self._enqueue("notifications/resources/updated", {"uri": uri}, None)

    def _enqueue(self, method: str, params: dict[str, Any] | None, related: RequestId | None) -> None:
        if len(self._outbox) >= _OUTBOX_LIMIT:
            self._outbox_dropped += 1
            return
        self._outbox.append((method, params, related))
        self._outbox_ready.set()

    async def _deliver_outbox(self) -> None:
        # Nothing unsolicited goes out before the client said it is initialized.
        await self._initialized.wait()
        while True:
            await self._outbox_ready.wait()
            self._outbox_ready = trio.Event()
            while self._outbox:
                method, params, related = self._outbox.popleft()
                try:
                    await self.session.notify(method, params, related_request_id=related)
                except Exception:  # the session is closing; it ends this task too
                    return
            if self._outbox_dropped:
                logger.warning("dropped %d queued notifications: the client was not reading", self._outbox_dropped)
                self._outbox_dropped = 0


_METHODS: Final[dict[str, tuple[MethodHandler, str | None]]] = {
    "initialize": (ServerConnection._initialize, None),
    "ping": (ServerConnection._ping, None),
    "logging/setLevel": (ServerConnection._set_level, "logging"),
    "tools/list": (ServerConnection._list_tools, "tools"),
    "tools/call": (ServerConnection._call_tool, "tools"),
    "resources/list": (ServerConnection._list_resources, "resources"),
    "resources/templates/list": (ServerConnection._list_templates, "resources"),
    "resources/read": (ServerConnection._read_resource, "resources"),
    "resources/subscribe": (ServerConnection._subscribe, "resources"),
    "resources/unsubscribe": (ServerConnection._unsubscribe, "resources"),
    "prompts/list": (ServerConnection._list_prompts, "prompts"),
    "prompts/get": (ServerConnection._get_prompt, "prompts"),
    "completion/complete": (ServerConnection._complete, "completions"),
}
