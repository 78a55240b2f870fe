"""The per-request ``Context`` that handlers receive by annotating a parameter with it."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar

import trio

from .._core.jsonrpc import RequestId
from .._core.lifecycle import Lifecycle
from .._deadline import remaining
from .._middleware import RequestInfo, run_middleware
from .._schema import json_schema_for, validate
from .._session import InboundRequest
from .._wire.convert import WireFormatError, from_wire, to_wire
from .._wire.features import Feature, has
from .._wire.methods import METHODS, declared
from ..errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    McpError,
    RemoteProtocolError,
)
from ..transports._base import StreamControl
from ..types import (
    ClientCapabilities,
    CreateMessageResult,
    ElicitResult,
    Implementation,
    ListRootsResult,
    ModelPreferences,
    Root,
    SamplingMessage,
    TextContent,
    Tool,
    ToolChoice,
)
from ._logging import LEVELS
from ._modern import InputRequired, ModernRequest
from ._registry import ServerCore
from ._tasks import TaskConnection

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Context", "HandlerCancelled", "RequestConnection"]

T = TypeVar("T")

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class HandlerCancelled(Exception):
    """A handler's own ``cancel_scope`` was cancelled (its deadline passed, or it called ``cancel()``)."""

    def __init__(self, timed_out: bool) -> None:
        super().__init__("timed out (its own deadline passed)" if timed_out else "was cancelled by its own code")
        self.timed_out = timed_out


class RequestConnection(TaskConnection, Protocol):
    """What a ``Context`` and the ``tasks/*`` methods use of the ``ServerConnection`` serving the request."""

    @property
    def server(self) -> ServerCore: ...

    @property
    def control(self) -> StreamControl | None: ...

    @property
    def lifecycle(self) -> Lifecycle: ...

    @property
    def protocol_version(self) -> str | None: ...

    @property
    def client_info(self) -> Implementation | None: ...

    @property
    def client_capabilities(self) -> ClientCapabilities: ...

    @property
    def log_level(self) -> str: ...

    async def release_logs(self, request: InboundRequest) -> None: ...

    def log_params(
        self, level: str, data: Any, logger_name: str | None, threshold: str | None
    ) -> dict[str, Any] | None: ...

    def queue_log(
        self, level: str, data: Any, logger_name: str | None, related: RequestId | None, threshold: str | None
    ) -> None: ...


class Context:
    """What a handler can know and do about the request it is serving.

    Cancellation is visible, not hidden: ``cancel_scope`` is the handler's own scope (give it a deadline to
    bound the handler's run time: the request is then answered with an error saying it timed out), and
    ``cancel_requested`` is set when the peer sends ``notifications/cancelled``, which cancels the scope around
    it. ``sample()``, ``elicit()`` and ``list_roots()`` ask the client for something and are refused with
    ``McpError`` when the client did not declare the capability they need.
    """

    __slots__ = ("_request", "_connection", "_modern", "_asked", "_scope", "_server")
    #: Marks the parameters the server injects (``_calls.is_context``).
    _trio_mcp_context: ClassVar[bool] = True

    def __init__(
        self, request: InboundRequest, connection: RequestConnection, modern: ModernRequest | None = None
    ) -> None:
        self._request = request
        self._connection = connection
        self._modern = modern
        self._asked = 0
        #: Made when first asked for (most handlers never see their context, and no scope is then entered).
        self._scope: trio.CancelScope | None = None
        #: The server whose handler runs, when it is not the connection's: a mounted one.
        self._server: ServerCore | None = None

    def with_server(self, server: ServerCore) -> Self:
        """This context as a handler of ``server`` sees it (a mounted server's handler): the same request, the
        same kind of context (a task's stays a task's), that server and its lifespan state."""
        mounted = copy.copy(self)
        mounted._server = server
        return mounted

    # -- the request --------------------------------------------------------------------------------

    @property
    def request_id(self) -> str | int:
        """The JSON-RPC id of the request being served."""
        return self._request.id

    @property
    def method(self) -> str:
        """The method being served, e.g. ``tools/call``."""
        return self._request.method

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``_meta`` ({} when absent)."""
        return self._request.meta

    @property
    def cancel_scope(self) -> trio.CancelScope:
        """The handler's own scope: cancelling it, or its deadline passing, ends the handler and answers the
        request with an error saying so. (A peer's cancel or a server stop cancels the scopes around it.)"""
        if self._scope is None:
            self._scope = trio.CancelScope()
        return self._scope

    @property
    def time_remaining(self) -> float | None:
        """Seconds left to answer (0 once passed), None without a deadline: the least of the caller's deadline,
        when its request carried one (docs/deadlines.md), and the deadlines of the scopes around the handler.
        Requests the handler sends on (``sample()``, a client's call) carry what is left, less a margin."""
        return remaining()

    @property
    def cancel_requested(self) -> trio.Event:
        """Set when the peer sent ``notifications/cancelled`` for this request."""
        return self._request.cancel_requested

    # -- the server and the client ------------------------------------------------------------------

    @property
    def server(self) -> ServerCore:
        """The ``Server`` whose handler is running: the one the request arrived at, or a server mounted in it."""
        return self._server if self._server is not None else self._connection.server

    @property
    def principal(self) -> Any:
        """Who the transport authenticated (a ``trio_mcp.auth.Principal`` with OAuth, what
        ``HttpTransportOptions.authenticate`` returned with that hook), else None."""
        return self._connection.principal

    @property
    def scopes(self) -> frozenset[str]:
        """The scopes the caller's access token grants (empty without OAuth; see ``trio_mcp.auth``)."""
        return frozenset(getattr(self._connection.principal, "scopes", None) or ())

    @property
    def lifespan_state(self) -> Any:
        """Whatever the server's lifespan context manager yielded (None without a lifespan)."""
        return self.server.lifespan_state

    @property
    def protocol_version(self) -> str:
        """The protocol revision of this request (per request on 2026-07-28, per connection before)."""
        return self._modern.version if self._modern is not None else self._connection.version

    @property
    def stateless(self) -> bool:
        """True for a 2026-07-28 request: no session, and input from the client comes by retry."""
        return self._modern is not None

    @property
    def client_info(self) -> Implementation | None:
        """The client's name and version, as it declared them."""
        return self._modern.client_info if self._modern is not None else self._connection.client_info

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client declared it can do (on 2026-07-28: in this very request)."""
        return self._modern.capabilities if self._modern is not None else self._connection.client_capabilities

    async def start_task(self) -> bool:
        """Become a task now, for a tool registered with ``defer_task=True`` (input asked for before this
        call is gathered inline). Returns False, doing nothing, when the call is not running as a task."""
        return False

    async def close_sse_stream(self) -> bool:
        """End this request's SSE stream now while the handler goes on (SEP-1699 polling, Streamable HTTP
        sessions with an event store): the client resumes with ``Last-Event-ID`` after the ``retry`` delay and
        gets the rest there. Returns False (and does nothing) where that does not apply."""
        control = self._connection.control
        if control is None or self._modern is not None:
            return False
        return await control.close_request_stream(self._request.id)

    # -- progress and logging -----------------------------------------------------------------------

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Tell the client how far along this request is (a no-op unless it asked with a progressToken)."""
        await self._request.report_progress(
            progress, total, message if has(self.protocol_version, Feature.PROGRESS_MESSAGE) else None
        )

    async def log(self, level: LogLevel, data: Any, *, logger: str | None = None) -> None:
        """Send ``notifications/message`` to the client if ``level`` passes the level it set.

        Messages beyond the connection's rate limit are dropped and counted (a notice says how many).
        """
        if level not in LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LEVELS)}")
        await self._connection.release_logs(self._request)  # records the stdlib bridge queued go first
        params = self._connection.log_params(level, data, logger, self._log_threshold())
        if params is not None:
            await self._request.notify("notifications/message", params)

    async def debug(self, data: Any, *, logger: str | None = None) -> None:
        """``log("debug", ...)``."""
        await self.log("debug", data, logger=logger)

    async def info(self, data: Any, *, logger: str | None = None) -> None:
        """``log("info", ...)``."""
        await self.log("info", data, logger=logger)

    async def warning(self, data: Any, *, logger: str | None = None) -> None:
        """``log("warning", ...)``."""
        await self.log("warning", data, logger=logger)

    async def error(self, data: Any, *, logger: str | None = None) -> None:
        """``log("error", ...)``."""
        await self.log("error", data, logger=logger)

    def _log_soon(self, level: str, data: Any, logger: str | None) -> None:
        """Queue a log message from synchronous code (the stdlib bridge); safe from worker threads."""
        self._connection.queue_log(level, data, logger, self._request.id, self._log_threshold())

    def _log_threshold(self) -> str | None:
        """The least severe level to send; None sends nothing (a 2026-07-28 request without a logLevel)."""
        return self._modern.log_level if self._modern is not None else self._connection.log_level

    # -- requests to the client ---------------------------------------------------------------------

    async def list_roots(self, *, key: str | None = None, timeout: float | None = 60.0) -> list[Root]:
        """Ask the client for its roots (``roots/list``).

        ``key`` names the input request on 2026-07-28 (default: generated from the call order).
        """
        self._require_method("roots/list")
        raw = await self._ask("roots/list", None, timeout, key)
        return self._parse(raw, ListRootsResult, "roots/list").roots

    async def sample(
        self,
        messages: str | Sequence[SamplingMessage | Mapping[str, Any]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        model_preferences: ModelPreferences | None = None,
        include_context: Literal["none", "thisServer", "allServers"] | None = None,
        tools: Sequence[Tool] | None = None,
        tool_choice: ToolChoice | None = None,
        metadata: Mapping[str, Any] | None = None,
        key: str | None = None,
        timeout: float | None = 300.0,
    ) -> CreateMessageResult:
        """Ask the client's model for a completion (``sampling/createMessage``).

        ``messages`` may be one user prompt as a string. ``tools``/``tool_choice`` (2025-11-25) need the
        client's ``sampling.tools`` capability; the result may then contain ``tool_use`` content.
        """
        self._require_method("sampling/createMessage")
        sampling = self.client_capabilities.sampling
        if tools is not None or tool_choice is not None:
            self._require(
                has(self.protocol_version, Feature.SAMPLING_TOOLS)
                and sampling is not None
                and sampling.tools is not None,
                "sampling.tools",
                {"sampling": {"tools": {}}},
            )
        if isinstance(messages, str):
            wire_messages: list[Any] = [{"role": "user", "content": to_wire(TextContent(text=messages))}]
        else:
            wire_messages = [to_wire(m) if isinstance(m, SamplingMessage) else dict(m) for m in messages]
        params: dict[str, Any] = {"messages": wire_messages, "maxTokens": max_tokens}
        optional: dict[str, Any] = {
            "systemPrompt": system_prompt,
            "temperature": temperature,
            "stopSequences": list(stop_sequences) if stop_sequences is not None else None,
            "modelPreferences": to_wire(model_preferences) if model_preferences is not None else None,
            "includeContext": include_context,
            "tools": [to_wire(tool) for tool in tools] if tools is not None else None,
            "toolChoice": to_wire(tool_choice) if tool_choice is not None else None,
            "metadata": dict(metadata) if metadata is not None else None,
        }
        params.update({key: value for key, value in optional.items() if value is not None})
        raw = await self._ask("sampling/createMessage", params, timeout, key)
        return self._parse(raw, CreateMessageResult, "sampling/createMessage")

    async def elicit(
        self,
        message: str,
        schema: Mapping[str, Any] | type,
        *,
        key: str | None = None,
        timeout: float | None = 600.0,
    ) -> ElicitResult:
        """Ask the user for structured input through the client (``elicitation/create``, form mode).

        ``schema`` is the ``requestedSchema`` (a flat object of primitive properties, kept verbatim), or a
        TypedDict/attrs class to derive it from. Accepted content is validated against the schema; content
        that does not match is refused with ``McpError`` rather than handed to the handler.
        """
        self._require_method("elicitation/create")
        requested = dict(schema) if isinstance(schema, Mapping) else _flat_schema(schema)
        raw = await self._ask("elicitation/create", {"message": message, "requestedSchema": requested}, timeout, key)
        result = self._parse(raw, ElicitResult, "elicitation/create")
        if result.action == "accept" and result.content is not None:
            problems = validate(result.content, requested)
            if problems:
                raise McpError(
                    INVALID_PARAMS, "elicitation answer does not match the requested schema: " + "; ".join(problems)
                )
        return result

    async def elicit_url(
        self,
        message: str,
        url: str,
        *,
        elicitation_id: str | None = None,
        key: str | None = None,
        timeout: float | None = 600.0,
    ) -> ElicitResult:
        """Send the user to ``url`` (URL-mode elicitation, 2025-11-25 and later); needs ``elicitation.url``.

        ``elicitation_id`` is required on 2025-11-25 and does not exist on 2026-07-28.
        """
        elicitation = self.client_capabilities.elicitation
        self._require(
            has(self.protocol_version, Feature.URL_ELICITATION)
            and elicitation is not None
            and elicitation.url is not None,
            "elicitation.url",
            {"elicitation": {"url": {}}},
        )
        params: dict[str, Any] = {"mode": "url", "message": message, "url": url}
        if self._modern is None:
            if elicitation_id is None:
                raise ValueError("elicitation_id is required for URL-mode elicitation on 2025-11-25")
            params["elicitationId"] = elicitation_id
        raw = await self._ask("elicitation/create", params, timeout, key)
        return self._parse(raw, ElicitResult, "elicitation/create")

    async def request(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = 60.0) -> Any:
        """Send the client a request (an extension's method, say) and return its raw result.

        In a session it is a JSON-RPC request tied to this one; on 2026-07-28 it becomes an input request of
        an ``InputRequiredResult``, which only tools, prompts and resource reads may return.
        """
        return await self._ask(method, params, timeout, None)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send the client a notification that belongs with this request (on its stream, before its answer)."""
        await self._request.notify(method, params)

    def _require_method(self, method: str) -> None:
        """Refuse to ask for ``method`` unless the revision has it and the client declared its capability."""
        spec = METHODS[method]
        assert spec.capability is not None
        version = self.protocol_version
        self._require(
            spec.asked_in(version) and declared(self.client_capabilities, spec.capability),
            ".".join(spec.capability),
            {spec.capability[0]: {}},
        )

    def _require(self, allowed: bool, capability: str, required: dict[str, Any]) -> None:
        if allowed:
            return
        message = f"the client did not declare the {capability} capability (protocol {self.protocol_version})"
        if self._modern is not None:
            raise McpError(MISSING_REQUIRED_CLIENT_CAPABILITY, message, {"requiredCapabilities": required})
        raise McpError(METHOD_NOT_FOUND, message)

    async def _ask(self, method: str, params: dict[str, Any] | None, timeout: float | None, key: str | None) -> Any:
        """Get an answer from the client: a JSON-RPC request in the legacy era, a retry on 2026-07-28."""
        self._asked += 1
        if self._modern is not None:
            key = key or f"{method.replace('/', '-')}-{self._asked}"
            answer = self._modern.answers.get(key)
            if answer is None:
                embedded: dict[str, Any] = {"method": method, "params": params if params is not None else {}}
                raise InputRequired(key, embedded)
            return answer
        refusal = self._connection.lifecycle.server_request_refusal(method)
        if refusal is not None:
            raise McpError(INVALID_REQUEST, refusal)
        chain = self._connection.server.outbound_chain
        if not chain:
            return await self._request.request(method, params, timeout=timeout)
        version = self._connection.protocol_version
        call = RequestInfo(method, params, None, self.principal, version, notification=False)

        def note_id(request_id: RequestId) -> None:
            call.request_id = request_id

        return await run_middleware(
            chain, call, lambda: self._request.request(method, call.params, timeout=timeout, on_id=note_id)
        )

    def _parse(self, raw: Any, cls: type[T], method: str) -> T:
        try:
            return from_wire(raw, cls)
        except WireFormatError as exc:
            if self._modern is not None:  # an answer in inputResponses: the request itself is malformed
                raise McpError(INVALID_PARAMS, f"Invalid params: inputResponses for {method}: {exc}") from None
            raise RemoteProtocolError(f"client sent an invalid {method} result: {exc}") from None


def _flat_schema(cls: type) -> dict[str, Any]:
    schema = json_schema_for(cls)
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict) or "$defs" in schema:
        raise TypeError(f"{cls.__name__} cannot be an elicitation schema: it must be a flat object of primitives")
    for name, prop in properties.items():
        kind = prop.get("type")
        if kind not in ("string", "number", "integer", "boolean") and not (
            kind == "array" and isinstance(prop.get("items"), dict)
        ):
            raise TypeError(f"{cls.__name__}.{name}: elicitation supports only primitive properties")
    return schema
