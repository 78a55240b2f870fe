"""One client connection to a ``Server``: the handshake, capability checks, dispatch and notifications."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

import trio

from .._core.jsonrpc import RequestId
from .._core.lifecycle import HandshakeEvent, Lifecycle, Phase
from .._core.session_record import SessionState
from .._custom import custom_result
from .._failures import Fate, failure_text, fate_of, report_failure, shaped
from .._middleware import RequestInfo, run_middleware
from .._pagination import page_result
from .._runner import InCaller, Spawn
from .._schema import ArgumentError
from .._session import InboundRequest, Session
from .._task_set import TaskSet
from .._util import first_leaf
from .._wire.convert import from_wire, params_from_wire, to_wire
from .._wire.features import Feature, has
from .._wire.methods import spec_for
from .._wire.versions import KNOWN_VERSIONS, LATEST_LEGACY_VERSION, LEGACY_VERSIONS
from ..auth._scopes import scopes_admitted
from ..errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    McpError,
    ResourceNotFound,
    ToolError,
)
from ..transports._base import MessageStream, StreamControl, notified_change
from ..types import (
    INPUT_REQUIRED_METHODS,
    RESULT_INPUT_REQUIRED,
    CallToolRequestParams,
    ClientCapabilities,
    CompleteRequestParams,
    Completion,
    GetPromptRequestParams,
    Implementation,
    InitializeRequestParams,
    ListRootsResult,
    PaginatedRequestParams,
    PromptReference,
    ReadResourceRequestParams,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionFilter,
    SubscriptionsListenRequestParams,
    UnsubscribeRequestParams,
)
from ._context import Context, HandlerCancelled
from ._listen import ListenStreams, Told
from ._logging import LEVELS, RateLimiter, current_context, level_rank
from ._modern import InputRequired, ModernRequest, find_input_required, is_modern, modern_meta, params_digest
from ._outbox import Outbox
from ._registry import ServerCore
from ._task_requests import TASK_HANDLERS, TaskContext
from ._tasks import LiveTask
from ._tools import ToolDefinition, argument_error_result, error_result

__all__ = ["ServerConnection"]


logger = logging.getLogger("trio_mcp.server")

MethodHandler = Callable[["ServerConnection", InboundRequest, "ModernRequest | None"], Awaitable[Any]]

_NO_CAPABILITIES: Final = ClientCapabilities()
#: What a connection admits without asking its lifecycle before the handshake is over: nothing.
_NONE_ADMITTED: Final[Mapping[str, tuple[MethodHandler, str | None]]] = MappingProxyType({})
#: The phase of every connection without a handshake (``modern_only``): NEW, for good (nothing advances it).
_NO_HANDSHAKE: Final = Lifecycle()
#: What such a connection has for its ``_initialized`` event: never set, never waited for (its notifications
#: never wait for a handshake).
_NEVER_INITIALIZED: Final = trio.Event()
#: How the one request of a connection that serves one message runs: in the caller's task, that task its scope
#: (no peer's cancel can reach a request that is the connection's only message, and its end ends the call).
_ALONE: Final = InCaller()
#: Resources one connection may subscribe to.
_SUBSCRIPTION_LIMIT: Final = 1024
#: At most this many completion values are sent (the spec's limit).
_MAX_COMPLETIONS: Final = 100

_LIST_CHANGED: Final = {
    "tools": "notifications/tools/list_changed",
    "resources": "notifications/resources/list_changed",
    "prompts": "notifications/prompts/list_changed",
}


class _HandlerContext:
    """``ServerConnection._context``: a class, not a generator, as it wraps every handler."""

    __slots__ = ("_context", "_scope", "_token")

    def __init__(self, context: Context, sees_context: bool) -> None:
        self._context = context
        self._scope = context.cancel_scope if sees_context else None

    def __enter__(self) -> Context:
        self._token = current_context.set(self._context)
        if self._scope is not None:
            self._scope.__enter__()
        return self._context

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: Any) -> None:
        scope = self._scope
        if scope is None:  # most handlers: no scope of their own
            current_context.reset(self._token)
            return
        try:
            scope.__exit__(kind, error, traceback)
        finally:
            current_context.reset(self._token)
        if scope.cancelled_caught:  # its Cancelled was swallowed by the scope
            raise HandlerCancelled(timed_out=scope.deadline <= trio.current_time()) from None


class _Serving:
    """``ServerConnection._serving``: a class, not a generator, as it wraps every stateless HTTP request."""

    __slots__ = ("_connection", "_cancel")

    def __init__(self, connection: ServerConnection, cancel: Callable[[], None]) -> None:
        self._connection = connection
        self._cancel = cancel

    def __enter__(self) -> None:
        self._connection.server.connections.add(self._connection)

    def __exit__(self, *exc_info: object) -> None:
        self._connection._ended()
        self._cancel()


class ServerConnection:
    """Serves one client over one ``MessageStream``; implements the session's ``RequestHandler``."""

    inline_methods: Final = frozenset({"initialize"})

    # What every connection starts with, as class attributes: a connection made for one stateless request need not
    # set them one by one. Each is set on the connection when it changes.
    #: The negotiated revision (None before ``initialize``), and the one served (the newest legacy revision before).
    protocol_version: str | None = None
    version: str = LATEST_LEGACY_VERSION
    client_info: Implementation | None = None
    client_capabilities: ClientCapabilities = _NO_CAPABILITIES
    _log_limiter: RateLimiter | None = None
    #: The entries (``_DISPATCH``) of the requests served without asking the lifecycle: none before the handshake
    #: is over, then every one of the revision's but initialize (``_PAST_INITIALIZE``, kept by ``_dispatch``).
    _admitted: Mapping[str, tuple[MethodHandler, str | None]] = _NONE_ADMITTED
    #: Notifications outside a request; made with the first one queued: most connections never queue one.
    _outbox: Outbox | None = None
    #: Where the connection's tasks run, once it serves.
    _nursery: trio.Nursery | TaskSet | None = None

    def __init__(
        self,
        server: ServerCore,
        stream: MessageStream,
        *,
        modern_only: bool = False,
        principal: Any = None,
        control: StreamControl | None = None,
    ) -> None:
        """``modern_only`` treats every request as 2026-07-28 (a stateless HTTP request, say): one without
        the per-request ``_meta`` is then an error rather than a legacy-era request. ``control`` is what a
        transport with per-request streams offers (Streamable HTTP sessions)."""
        self.server = server
        self.control = control
        self.modern_only = modern_only
        self._principal = principal
        self._stream = stream
        # A 2026-07-28 connection has no handshake: it stays in its first phase, which every such connection shares.
        handshake = not modern_only or control is not None
        self.lifecycle = Lifecycle() if handshake else _NO_HANDSHAKE
        self.log_level = server.default_log_level
        self.subscriptions: set[str] = set()
        self.session = Session(
            stream,
            self,
            max_in_flight=server.max_in_flight,
            peer_cancel_mode=server.peer_cancel_mode,
            expose_errors=server.expose_errors,
            request_id_prefix=control.request_id_prefix if control is not None else "",
            request_ended=control.request_ended if control is not None else None,
        )
        #: Open 2026-07-28 ``subscriptions/listen`` requests on this connection, by request id.
        self.listeners = ListenStreams()
        #: Log params the stdlib bridge queued for requests being served, sent before their answers (a list made
        #: with a request's first: most never log).
        self._held_logs: dict[RequestId, list[dict[str, Any]]] = {}
        #: Set once the client is initialized (what needs it waits); never, without a handshake.
        self._initialized = trio.Event() if handshake else _NEVER_INITIALIZED
        self._trio_token = trio.lowlevel.current_trio_token()
        if control is not None:
            control.on_state(self._apply_state)
            if control.restored is not None:
                # A session another process initialized: no handshake here, the client is past it.
                self._apply_state(control.restored)
                self.lifecycle.phase = Phase.READY
                self._initialized.set()

    def past_handshake(self, version: str) -> None:
        """Serve as a session that is past its handshake on ``version`` (the work of a task run again here)."""
        assert self.lifecycle is not _NO_HANDSHAKE, "a 2026-07-28 connection has no handshake to be past"
        self._negotiated(version)
        self.lifecycle.phase = Phase.READY
        self._initialized.set()

    def session_state(self) -> SessionState:
        """What the session negotiated and what the client set since (``StreamControl.remember``)."""
        return SessionState(
            protocol_version=self.version,
            client_info=to_wire(self.client_info) if self.client_info is not None else None,
            capabilities=to_wire(self.client_capabilities),
            log_level=self.log_level,
            subscriptions=tuple(sorted(self.subscriptions)),
        )

    def _apply_state(self, state: SessionState) -> None:
        """Take what another process serving this session recorded (``session_state``) as this session's own."""
        self._negotiated(state.protocol_version)
        info = state.client_info
        self.client_info = from_wire(info, Implementation) if info is not None else None
        self.client_capabilities = from_wire(state.capabilities, ClientCapabilities)
        self.log_level = state.log_level or self.log_level
        self.subscriptions = set(state.subscriptions)
        self.session.accept_batches = has(self.version, Feature.BATCHES)

    async def _remember(self) -> None:
        if self.control is not None:
            await self.control.remember(self.session_state())

    def _negotiated(self, version: str | None) -> None:
        """Serve ``version`` (None: not negotiated); the lifecycle is asked afresh what its requests may be."""
        self.protocol_version = version
        self.version = version or LATEST_LEGACY_VERSION
        self._admitted = _NONE_ADMITTED

    async def serve(
        self, runner: Spawn | InCaller | None = None, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve the client, its requests run by ``runner`` (see ``Server.serve_connection``)."""
        if runner is None:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self._run_session, nursery)
                task_status.started()
        elif isinstance(runner, Spawn):
            self._attach(runner)
            task_status.started()
        else:
            task_status.started()
            await self._serve_alone(runner)

    async def _run_session(self, nursery: trio.Nursery, *, task_status: trio.TaskStatus[None]) -> None:
        with self._serving(nursery.cancel_scope.cancel):
            await self.session.run(task_status=task_status)

    async def _serve_alone(self, runner: InCaller) -> None:
        """Serve the one message of a stateless HTTP request in this task (``Session.serve_alone``), then end;
        what the request starts (its notifications' delivery, its tasks) runs in ``runner.tasks``, a
        transport's (no nursery to open for a request that starts nothing), or else in a nursery of its own.
        The request itself needs no scope of its own (``_ALONE``): nothing but its task's end can end it."""
        message = await self._stream.receive()
        tasks = runner.tasks
        if tasks is not None:
            self._nursery = tasks
            with self._serving(tasks.cancel):
                await self.session.serve_alone(message, _ALONE)
            return
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            with self._serving(nursery.cancel_scope.cancel):
                await self.session.serve_alone(message, _ALONE)

    def _attach(self, runner: Spawn) -> None:
        """Serve with no task of this connection's own (``Session.attach``): the transport hands each client
        message to ``control.on_inbound``'s callback and everything else runs in ``runner.tasks``; cancelling
        them ends the connection. An idle session then costs no parked task."""
        assert self.control is not None, "an attached connection takes its messages through its StreamControl"
        tasks = runner.tasks
        assert type(tasks) is TaskSet
        self._nursery = tasks
        self.server.connections.add(self)
        self.session.attach(runner)
        tasks.on_cancel(self._ended)
        self.control.on_inbound(self.session.take)

    def _serving(self, cancel: Callable[[], None]) -> _Serving:
        """While the session runs the server knows this connection (changes reach it); when it ends, its tasks
        are cancelled and so is everything it started (``cancel`` cancels it)."""
        return _Serving(self, cancel)

    def _ended(self) -> None:
        """The server forgets this connection: no change reaches it, and its tasks (nobody can reach) are
        cancelled."""
        self.server.connections.discard(self)
        self.server.tasks.connection_closed(self)
        self.session.release_handler()

    def task_nursery(self) -> trio.Nursery | TaskSet:
        """Where tasks run when the server's task manager is not serving (outside ``Server.running()``)."""
        assert self._nursery is not None
        return self._nursery

    @property
    def session_id(self) -> str | None:
        """The id of the session served when other processes may serve it too (``StreamControl.session_id``),
        else None."""
        return self.control.session_id if self.control is not None else None

    @property
    def principal(self) -> Any:
        """Who the transport authenticated (HTTP bearer tokens), None when it did not; a stream that
        authenticates every request (an HTTP session: the caller's token is refreshed or stepped up) has the
        latest as its ``principal``."""
        return getattr(self._stream, "principal", self._principal)

    # -- RequestHandler ---------------------------------------------------------------------------

    async def handle_request(self, request: InboundRequest) -> Any:
        """Serve one request; log records the stdlib bridge held for it (``queue_log``) are sent before its answer,
        whatever it is."""
        try:
            try:
                chain = self.server.middleware_chain
                if chain:
                    call = RequestInfo(
                        request.method, request.params, request.id, self.principal, self.protocol_version
                    )
                    result = await run_middleware(chain, call, lambda: self._dispatch(request))
                else:
                    result = await self._dispatch(request)
            except McpError:
                raise
            except BaseException as exc:
                raise self._failure_error(request.method, exc) from None
            if self._held_logs:
                await self.release_logs(request)
            return result
        except McpError:
            if self._held_logs:
                await self.release_logs(request)
            raise
        finally:
            if self._held_logs:
                self._held_logs.pop(request.id, None)

    def _dispatch(self, request: InboundRequest) -> Awaitable[Any]:
        """What to await for ``request``'s result (its handler's coroutine: no coroutine of this method around it);
        a request refused before its handler runs raises here."""
        params = request.params
        if self.server.scopes.in_use and type(params) is dict and not scopes_admitted(params):  # scopes= of an item
            self.server.scopes.check(self.server.required_scopes(request.method, params), self.principal)
        if self.modern_only or (params and "_meta" in params and is_modern(params)):
            return self._handle_modern(request)
        method = request.method
        entry = self._admitted.get(method)
        if entry is None:  # before the handshake is over, or not one of the revision's requests: ask the lifecycle
            refusal = self.lifecycle.client_request_refusal(method)
            if refusal is not None:
                raise McpError(INVALID_REQUEST, f"Invalid Request: {refusal}")
            if self.lifecycle.past_initialize():  # what it lets the client send no longer changes: kept
                self._admitted = _PAST_INITIALIZE[self.version]
            entry = _DISPATCH[self.version].get(method)
        elif entry[1] is None or self.server.offers(entry[1]):  # admitted and offered: most requests
            return entry[0](self, request, None)
        return self._handler_for(method, entry)(self, request, None)

    def _failure_error(self, method: str, exc: BaseException) -> BaseException:
        """The JSON-RPC error a failed handler is answered with; ``exc`` itself when it must propagate."""
        if isinstance(exc, HandlerCancelled):
            return McpError(INTERNAL_ERROR, f"Internal error: {method} {exc}")
        if fate_of(exc) is not Fate.ANSWER:
            return exc
        what = f"the handler for {method}"
        error_id = report_failure(logger, what, exc)
        return McpError(
            INTERNAL_ERROR, "Internal error: " + failure_text(what, exc, error_id, expose=self.server.expose_errors)
        )

    async def release_logs(self, request: InboundRequest) -> None:
        """Send the log records queued for ``request`` by the stdlib bridge, in order."""
        held = self._held_logs.get(request.id)
        while held:
            await request.notify("notifications/message", held.pop(0))

    def _handler_for(self, method: str, entry: tuple[MethodHandler, str | None] | None) -> MethodHandler:
        """The handler of a request a client may send (``entry``: its revision's, None if it has none), when this
        server offers what it needs."""
        if entry is None:
            if method in self.server.custom.requests:
                return ServerConnection._custom_request
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
        handler, capability = entry
        if capability is not None and not self.server.offers(capability):
            raise McpError(METHOD_NOT_FOUND, f"Method not found: this server does not offer {capability}")
        return handler

    async def _handle_modern(self, request: InboundRequest) -> Any:
        """Serve one modern (2026-07-28) request: everything it needs is in its own ``_meta``."""
        modern = modern_meta(request.params)
        method = request.method
        handler = self._handler_for(method, _DISPATCH[modern.version].get(method))
        params = request.params or {}
        retried = "requestState" in params or "inputResponses" in params
        if method in INPUT_REQUIRED_METHODS:
            state = params.get("requestState")
            if isinstance(state, str):
                digest = params_digest(method, params, self.principal)
                modern.answers.update(self.server.request_states.verify(state, digest))
            responses = params.get("inputResponses")
            if responses is not None:
                if type(responses) is not dict or any(type(answer) is not dict for answer in responses.values()):
                    raise McpError(INVALID_PARAMS, "Invalid params: inputResponses must map keys to result objects")
                modern.answers.update(responses)
        try:
            result = await handler(self, request, modern)
        except BaseException as exc:
            needed = find_input_required(exc)
            if needed is None or method not in INPUT_REQUIRED_METHODS:
                # Concurrent asks may fail together: a protocol error (a missing capability, say) wins over
                # the input requests beside it, and an InputRequired must never leave the connection.
                refusal = None if isinstance(exc, McpError) else first_leaf(exc, McpError)
                if refusal is not None:
                    raise refusal from None
                if first_leaf(exc, InputRequired) is not None:
                    raise McpError(
                        INTERNAL_ERROR, f"Internal error: {method} cannot ask the client for input"
                    ) from None
                raise
            result = {
                "resultType": RESULT_INPUT_REQUIRED,
                "inputRequests": {item.key: item.request for item in needed},
                "requestState": self.server.request_states.sign(
                    params_digest(method, params, self.principal), modern.answers
                ),
            }
        return self.server.decorate_modern_result(method, result, cacheable=not retried)

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        chain = self.server.middleware_chain
        if chain:
            call = RequestInfo(method, params, None, self.principal, self.protocol_version)
            await run_middleware(chain, call, lambda: self._notification(method, params))
        else:
            await self._notification(method, params)

    async def _notification(self, method: str, params: dict[str, Any] | None) -> None:
        custom = self.server.custom.notifications.get(method)
        if custom is not None:
            await custom(params)
            return
        if method == "notifications/roots/list_changed":
            if self.server.roots_changed_handlers() and self._nursery is not None:
                self._nursery.start_soon(self._roots_changed)
            return
        if method == "notifications/initialized":
            if self.lifecycle.phase in (Phase.INITIALIZED, Phase.READY):
                self.lifecycle.handle(HandshakeEvent.INITIALIZED_NOTIFICATION)
                self._initialized.set()
            else:
                logger.warning("client sent notifications/initialized in phase %s; ignored", self.lifecycle.phase.value)

    async def _roots_changed(self) -> None:
        """Fetch the client's new roots once and hand them to every ``on_roots_changed`` handler (the server's and
        its mounted servers'); one handler's failure is its own."""
        handlers = self.server.roots_changed_handlers()
        if not handlers or self.client_capabilities.roots is None:
            return
        try:
            raw = await self.session.request("roots/list", None, timeout=60.0)
            roots = from_wire(raw, ListRootsResult).roots
        except BaseException as exc:
            if fate_of(exc) is Fate.PROPAGATE:
                raise
            report_failure(logger, "the client's roots/list answer", exc)
            return
        for handler in handlers:
            try:
                result = handler(list(roots))
                if inspect.isawaitable(result):
                    await result
            except BaseException as exc:
                if fate_of(exc) is Fate.PROPAGATE:
                    raise
                report_failure(logger, "an on_roots_changed handler", exc)

    async def _custom_request(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        """A method registered with ``Server.request_handler``, run like a built-in one (context, scope)."""
        handler = self.server.custom.requests[request.method]
        with self._context(request, modern) as context:
            return custom_result(request.method, await handler(request.params, context))

    # -- lifecycle and utilities ------------------------------------------------------------------

    async def _initialize(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        params = params_from_wire(request.params, InitializeRequestParams)
        requested = params.protocol_version
        version = requested if requested in LEGACY_VERSIONS else LATEST_LEGACY_VERSION
        self.lifecycle.handle(HandshakeEvent.INITIALIZE_REQUEST)
        self._negotiated(version)
        self.client_info = params.client_info
        self.client_capabilities = params.capabilities
        self.session.accept_batches = has(version, Feature.BATCHES)
        if self.control is not None:
            self.control.negotiated(version)
        await self._remember()
        result = self.server.initialize_result(version)
        self.lifecycle.handle(HandshakeEvent.INITIALIZE_RESULT)
        return result

    async def _ping(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        return {}

    async def _discover(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        return self.server.discover_result()

    async def _listen(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        """``subscriptions/listen``: acknowledge the honoured part of the filter, then stream until the client
        cancels it (or the connection ends)."""
        wanted = params_from_wire(request.params, SubscriptionsListenRequestParams).notifications
        server = self.server
        honoured = SubscriptionFilter(
            tools_list_changed=True if wanted.tools_list_changed and server.offers("tools") else None,
            prompts_list_changed=True if wanted.prompts_list_changed and server.offers("prompts") else None,
            resources_list_changed=True if wanted.resources_list_changed and server.offers("resources") else None,
            resource_subscriptions=list(wanted.resource_subscriptions)
            if wanted.resource_subscriptions and server.offers("resources")
            else None,
            task_ids=server.tasks.listen_filter(self, modern, wanted.task_ids),
        )
        with self.listeners.listening(request.id, honoured) as listener:
            await request.notify(
                "notifications/subscriptions/acknowledged", {"notifications": to_wire(honoured), "_meta": listener.meta}
            )
            self._tell(self.listeners.acknowledged(listener))
            await trio.sleep_forever()

    def task_changed(self, task_id: str, params: dict[str, Any]) -> None:
        """Queue ``notifications/tasks`` for the listen streams that follow ``task_id`` (tasks extension)."""
        self._tell(self.listeners.task_changed(task_id, params))

    async def _set_level(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        params = params_from_wire(request.params, SetLevelRequestParams)
        if params.level not in LEVELS:
            raise McpError(INVALID_PARAMS, f"Invalid params: unknown log level {params.level!r}")
        self.log_level = params.level
        await self._remember()
        return {}

    def log_params(
        self, level: str, data: Any, logger_name: str | None, threshold: str | None
    ) -> dict[str, Any] | None:
        """The ``notifications/message`` params for a log call, or None if filtered or rate-limited."""
        if threshold is None or level_rank(level) < level_rank(threshold):
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
            notice = {"level": "warning", "data": f"{dropped} log messages dropped (rate limit)"}
            self._enqueue("notifications/message", notice, None, needs_initialized=False)
        return params

    def queue_log(
        self, level: str, data: Any, logger_name: str | None, related: RequestId | None, threshold: str | None
    ) -> None:
        """Queue a log message from synchronous code; thread-safe (from a worker thread it hops onto the trio
        thread in order, ahead of the thread's own result). While ``related`` is being served the message is
        held for it and sent before its answer; after that it goes out on its own."""

        def enqueue() -> None:
            params = self.log_params(level, data, logger_name, threshold)
            if params is None:
                return
            held = self._held_logs.get(related) if related is not None else None
            if held is None and related is not None and self.session.serving(related):
                held = self._held_logs[related] = []
            if held is not None:
                held.append(params)
            else:
                self._enqueue("notifications/message", params, None, needs_initialized=False)

        try:
            here = trio.lowlevel.current_trio_token() is self._trio_token
        except RuntimeError:  # a worker thread
            here = False
        if here:
            enqueue()  # at once, so that the request's answer cannot overtake it
        else:
            self._trio_token.run_sync_soon(enqueue)

    def _context(
        self, request: InboundRequest, modern: ModernRequest | None, *, sees_context: bool = True
    ) -> _HandlerContext:
        """The handler's ``Context``, also visible to the stdlib logging bridge while the handler runs. Its own
        ``cancel_scope`` is entered only for a handler that ``sees_context`` (takes it as a parameter): no other
        can cancel it or give it a deadline, so for them it would be a scope that nothing ever cancels."""
        return _HandlerContext(Context(request, self, modern), sees_context)

    # -- tools ------------------------------------------------------------------------------------

    async def _list_tools(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        return self._page(request, modern, "tools/list", "tools")

    def _call_tool(self, request: InboundRequest, modern: ModernRequest | None) -> Awaitable[Any]:
        """What to await for a ``tools/call``'s result: the tool's run itself, or its task's start (no coroutine of
        this method around either); bad params and an unknown tool raise here."""
        params = request.params or {}
        name = params.get("name")
        arguments = params.get("arguments")
        if type(name) is not str or not (type(arguments) is dict or arguments is None):
            params_from_wire(params, CallToolRequestParams)  # raises the readable -32602
            raise McpError(INVALID_PARAMS, "Invalid params: tools/call needs a string name and object arguments")
        tool = self.server.tools.get(name)
        if tool is None:
            raise McpError(INVALID_PARAMS, f"Unknown tool: {name}")
        if tool.execution is not None or "task" in params:
            tasks = self.server.tasks
            asked = tasks.wants_task(self, request, modern, tool)
            if asked is not None:

                def work(live: LiveTask) -> Awaitable[dict[str, Any]]:
                    return self.run_tool(tool, arguments, TaskContext(request, self, modern, live, tasks))

                return tasks.start(self, request, modern, tool, asked, work)
        return self.run_tool(tool, arguments, Context(request, self, modern), sees_context=tool.sees_context)

    async def run_tool(
        self, tool: ToolDefinition, arguments: dict[str, Any] | None, context: Context, *, sees_context: bool = False
    ) -> dict[str, Any]:
        """Run a tool (inline, or as a task) and return its finished ``CallToolResult``: bad arguments and what the
        handler raises become an ``isError`` result, except a protocol error and the cancellation of a scope around
        it. ``sees_context``: as for ``_context``, whose scope cancelled or timed out is an ``isError`` result too."""
        if sees_context:
            try:
                with _HandlerContext(context, sees_context):
                    return await self.run_tool(tool, arguments, context)
            except HandlerCancelled as exc:
                return error_result(f"Tool {tool.name} {exc}")
        # What ``_HandlerContext`` does for a handler without a scope of its own, without an object per call.
        token = current_context.set(context)
        try:
            return tool.finish(await tool.call(arguments, context), context.protocol_version)
        except ArgumentError as exc:
            return argument_error_result(tool, exc)
        except McpError:
            raise
        except BaseException as exc:
            return self._tool_failure(tool.name, exc)
        finally:
            current_context.reset(token)

    def _tool_failure(self, name: str, exc: BaseException) -> dict[str, Any]:
        """The ``isError`` result for a tool that raised ``exc`` (or ``exc`` re-raised when it is no failure)."""
        exc = shaped(exc) or exc  # the exception mapping of trio_mcp.middleware.ErrorShaping, if in effect
        refusal = first_leaf(exc, McpError)
        if refusal is not None:  # a protocol error from concurrent work inside the tool stays one
            raise refusal from None
        if first_leaf(exc, InputRequired) is not None:
            raise exc  # 2026-07-28 input requests: _handle_modern turns them into the result
        deliberate = first_leaf(exc, ToolError)
        if deliberate is not None:
            return error_result(deliberate.message)
        if fate_of(exc) is not Fate.ANSWER:
            raise exc
        what = f"Tool {name}"
        error_id = report_failure(logger, what, exc)
        return error_result(failure_text(what, exc, error_id, expose=self.server.expose_errors))

    # -- resources --------------------------------------------------------------------------------

    async def _list_resources(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        return self._page(request, modern, "resources/list", "resources")

    async def _list_templates(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        return self._page(request, modern, "resources/templates/list", "resourceTemplates")

    async def _read_resource(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        params = params_from_wire(request.params, ReadResourceRequestParams)
        found = self.server.find_resource(params.uri)
        if found is None:
            raise self._not_found(params.uri, modern)
        definition, variables = found
        with self._context(request, modern, sees_context=bool(definition.schema.skipped)) as context:
            try:
                contents = await definition.read(params.uri, variables, context)
            except ArgumentError as exc:
                raise McpError(INVALID_PARAMS, f"Invalid params: {exc}", {"uri": params.uri}) from None
            except ResourceNotFound:
                raise self._not_found(params.uri, modern) from None
        return {"contents": contents}

    def _not_found(self, uri: str, modern: ModernRequest | None) -> McpError:
        code = INVALID_PARAMS if modern is not None else RESOURCE_NOT_FOUND
        return McpError(code, f"Resource not found: {uri}", {"uri": uri})

    async def _subscribe(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        params = params_from_wire(request.params, SubscribeRequestParams)
        if self.server.find_resource(params.uri) is None:
            raise self._not_found(params.uri, modern)
        if params.uri not in self.subscriptions and len(self.subscriptions) >= _SUBSCRIPTION_LIMIT:
            raise McpError(INVALID_REQUEST, f"Invalid Request: at most {_SUBSCRIPTION_LIMIT} subscriptions")
        self.subscriptions.add(params.uri)
        await self._remember()
        return {}

    async def _unsubscribe(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        params = params_from_wire(request.params, UnsubscribeRequestParams)
        self.subscriptions.discard(params.uri)
        await self._remember()
        return {}

    # -- prompts ----------------------------------------------------------------------------------

    async def _list_prompts(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        return self._page(request, modern, "prompts/list", "prompts")

    async def _get_prompt(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        params = params_from_wire(request.params, GetPromptRequestParams)
        prompt = self.server.prompts.get(params.name)
        if prompt is None:
            raise McpError(INVALID_PARAMS, f"Invalid params: unknown prompt {params.name!r}")
        with self._context(request, modern, sees_context=bool(prompt.schema.skipped)) as context:
            try:
                return await prompt.render(params.arguments, context, context.protocol_version)
            except ArgumentError as exc:
                raise McpError(INVALID_PARAMS, f"Invalid params for prompt {params.name}: {exc}") from None

    # -- completion -------------------------------------------------------------------------------

    async def _complete(self, request: InboundRequest, modern: ModernRequest | None) -> Any:
        params = params_from_wire(request.params, CompleteRequestParams)
        ref = params.ref
        if isinstance(ref, PromptReference):
            prompt = self.server.prompts.get(ref.name)
            if prompt is None:
                raise McpError(INVALID_PARAMS, f"Invalid params: unknown prompt {ref.name!r}")
            if params.argument.name not in prompt.argument_names:
                raise McpError(
                    INVALID_PARAMS, f"Invalid params: prompt {ref.name!r} has no argument {params.argument.name!r}"
                )
        elif ref.uri not in self.server.templates:
            raise McpError(INVALID_PARAMS, f"Invalid params: no resource template {ref.uri!r}")
        found = self.server.completer(ref)
        if found is None:  # only mounted servers complete, and none of them owns this reference
            return {"completion": to_wire(Completion(values=[]))}
        handler, ref = found
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

    def _page(self, request: InboundRequest, modern: ModernRequest | None, method: str, key: str) -> dict[str, Any]:
        params = params_from_wire(request.params, PaginatedRequestParams)
        items = self.server.listing(method, modern.version if modern is not None else self.version)
        items = self.server.scopes.visible(method, items, self.principal)
        items = self.server.apps.visible(method, items, modern.capabilities if modern else self.client_capabilities)
        page_size = self.server.page_size or max(len(items), 1)
        return page_result(key, items, params.cursor, page_size=page_size, scope=method, codec=self.server.cursors)

    # -- notifications outside requests -----------------------------------------------------------

    def list_changed(self, kind: str) -> None:
        """Queue ``notifications/<kind>/list_changed`` for a legacy session and for matching listen streams.

        A legacy session hears of changes once ``initialize`` was answered (coalesced: one pending per kind).
        """
        method = _LIST_CHANGED[kind]
        if self.lifecycle.phase in (Phase.INITIALIZED, Phase.READY):
            if self._outbox is None or not self._outbox.holds(method):
                self._enqueue(method, None, None, needs_initialized=True)
        self._tell(self.listeners.list_changed(kind, method))

    def resource_updated(self, uri: str) -> None:
        """Queue ``notifications/resources/updated`` for a subscribed session and matching listen streams."""
        if uri in self.subscriptions:
            self._enqueue("notifications/resources/updated", {"uri": uri}, None, needs_initialized=True)
        self._tell(self.listeners.resource_updated(uri))

    def _tell(self, told: Iterable[Told]) -> None:
        """Queue notifications on listen requests' streams (they need no handshake: 2026-07-28 has none)."""
        for method, params, listen_request in told:
            self._enqueue(method, params, listen_request, needs_initialized=False)

    def _enqueue(
        self, method: str, params: dict[str, Any] | None, related: RequestId | None, *, needs_initialized: bool
    ) -> None:
        if self._outbox is None:
            self._outbox = Outbox(self.session.notify, self._initialized)
        self._outbox.put((method, params, related, needs_initialized, notified_change.get()), self._nursery)


#: The handler of every request a client may send; which of them a revision has, and what the server must offer
#: to serve each, is in the method table (``_wire/methods.py``).
_HANDLERS: Final[dict[str, MethodHandler]] = {
    "initialize": ServerConnection._initialize,
    "server/discover": ServerConnection._discover,
    "ping": ServerConnection._ping,
    "logging/setLevel": ServerConnection._set_level,
    "tools/list": ServerConnection._list_tools,
    "tools/call": ServerConnection._call_tool,
    "resources/list": ServerConnection._list_resources,
    "resources/templates/list": ServerConnection._list_templates,
    "resources/read": ServerConnection._read_resource,
    "resources/subscribe": ServerConnection._subscribe,
    "resources/unsubscribe": ServerConnection._unsubscribe,
    "subscriptions/listen": ServerConnection._listen,
    "prompts/list": ServerConnection._list_prompts,
    "prompts/get": ServerConnection._get_prompt,
    "completion/complete": ServerConnection._complete,
    **TASK_HANDLERS,
}

#: Per revision, the handler of each request a client may send and the capability (its first key) the server
#: must offer to serve it: the method table joined with the handlers once, so a request costs one lookup.
_DISPATCH: Final[dict[str, dict[str, tuple[MethodHandler, str | None]]]] = {
    version: {
        method: (handler, spec.capability[0] if spec.capability is not None else None)
        for method, handler in _HANDLERS.items()
        if (spec := spec_for(method, version)) is not None and spec.sent_by("client", version)
    }
    for version in KNOWN_VERSIONS
}

#: Per revision, the entries of the requests a client past initialize may send (``ServerConnection._dispatch``).
_PAST_INITIALIZE: Final = {
    version: {m: e for m, e in methods.items() if Lifecycle(Phase.INITIALIZED).client_request_refusal(m) is None}
    for version, methods in _DISPATCH.items()
}
