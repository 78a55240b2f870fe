"""The ``Client``: typed calls to one MCP server over any ``MessageStream``."""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import attrs
import trio

from .._core.jsonrpc import RequestId
from .._core.lifecycle import HandshakeEvent, Lifecycle
from .._core.mcp_headers import header_paths
from .._custom import CustomMethods, custom_result
from .._deadline import declare as declare_deadlines
from .._middleware import Middleware, RequestInfo, run_middleware
from .._schema import validate
from .._session import InboundRequest, Session
from .._util import collapse_exception_groups
from .._version import __version__
from .._wire.convert import to_wire
from .._wire.features import Feature, has
from .._wire.methods import INPUT_REQUIRED_METHODS, METHODS, send_refusal
from .._wire.versions import (
    LATEST_LEGACY_VERSION,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
)
from ..errors import (
    HEADER_MISMATCH,
    CapabilityError,
    ConnectionClosed,
    McpError,
    RemoteProtocolError,
    RequestTimeout,
)
from ..transports._base import MessageStream
from ..types import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    CallToolResult,
    CompleteResult,
    CompletionArgument,
    CompletionContext,
    CompletionReference,
    DiscoverResult,
    GetPromptResult,
    Implementation,
    InitializeResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    LoggingMessageNotificationParams,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ServerCapabilities,
    Tool,
)
from ._apps import AppMethods
from ._cache import CACHEABLE_METHODS, ResultCache
from ._callbacks import Refused, ServerRequestHandlers, serving
from ._inbound import ClientInbound
from ._listen import ChangeNotification, Subscription
from ._options import (
    DEFAULT_TIMEOUT,
    ElicitationHandler,
    ProgressHandler,
    RootsHandler,
    SamplingHandler,
    check_client_options,
    check_timeout,
)
from ._pages import DEFAULT_MAX_PAGES, ItemPages
from ._renewal import SAFE_TO_RETRY, Reconnect, SessionLost
from ._requests import (
    DEFAULT_LOG_LEVEL,
    MAX_INPUT_ROUNDS,
    REPLACED_IN_STATELESS,
    cursor_params,
    parse_result,
    request_on,
    supported_versions,
    typed_progress,
)
from ._skills import SkillMethods
from ._tasks import TaskHost, task_status_notified
from ._tools import StructuredContentError, tool_problem

__all__ = ["Client"]

logger = logging.getLogger("trio_mcp.client")


class Client(SkillMethods, AppMethods):
    """A connection to one MCP server.

    Get one from ``open_stdio_client()`` (or another ``open_*``/``connect_*`` function); they run the
    handshake before handing it over. Every call raises ``McpError`` for an error answer,
    ``RequestTimeout`` when the server is too slow, and ``ConnectionClosed`` once the connection is gone.
    Cancelling the scope around a call sends ``notifications/cancelled`` for it. ``iter_tools()`` and
    friends page through whole listings; ``call_tool`` checks structured results against the listed
    ``outputSchema`` (``StructuredContentError``).
    """

    def __init__(
        self,
        stream: MessageStream,
        *,
        client_info: Implementation | None = None,
        protocol_version: str = "auto",
        probe_timeout: float = 5.0,
        request_timeout: float | None = 60.0,
        roots: RootsHandler | None = None,
        sampling: SamplingHandler | None = None,
        sampling_tools: bool = False,
        elicitation: ElicitationHandler | None = None,
        elicitation_url: bool = False,
        on_log: Callable[[LoggingMessageNotificationParams], Any] | None = None,
        on_resource_updated: Callable[[str], Any] | None = None,
        on_list_changed: Callable[[str], Any] | None = None,
        max_pages: int = DEFAULT_MAX_PAGES,
        host_tasks: bool = False,
        extensions: Mapping[str, Mapping[str, Any] | None] | None = None,
        request_handlers: Mapping[str, Callable[..., Awaitable[Any]]] | None = None,
        notification_handlers: Mapping[str, Callable[..., Awaitable[Any]]] | None = None,
        middleware: Sequence[Middleware] = (),
        outbound_middleware: Sequence[Middleware] = (),
    ) -> None:
        """Args:
        stream: the transport; usually an ``open_*`` function builds it.
        client_info: the name and version sent to the server.
        protocol_version: "auto" (the default) probes with ``server/discover`` and speaks 2026-07-28 to a
            server that answers it, falling back to the ``initialize`` handshake otherwise; a legacy revision
            ("2025-11-25", ...) goes straight to ``initialize`` with it; "2026-07-28" insists on the modern era.
        probe_timeout: how long "auto" waits for the probe before deciding the server is legacy.
        request_timeout: seconds each request may wait for its answer (None: no limit); per call too.
        roots: answers ``roots/list``; registering it declares the roots capability.
        sampling: answers ``sampling/createMessage``; ``sampling_tools`` also declares tool use (2025-11-25).
        elicitation: answers ``elicitation/create``; ``elicitation_url`` also declares URL mode (2025-11-25).
        on_log: receives each ``notifications/message``. On 2026-07-28, where a server logs only when a request
            asks, registering it makes every request ask for "info" and above (``set_logging_level`` to change).
        on_resource_updated: receives the URI of each ``notifications/resources/updated``.
        on_list_changed: receives "tools", "resources" or "prompts" for each ``list_changed``.
        max_pages: how many pages an ``iter_*`` method fetches before deciding the server loops.
        host_tasks: declare 2025-11-25 task support for sampling/elicitation, so a server may ask for them as
            tasks (the callbacks then run as tasks the server polls; see docs/tasks.md).
        extensions: ``capabilities.extensions`` to declare (identifier -> settings), on every revision.
        request_handlers: answer the server's custom requests: method -> ``async def handler(params) -> dict``
            (run like the callbacks above; ``report_progress()`` works in them).
        notification_handlers: receive the server's custom notifications: method -> ``async def handler(params)``.
        middleware: wrapped around every request and notification the server sends (see docs/middleware.md).
        outbound_middleware: wrapped around every request this client sends (``call.params`` may be replaced
            before ``call_next()``; ``call.request_id`` is set once the request is written).

        Callbacks answering server requests (roots, sampling, elicitation) run in their own task, inside the
        request's cancel scope: the server's ``notifications/cancelled`` cancels them. If one raises, the
        server gets a JSON-RPC error (the ``McpError`` raised, or -32603 with an error id, the exception being
        logged on ``trio_mcp.session`` under the same id) and the session
        carries on. ``report_progress()`` inside one tells the server how far along it is.

        Notification callbacks run in the session's reader in arrival order (they may be async): keep them
        short, and hand long work to a task. Their exceptions are logged, never raised.
        """
        check_client_options(
            {
                "client_info": client_info,
                "protocol_version": protocol_version,
                "probe_timeout": probe_timeout,
                "request_timeout": request_timeout,
                "roots": roots,
                "sampling": sampling,
                "sampling_tools": sampling_tools,
                "elicitation": elicitation,
                "elicitation_url": elicitation_url,
                "on_log": on_log,
                "on_resource_updated": on_resource_updated,
                "on_list_changed": on_list_changed,
                "max_pages": max_pages,
                "host_tasks": host_tasks,
                "extensions": extensions or {},
                "request_handlers": request_handlers or {},
                "notification_handlers": notification_handlers or {},
                "middleware": middleware,
                "outbound_middleware": outbound_middleware,
            }
        )
        self.custom = CustomMethods()
        self.custom.add_extensions("extensions", extensions or {})
        for method, handler in (request_handlers or {}).items():
            self.custom.add_request(method, handler)
        for method, handler in (notification_handlers or {}).items():
            self.custom.add_notification(method, handler)
        #: Around every request and notification the server sends, outermost first.
        self.middleware_chain: tuple[Middleware, ...] = tuple(middleware)
        #: Around every request this client sends, outermost first.
        self.outbound_chain: tuple[Middleware, ...] = tuple(outbound_middleware)
        self.max_pages = max_pages
        #: outputSchema of each tool seen in the latest listings (None: the tool declared none).
        self._output_schemas: dict[str, dict[str, Any] | None] = {}
        #: x-mcp-header names of each listed tool, for HTTP transports that mirror arguments into headers.
        self._header_paths: dict[str, dict[str, tuple[str, ...]]] = {}
        #: The capabilities sent in ``initialize``; server requests are served only within them.
        self._declared: dict[str, Any] = {}
        self._stream = stream
        self.handlers = ServerRequestHandlers(roots, sampling, sampling_tools, elicitation, elicitation_url)
        self.on_log = on_log
        self.on_resource_updated = on_resource_updated
        self.on_list_changed = on_list_changed
        self._requested_version = protocol_version
        self._probe_timeout = probe_timeout
        #: "legacy" after an initialize handshake, "modern" when speaking 2026-07-28; None before start().
        self.era: Literal["legacy", "modern"] | None = None
        self._modern_version: str | None = None
        self._discover_result: DiscoverResult | None = None
        self._log_level: str | None = None
        self._subscriptions: dict[RequestId | None, Subscription] = {}
        self.client_info = client_info or Implementation(name="trio_mcp", version=__version__)
        self.lifecycle = Lifecycle()
        self.session = Session(stream, ClientInbound(self), request_timeout=request_timeout)
        self._initialize_result: InitializeResult | None = None
        self._on_close: list[Callable[[], Awaitable[None]]] = []
        #: Runs a 2025-11-25 server's task-augmented sampling/elicitation requests as tasks.
        self._task_host = TaskHost() if host_tasks else None
        self._peer_fault: RemoteProtocolError | None = None
        #: True once ``aclose()`` was called inside a cancelled scope: transports shut down without waiting.
        self.aborting = False
        self._nursery: trio.Nursery | None = None
        self._reconnect: Reconnect | None = None
        self._renew_lock = trio.Lock()
        self._renewing = False
        #: Resources subscribed with ``subscribe_resource`` (restored in a renewed session).
        self._subscribed_uris: set[str] = set()
        #: 2026-07-28 list and read results, kept for the ``ttlMs`` the server allows.
        self._cache = ResultCache()

    # -- lifetime ---------------------------------------------------------------------------------

    async def start(self, nursery: trio.Nursery) -> None:
        """Run the session in ``nursery`` and find out which era the server speaks (see ``protocol_version``)."""
        self._nursery = nursery
        await nursery.start(self.session.run)
        if self._task_host is not None:
            self._task_host.nursery = nursery
        try:
            await self._connect()
        except BaseException as exc:
            await self.aclose()
            if self._peer_fault is not None and isinstance(exc, (McpError, ConnectionClosed, RequestTimeout)):
                raise self._peer_fault from None
            raise

    def fail_handshake(self, fault: RemoteProtocolError) -> None:
        """End a handshake the peer cannot complete; ``start()`` raises ``fault`` instead of what the calls saw."""
        if self._peer_fault is None:
            self._peer_fault = fault
        self.session.close(str(fault))

    @property
    def subscriptions(self) -> dict[RequestId | None, Subscription]:
        """The ``listen()`` blocks running now (keyed by their ``subscriptions/listen`` id on 2026-07-28)."""
        return self._subscriptions

    async def serve_request(self, request: InboundRequest) -> Any:
        """Answer a server request with the registered callbacks (as a task, when the server asks for one)."""
        host = self._task_host
        if host is not None and self.era == "legacy" and host.wants(request.method, request.params):
            return await host.handle(request, self._answer_request)
        return await self._answer_request(request)

    async def _answer_request(self, request: InboundRequest) -> Any:
        # This task serves only this request, so the variable is seen by this callback alone.
        serving.set((request, self.protocol_version))
        return await self._answer(request.method, request.params)

    async def _answer(self, method: str, params: Any) -> Any:
        """The result of a server request (a JSON-RPC one, or embedded in an ``InputRequiredResult``)."""
        custom = self.custom.requests.get(method)
        if custom is None:
            return await self.handlers.answer(method, params, self._declared)
        return custom_result(method, await custom(params))

    def note_task_status(self, params: dict[str, Any] | None) -> None:
        """A ``notifications/tasks/status`` arrived: wake whoever polls that task."""
        task_status_notified(self, params)

    def note_change(self, change: ChangeNotification) -> None:
        """The server reported a change: drop the cached results and tool schemas it made stale."""
        self._cache.invalidate(change)
        if change.kind == "tools":
            self._output_schemas.clear()  # stale schemas would fail good results; listing again brings them back

    async def _connect(self) -> None:
        requested = self._requested_version
        if requested in LEGACY_VERSIONS:
            await self._initialize(requested)
            return
        if requested in MODERN_VERSIONS:
            await self._discover(requested, timeout=DEFAULT_TIMEOUT)
            return
        # "auto": the stdio probe of the 2026-07-28 versioning page. A DiscoverResult, or a recognised modern
        # error, means a modern server; any other error or silence means a legacy one.
        try:
            await self._discover(MODERN_VERSIONS[-1], timeout=self._probe_timeout)
            return
        except McpError as exc:
            supported = supported_versions(exc)
            if supported is None:
                logger.debug("server/discover probe failed (%s); falling back to initialize", exc)
            elif modern := [v for v in MODERN_VERSIONS if v in supported]:
                await self._discover(modern[-1], timeout=DEFAULT_TIMEOUT)
                return
            elif not any(v in supported for v in LEGACY_VERSIONS):
                raise
        except (RequestTimeout, RemoteProtocolError) as exc:
            logger.debug("server/discover probe failed (%s); falling back to initialize", exc)
        await self._initialize(LATEST_LEGACY_VERSION)

    async def _discover(self, version: str, *, timeout: float | None) -> None:
        self._modern_version = version
        self._declared = self._capabilities(version)
        options: dict[str, Any] = {} if timeout is DEFAULT_TIMEOUT else {"timeout": timeout}
        raw = await self._send_request("server/discover", {"_meta": self._envelope()}, **options)
        self._discover_result = parse_result(raw, DiscoverResult, "server/discover")
        self.era = "modern"

    def add_close_callback(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Run ``callback`` during ``aclose()`` (transports use it to stop their processes)."""
        self._on_close.append(callback)

    async def aclose(self) -> None:
        """Fail every pending call with ``ConnectionClosed`` at once, then shut the transport down.

        Called inside a cancelled scope it is prompt: ``aborting`` tells the close callbacks not to wait for a
        graceful exit (a stdio server gets a moment to exit, then a signal).
        """
        self.aborting = trio.current_effective_deadline() == -math.inf
        if self._task_host is not None:
            self._task_host.close()
        await self.session.aclose()
        callbacks, self._on_close = self._on_close, []
        with trio.CancelScope(shield=True):
            for callback in reversed(callbacks):
                await callback()

    async def _initialize(self, version: str) -> None:
        self._modern_version = None
        self._declared = self._capabilities(version)
        params = {
            "protocolVersion": version,
            "capabilities": self._declared,
            "clientInfo": {"name": self.client_info.name, "version": self.client_info.version},
        }
        self.lifecycle.handle(HandshakeEvent.INITIALIZE_REQUEST)
        try:
            raw = await self._send_request("initialize", params, cancellable=False)
        except McpError:
            self.lifecycle.handle(HandshakeEvent.INITIALIZE_ERROR)
            raise
        result = parse_result(raw, InitializeResult, "initialize")
        if result.protocol_version not in LEGACY_VERSIONS:
            raise RemoteProtocolError(
                f"server chose protocol version {result.protocol_version!r}, which this client does not support"
            )
        self._initialize_result = result
        self.session.accept_batches = has(result.protocol_version, Feature.BATCHES)
        self.lifecycle.handle(HandshakeEvent.INITIALIZE_RESULT)
        await self.session.notify("notifications/initialized")
        self.lifecycle.handle(HandshakeEvent.INITIALIZED_NOTIFICATION)
        self.era = "legacy"

    def _capabilities(self, version: str) -> dict[str, Any]:
        """What the registered callbacks (and ``host_tasks``) let this client declare, speaking ``version``."""
        capabilities = self.handlers.capabilities(version)
        tasks = TaskHost.capability(capabilities, version) if self._task_host is not None else None
        if tasks is not None:
            capabilities["tasks"] = tasks
        capabilities = self.custom.declared(capabilities)
        return declare_deadlines(capabilities) if has(version, Feature.DEADLINES) else capabilities

    async def notify_roots_changed(self) -> None:
        """Tell the server the roots changed (``notifications/roots/list_changed``; a no-op on 2026-07-28,
        where the server asks for roots with each request that needs them)."""
        if "roots" not in self._declared:
            raise RuntimeError("no roots handler was registered, so no roots capability was declared")
        if not METHODS["notifications/roots/list_changed"].sent_by("client", self.protocol_version):
            return
        await self.session.notify("notifications/roots/list_changed")

    def _envelope(self) -> dict[str, Any]:
        """The per-request ``_meta`` of 2026-07-28: version, capabilities, identity and log level."""
        assert self._modern_version is not None
        meta: dict[str, Any] = {
            META_PROTOCOL_VERSION: self._modern_version,
            META_CLIENT_CAPABILITIES: self._declared,
            META_CLIENT_INFO: {"name": self.client_info.name, "version": self.client_info.version},
        }
        level = self._log_level
        if level is None and self.on_log is not None and self._server_logs():
            level = DEFAULT_LOG_LEVEL  # a log callback is the user asking for logs; the server sends none unasked
        if level is not None:
            meta[META_LOG_LEVEL] = level
        return meta

    def _server_logs(self) -> bool:
        return self._discover_result is not None and self._discover_result.capabilities.logging is not None

    # -- what the handshake told us ---------------------------------------------------------------

    @property
    def initialize_result(self) -> InitializeResult:
        """The server's answer to ``initialize`` (legacy era only)."""
        if self._initialize_result is None:
            raise RuntimeError("no initialize result: the client is not started, or speaks 2026-07-28")
        return self._initialize_result

    @property
    def discover_result(self) -> DiscoverResult:
        """The server's answer to ``server/discover`` (2026-07-28 only)."""
        if self._discover_result is None:
            raise RuntimeError("no server/discover result: the client is not started, or speaks the legacy era")
        return self._discover_result

    @property
    def protocol_version(self) -> str:
        """The protocol revision in use (negotiated by ``initialize``, or chosen for 2026-07-28)."""
        if self._modern_version is not None:
            return self._modern_version
        return self.initialize_result.protocol_version

    @property
    def negotiated_version(self) -> str | None:
        """``protocol_version``, or None before the client has one."""
        if self._modern_version is not None:
            return self._modern_version
        return self._initialize_result.protocol_version if self._initialize_result is not None else None

    @property
    def server_info(self) -> Implementation:
        """The server's name and version."""
        if self._discover_result is not None:
            info = (self._discover_result.meta or {}).get(META_SERVER_INFO)
            if isinstance(info, dict):
                return parse_result(info, Implementation, "server/discover serverInfo")
            return Implementation(name="unknown", version="unknown")
        return self.initialize_result.server_info

    @property
    def server_capabilities(self) -> ServerCapabilities:
        """What the server said it offers."""
        if self._discover_result is not None:
            return self._discover_result.capabilities
        return self.initialize_result.capabilities

    @property
    def instructions(self) -> str | None:
        """The server's usage instructions for the model, if it sent any."""
        if self._discover_result is not None:
            return self._discover_result.instructions
        return self.initialize_result.instructions

    # -- calls ------------------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        on_progress: ProgressHandler | None = None,
        max_total_timeout: float | None = None,
    ) -> Any:
        """Send any request (custom methods included) and return its raw JSON result.

        ``timeout`` (default: the client's ``request_timeout``) restarts with every progress update when
        ``on_progress`` is given, but never runs past ``max_total_timeout``. A method that needs a server
        capability the server did not declare is refused here, before sending, with ``CapabilityError``.
        """
        if not isinstance(method, str) or not method:
            raise TypeError(f"method must be a non-empty str, not {method!r}")
        if params is not None and type(params) is not dict:
            raise TypeError(f"params must be a dict or None, not {type(params).__name__}")
        if timeout is not DEFAULT_TIMEOUT:
            check_timeout("timeout", timeout)
        check_timeout("max_total_timeout", max_total_timeout)
        if on_progress is not None and not callable(on_progress):
            raise TypeError(f"on_progress must be a function or None, not {type(on_progress).__name__}")
        refusal = send_refusal(method, self.protocol_version, "client", self.server_capabilities)
        if refusal is not None:
            instead = REPLACED_IN_STATELESS.get(method) if self.era == "modern" else None
            raise CapabilityError(method, f"{refusal}: {instead}" if instead else refusal)
        options: dict[str, Any] = {}
        if timeout is not DEFAULT_TIMEOUT:
            options["timeout"] = timeout
        if on_progress is not None:
            options["on_progress"] = typed_progress(on_progress)
            options["reset_timeout_on_progress"] = True
        if max_total_timeout is not None:
            options["max_total_timeout"] = max_total_timeout
        if self.era != "modern":
            return await self._send_request(method, params, **options)
        return await self._modern_request(method, params, options)

    async def _send_request(self, method: str, params: dict[str, Any] | None, **options: Any) -> Any:
        """The one way requests leave the client, through the ``outbound_middleware``."""
        chain = self.outbound_chain
        if not chain:
            return await self._send_renewing(method, params, options)
        call = RequestInfo(method, params, None, None, self.negotiated_version, notification=False)

        def note_id(request_id: RequestId) -> None:
            call.request_id = request_id

        options["on_id"] = note_id
        return await run_middleware(chain, call, lambda: self._send_renewing(method, call.params, options))

    async def _send_renewing(self, method: str, params: dict[str, Any] | None, options: dict[str, Any]) -> Any:
        """Send a request; a session the server ended is renewed, and the request sent again if safe (``_renewal``)."""
        session = self.session
        unsent = session.closed
        try:
            return await request_on(session, method, params, options)
        except ConnectionClosed:
            if not await self._renew_session(session):
                raise
            if not unsent and method not in SAFE_TO_RETRY:
                raise SessionLost(method) from None
        return await request_on(self.session, method, params, options)

    def enable_session_renewal(self, reconnect: Reconnect) -> None:
        """Start a new session when the server ends this one (transports with sessions call it: HTTP does)."""
        self._reconnect = reconnect

    async def _renew_session(self, ended: Session) -> bool:
        """After ``ended`` closed: True if a new session is running (started here or by a concurrent call)."""
        if self._reconnect is None or self.era != "legacy" or self._renewing:
            return False
        async with self._renew_lock:
            if self.session is not ended:
                return not self.session.closed
            stream = await self._reconnect(ended.stream)
            if stream is None:
                return False
            self._renewing = True
            try:
                await self._restart(stream)
            except (McpError, ConnectionClosed, RequestTimeout, RemoteProtocolError) as exc:
                logger.warning("the server ended the session and a new one could not be started: %s", exc)
                return False
            finally:
                self._renewing = False
            return True

    async def _restart(self, stream: MessageStream) -> None:
        """Initialize a new session over ``stream`` and restore the log level and resource subscriptions."""
        assert self._nursery is not None
        version, timeout = self.protocol_version, self.session.request_timeout
        self._stream = stream
        self.lifecycle = Lifecycle()
        self.session = Session(stream, ClientInbound(self), request_timeout=timeout)
        await self._nursery.start(self.session.run)
        await self._initialize(version)
        if self._log_level is not None:
            await self._send_request("logging/setLevel", {"level": self._log_level})
        uris = set(self._subscribed_uris)
        for subscription in self._subscriptions.values():
            uris.update(subscription.resource_uris)
        for uri in sorted(uris):
            await self._send_request("resources/subscribe", {"uri": uri})
        logger.info("the server ended the session; started a new one (%d resource subscriptions restored)", len(uris))

    async def _modern_request(self, method: str, params: dict[str, Any] | None, options: dict[str, Any]) -> Any:
        """A 2026-07-28 request: the envelope goes in ``_meta``, and input the server asks for is gathered
        from the callbacks and sent back in a retry (a new request id each round)."""
        cacheable = method in CACHEABLE_METHODS
        if cacheable and (cached := self._cache.get(method, params)) is not None:
            return cached
        asked = params
        params = dict(params or {})
        params["_meta"] = {**(params.get("_meta") or {}), **self._envelope()}
        for rounds in range(MAX_INPUT_ROUNDS):
            raw = await self._send_request(method, params, **options)
            result_type = raw.get("resultType") if type(raw) is dict else None
            if result_type in (None, "complete"):
                if cacheable and rounds == 0:  # never a result that took input rounds
                    self._cache.put(method, asked, raw)
                return raw
            if result_type != "input_required" or method not in INPUT_REQUIRED_METHODS:
                raise RemoteProtocolError(f"server answered {method} with unknown resultType {result_type!r}")
            params = {key: value for key, value in params.items() if key not in ("inputResponses", "requestState")}
            params["inputResponses"] = await self._gather_input(raw.get("inputRequests") or {})
            if "requestState" in raw:
                params["requestState"] = raw["requestState"]  # echoed byte for byte
        raise RemoteProtocolError(f"server asked for input more than {MAX_INPUT_ROUNDS} times for one {method}")

    async def _gather_input(self, requests: Any) -> dict[str, Any]:
        """Answer a round of embedded input requests with the registered callbacks, all at once."""
        if type(requests) is not dict:
            raise RemoteProtocolError("inputRequests must be an object")
        answers: dict[str, Any] = {}

        async def answer(key: str, embedded: Any) -> None:
            method = embedded.get("method") if type(embedded) is dict else None
            params = embedded.get("params") if type(embedded) is dict else None
            try:
                answers[key] = await self._answer(str(method), params)
            except Refused as exc:
                raise RemoteProtocolError(f"server asked for {method!r} input this client cannot give: {exc}") from None

        with collapse_exception_groups():
            async with trio.open_nursery() as nursery:
                for key, embedded in requests.items():
                    nursery.start_soon(answer, key, embedded)
        return answers

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification to the server."""
        await self.session.notify(method, params)

    async def ping(self, *, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        """Check the server is alive; raises ``RequestTimeout`` if it does not answer.

        2026-07-28 has no ``ping``; there a ``server/discover`` round trip stands in for it.
        """
        await self.request("server/discover" if self.era == "modern" else "ping", timeout=timeout)

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """One page of the server's tools; pass ``next_cursor`` back for the next page (or use ``iter_tools``).

        Tools the client must not use are left out, with a warning on the ``trio_mcp.client`` logger naming
        the tool and the reason: an invalid ``x-mcp-header`` annotation (the spec says to drop them), or a
        schema too large or too deeply nested to handle safely. The ``outputSchema`` of each tool kept is
        remembered, so that ``call_tool`` can check structured results against it.
        """
        raw = await self.request("tools/list", cursor_params(cursor))
        result = parse_result(raw, ListToolsResult, "tools/list")
        kept: list[Tool] = []
        for tool in result.tools:
            problem = tool_problem(tool)
            if problem is not None:
                logger.warning("dropping tool %r from the tools/list result: %s", tool.name, problem)
                self._output_schemas.pop(tool.name, None)
                continue
            kept.append(tool)
            self._output_schemas[tool.name] = tool.output_schema
            self._header_paths[tool.name] = header_paths(tool.input_schema)
        if len(kept) == len(result.tools):
            return result
        return attrs.evolve(result, tools=kept)

    def tool_header_paths(self, name: str) -> dict[str, tuple[str, ...]] | None:
        """The ``x-mcp-header`` names of a listed tool and the argument path each mirrors (None: never listed)."""
        return self._header_paths.get(name)

    def iter_tools(self, *, max_pages: int | None = None) -> AsyncIterator[Tool]:
        """Every tool, fetching pages as the loop needs them: ``async for tool in client.iter_tools():``.

        Raises ``RemoteProtocolError`` if the server repeats a cursor or needs more than ``max_pages`` pages
        (default: the client's ``max_pages``).
        """

        async def fetch(cursor: str | None) -> tuple[Sequence[Tool], str | None]:
            page = await self.list_tools(cursor)
            return page.tools, page.next_cursor

        return ItemPages("tools/list", fetch, max_pages=self.max_pages if max_pages is None else max_pages)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        on_progress: ProgressHandler | None = None,
        max_total_timeout: float | None = None,
        meta: dict[str, Any] | None = None,
        validate_output: bool = True,
    ) -> CallToolResult:
        """Call a tool. A tool that fails returns a result with ``is_error=True``; it does not raise.

        ``on_progress`` receives the server's progress updates; each one restarts the timeout.

        When the latest listing showed this tool with an ``outputSchema``, a successful result must carry
        ``structuredContent`` that matches it, or ``StructuredContentError`` is raised (the result rides on
        the exception); ``validate_output=False`` skips the check. A tool never listed is not checked: the
        client does not list tools behind your back.
        """
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        if arguments is not None and not isinstance(arguments, dict):
            raise TypeError(f"arguments must be a dict or None, not {type(arguments).__name__}")
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if meta is not None:
            params["_meta"] = meta
        try:
            raw = await self.request(
                "tools/call", params, timeout=timeout, on_progress=on_progress, max_total_timeout=max_total_timeout
            )
        except McpError as exc:
            if exc.code != HEADER_MISMATCH:
                raise
            # The tool's x-mcp-header annotations changed under us: list tools again, then retry once.
            await self.list_tools()
            raw = await self.request(
                "tools/call", params, timeout=timeout, on_progress=on_progress, max_total_timeout=max_total_timeout
            )
        result = parse_result(raw, CallToolResult, "tools/call")
        if validate_output and result.is_error is not True:
            schema = self._output_schemas.get(name)
            if schema is not None:
                if result.structured_content is None:
                    raise StructuredContentError(
                        name, ["the tool declares an outputSchema but returned no structuredContent"], result
                    )
                errors = validate(result.structured_content, schema)
                if errors:
                    raise StructuredContentError(name, errors, result)
        return result

    async def call_tool_as_task(
        self, name: str, arguments: dict[str, Any] | None = None, **options: Any
    ) -> CallToolResult:
        """Call a tool as a task and wait for its result; cancelling the call cancels the task on the server.
        See ``trio_mcp.client.call_tool_as_task`` (docs/tasks.md) for ``ttl``, ``on_status``, ``poll_interval``."""
        from ._tasks import call_tool_as_task

        return await call_tool_as_task(self, name, arguments, **options)

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        """One page of the server's resources."""
        return parse_result(
            await self.request("resources/list", cursor_params(cursor)), ListResourcesResult, "resources/list"
        )

    def iter_resources(self, *, max_pages: int | None = None) -> AsyncIterator[Resource]:
        """Every resource, page by page as the loop needs them; guarded like ``iter_tools``."""

        async def fetch(cursor: str | None) -> tuple[Sequence[Resource], str | None]:
            page = await self.list_resources(cursor)
            return page.resources, page.next_cursor

        return ItemPages("resources/list", fetch, max_pages=self.max_pages if max_pages is None else max_pages)

    async def list_resource_templates(self, cursor: str | None = None) -> ListResourceTemplatesResult:
        """One page of the server's resource templates."""
        raw = await self.request("resources/templates/list", cursor_params(cursor))
        return parse_result(raw, ListResourceTemplatesResult, "resources/templates/list")

    def iter_resource_templates(self, *, max_pages: int | None = None) -> AsyncIterator[ResourceTemplate]:
        """Every resource template, page by page as the loop needs them; guarded like ``iter_tools``."""

        async def fetch(cursor: str | None) -> tuple[Sequence[ResourceTemplate], str | None]:
            page = await self.list_resource_templates(cursor)
            return page.resource_templates, page.next_cursor

        return ItemPages(
            "resources/templates/list", fetch, max_pages=self.max_pages if max_pages is None else max_pages
        )

    async def read_resource(self, uri: str, *, timeout: float | None = DEFAULT_TIMEOUT) -> ReadResourceResult:
        """Read one resource; a missing one raises ``McpError`` (-32002, or -32602 on 2026-07-28)."""
        raw = await self.request("resources/read", {"uri": uri}, timeout=timeout)
        return parse_result(raw, ReadResourceResult, "resources/read")

    async def subscribe_resource(self, uri: str) -> None:
        """Ask for ``notifications/resources/updated`` when ``uri`` changes."""
        await self.request("resources/subscribe", {"uri": uri})
        self._subscribed_uris.add(uri)

    async def unsubscribe_resource(self, uri: str) -> None:
        """Stop the updates ``subscribe_resource`` asked for."""
        self._subscribed_uris.discard(uri)
        await self.request("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        """One page of the server's prompts."""
        return parse_result(
            await self.request("prompts/list", cursor_params(cursor)), ListPromptsResult, "prompts/list"
        )

    def iter_prompts(self, *, max_pages: int | None = None) -> AsyncIterator[Prompt]:
        """Every prompt, page by page as the loop needs them; guarded like ``iter_tools``."""

        async def fetch(cursor: str | None) -> tuple[Sequence[Prompt], str | None]:
            page = await self.list_prompts(cursor)
            return page.prompts, page.next_cursor

        return ItemPages("prompts/list", fetch, max_pages=self.max_pages if max_pages is None else max_pages)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, timeout: float | None = DEFAULT_TIMEOUT
    ) -> GetPromptResult:
        """Render a prompt with its (string) arguments."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        raw = await self.request("prompts/get", params, timeout=timeout)
        return parse_result(raw, GetPromptResult, "prompts/get")

    async def complete(
        self,
        ref: CompletionReference,
        argument: CompletionArgument,
        context: CompletionContext | None = None,
    ) -> CompleteResult:
        """Ask for completions of a prompt argument or a template variable."""
        params: dict[str, Any] = {"ref": to_wire(ref), "argument": to_wire(argument)}
        if context is not None:
            params["context"] = to_wire(context)
        return parse_result(await self.request("completion/complete", params), CompleteResult, "completion/complete")

    async def set_logging_level(self, level: str) -> None:
        """Set the least severe level of ``notifications/message`` the server sends.

        On 2026-07-28 the level travels with every later request instead (no message is sent now).
        """
        self._log_level = level  # sent with each request on 2026-07-28; restored in a renewed session
        if self.era != "modern":
            await self.request("logging/setLevel", {"level": level})

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
    ) -> AsyncIterator[Subscription]:
        """Receive change notifications while the block runs: ``async for change in subscription``.

        ``tools``/``prompts``/``resources`` ask for list changes, ``resource_uris`` for updates of those
        resources. On 2026-07-28 this is one ``subscriptions/listen`` request (``honoured`` says what the
        server agreed to); on the legacy revisions, ``resources/subscribe`` for each URI (undone on exit)
        plus the session's list-changed notifications. The other callbacks (``on_list_changed`` ...) still run.
        """
        subscription = Subscription(tools, prompts, resources, frozenset(resource_uris))
        with collapse_exception_groups():  # the caller's own exception leaves the block as itself
            async with trio.open_nursery() as nursery:
                if self.era == "modern":
                    await self._listen_modern(nursery, subscription)
                else:
                    for uri in subscription.resource_uris:
                        await self.request("resources/subscribe", {"uri": uri})
                    self._subscriptions[id(subscription)] = subscription
                    subscription.acknowledged.set()
                try:
                    yield subscription
                finally:
                    self._subscriptions = {k: v for k, v in self._subscriptions.items() if v is not subscription}
                    subscription.end()
                    nursery.cancel_scope.cancel()
                    if self.era != "modern" and not self.session.closed:
                        with trio.CancelScope(shield=True), trio.move_on_after(5):
                            for uri in subscription.resource_uris:
                                try:
                                    await self.request("resources/unsubscribe", {"uri": uri})
                                except (McpError, RequestTimeout, ConnectionClosed):
                                    pass

    async def _listen_modern(self, nursery: trio.Nursery, subscription: Subscription) -> None:
        def registered(request_id: RequestId) -> None:
            subscription.request_id = request_id
            self._subscriptions[request_id] = subscription

        async def run() -> None:
            try:
                await self._send_request(
                    "subscriptions/listen",
                    {"notifications": subscription.notifications_wanted(), "_meta": self._envelope()},
                    timeout=None,
                    on_id=registered,
                )
            except (McpError, ConnectionClosed) as exc:
                logger.warning("subscriptions/listen ended with an error: %s", exc)
            finally:
                subscription.acknowledged.set()
                subscription.end()

        nursery.start_soon(run)
        with trio.fail_after(self.session.request_timeout or 60.0):
            await subscription.acknowledged.wait()
